//! Corpora: the documents a suite searches.
//!
//! Two layouts load into one [`Corpus`]:
//! - a directory of Markdown records with YAML front matter ([`markdown`]), and
//! - the BEIR layout (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`, [`beir`]).
//!
//! A document is split into [`Section`]s; a section is the unit that is indexed and embedded,
//! and a document ranks by its best section. Ids are unique within a corpus (a duplicate is an
//! error naming both files); documents keep a stable order (file name order for Markdown, file
//! order for BEIR), so everything built from a corpus is reproducible.

pub mod beir;
pub mod markdown;
mod record;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use record::{Document, History, Lifecycle, LifecycleEntry, Section};

use crate::{Error, Result};

/// A loaded collection of documents.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Where it was loaded from.
    pub root: PathBuf,
    /// The documents, in a stable order.
    pub docs: Vec<Document>,
    /// Ids of the Markdown records that had no front matter (every field at its default).
    pub without_front_matter: Vec<String>,
    /// Entries of a Markdown corpus folder that are not records (not `*.md`: `README.txt`,
    /// `.gitkeep`, a subfolder), sorted; they are not read, and are named once on stderr.
    pub not_records: Vec<PathBuf>,
    by_id: HashMap<String, usize>,
    /// See [`Corpus::id_rank`]; computed on first use.
    id_rank: std::sync::OnceLock<Vec<u32>>,
}

/// Per item, its position among `ids` in byte order (ids unique).
pub(crate) fn id_ranks<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<u32> {
    let ids: Vec<&str> = ids.collect();
    let mut by_id: Vec<usize> = (0..ids.len()).collect();
    by_id.sort_unstable_by(|&a, &b| ids[a].as_bytes().cmp(ids[b].as_bytes()));
    let mut rank = vec![0u32; ids.len()];
    for (r, &d) in by_id.iter().enumerate() {
        rank[d] = r as u32;
    }
    rank
}

impl Corpus {
    /// Builds a corpus from documents, checking ids are unique and the corpus is not empty.
    pub fn new(root: impl Into<PathBuf>, docs: Vec<Document>) -> Result<Self> {
        let root = root.into();
        if docs.is_empty() {
            return Err(Error::EmptyCorpus { path: root });
        }
        let mut by_id = HashMap::with_capacity(docs.len());
        for (i, d) in docs.iter().enumerate() {
            if let Some(&j) = by_id.get(&d.id) {
                let first: &Document = &docs[j];
                return Err(Error::DuplicateId {
                    id: d.id.clone(),
                    first: first.source.clone(),
                    second: d.source.clone(),
                });
            }
            by_id.insert(d.id.clone(), i);
        }
        Ok(Corpus {
            root,
            docs,
            without_front_matter: Vec::new(),
            not_records: Vec::new(),
            by_id,
            id_rank: std::sync::OnceLock::new(),
        })
    }

    /// Loads a Markdown directory, or a BEIR directory when it holds `corpus.jsonl`.
    pub fn load(path: &Path) -> Result<Self> {
        if path.join("corpus.jsonl").exists() {
            beir::load_corpus(&path.join("corpus.jsonl"))
        } else if path.is_dir() {
            markdown::load_dir(path)
        } else {
            let what = if path.exists() {
                "not a directory"
            } else {
                "no such directory"
            };
            let tried = match std::path::absolute(path) {
                Ok(abs) if abs != path => format!(" (tried {})", abs.display()),
                _ => String::new(),
            };
            Err(Error::io(
                path,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no corpus here, {what}{tried}: expected a directory of .md records or a BEIR directory with corpus.jsonl"),
                ),
            ))
        }
    }

    /// The index of the document with this id.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// The document with this id.
    pub fn get(&self, id: &str) -> Option<&Document> {
        self.index_of(id).map(|i| &self.docs[i])
    }

    /// The id of document `i`.
    pub fn id(&self, i: usize) -> &str {
        &self.docs[i].id
    }

    /// Per document ordinal, its position among the corpus's ids in byte order: comparing two
    /// documents' ranks is comparing their ids (ids are unique), so the total order's id
    /// tie-break ([`crate::ranking::cmp_hits`]) becomes an integer comparison. Computed once.
    pub fn id_rank(&self) -> &[u32] {
        self.id_rank
            .get_or_init(|| id_ranks(self.docs.iter().map(|d| d.id.as_str())))
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Always false: an empty corpus cannot be built.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// For each document, how many other documents cite it.
    pub fn citation_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.docs.len()];
        for d in &self.docs {
            for c in &d.cites {
                if let Some(i) = self.index_of(c) {
                    if self.docs[i].id != d.id {
                        counts[i] += 1;
                    }
                }
            }
        }
        counts
    }

    /// A sha256 over every document's id, metadata and text: changes when the corpus does.
    pub fn content_hash(&self) -> String {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        for d in &self.docs {
            h.update(d.fingerprint().as_bytes());
            h.update([0u8]);
        }
        crate::models::hex(&h.finalize())
    }
}
