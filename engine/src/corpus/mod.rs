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
use std::sync::{Arc, OnceLock};

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
    /// See [`Corpus::passage`]: each section's text, made on first use, in a table shared with
    /// the corpora cut from this one ([`Corpus::subset`]).
    texts: SectionTexts,
    /// Per document, the table entry of its first section.
    text_start: Vec<u32>,
}

/// Section texts made on first use, shared by a corpus and the corpora cut from it: a slot per
/// section of the corpus that made it, the slots themselves allocated on the first text asked
/// for (a corpus that reranks nothing pays nothing). Its `Debug` names only its length, so a
/// corpus prints the same whichever texts were made.
#[derive(Clone)]
struct SectionTexts {
    slots: Arc<OnceLock<Slots>>,
    len: usize,
}

/// One slot per section, each filled with its text once.
type Slots = Box<[OnceLock<Arc<str>>]>;

impl SectionTexts {
    fn new(len: usize) -> SectionTexts {
        SectionTexts {
            slots: Arc::default(),
            len,
        }
    }

    fn slot(&self, i: usize) -> &OnceLock<Arc<str>> {
        let slots = self
            .slots
            .get_or_init(|| (0..self.len).map(|_| OnceLock::new()).collect());
        &slots[i]
    }
}

impl std::fmt::Debug for SectionTexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SectionTexts({} sections)", self.len)
    }
}

/// Per document, the index of its first section among all the documents' sections, and the
/// number of sections.
fn section_starts(docs: &[Document]) -> (Vec<u32>, usize) {
    let mut starts = Vec::with_capacity(docs.len());
    let mut n = 0usize;
    for d in docs {
        starts.push(u32::try_from(n).expect("fewer than 2^32 sections"));
        n += d.sections.len();
    }
    (starts, n)
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
        let (text_start, sections) = section_starts(&docs);
        Ok(Corpus {
            root,
            docs,
            without_front_matter: Vec::new(),
            not_records: Vec::new(),
            by_id,
            id_rank: std::sync::OnceLock::new(),
            texts: SectionTexts::new(sections),
            text_start,
        })
    }

    /// The corpus of the documents `keep` selects (by index, in this corpus's order), sharing
    /// this corpus's section texts ([`Corpus::passage`]): a text made for one of them is made
    /// once for all. Ids stay unique and every document keeps its own texts, so the result is
    /// what [`Corpus::new`] gives for the same documents; empty is an error.
    pub fn subset(&self, keep: impl Fn(usize) -> bool) -> Result<Corpus> {
        let chosen: Vec<usize> = (0..self.docs.len()).filter(|&i| keep(i)).collect();
        let docs: Vec<Document> = chosen.iter().map(|&i| self.docs[i].clone()).collect();
        let mut sub = Corpus::new(self.root.clone(), docs)?;
        sub.texts = self.texts.clone();
        sub.text_start = chosen.iter().map(|&i| self.text_start[i]).collect();
        Ok(sub)
    }

    /// The text of section `section` of document `doc`
    /// ([`Document::section_text`]), made once and shared: every caller (each query that
    /// reranks the document, each corpus of a curve cut by [`Corpus::subset`]) gets the same
    /// allocation. A corpus's documents are not to be edited after it is built.
    pub fn passage(&self, doc: usize, section: usize) -> Arc<str> {
        let d = &self.docs[doc];
        assert!(section < d.sections.len(), "section {section} of {}", d.id);
        self.texts
            .slot(self.text_start[doc] as usize + section)
            .get_or_init(|| d.section_text(section).into())
            .clone()
    }

    /// Whether document `doc` of this corpus and document `other_doc` of `other` are one
    /// document: both corpora cut by [`Corpus::subset`] from one corpus (or one of them that
    /// corpus), and the two documents the same document of it. (A corpus's documents are not
    /// to be edited after it is built; see [`Corpus::passage`].)
    pub fn same_document(&self, doc: usize, other: &Corpus, other_doc: usize) -> bool {
        Arc::ptr_eq(&self.texts.slots, &other.texts.slots)
            && self.text_start[doc] == other.text_start[other_doc]
            && self.docs[doc].id == other.docs[other_doc].id
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

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, bodies: &[&str]) -> Document {
        let sections = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| Section {
                heading: format!("H{i}"),
                body: b.to_string(),
            })
            .collect();
        Document::plain(id.into(), format!("T {id}"), sections, PathBuf::from("x"))
    }

    #[test]
    fn a_subsets_passages_are_its_documents_texts_and_shared_with_the_whole() {
        let whole = Corpus::new(
            "r",
            vec![
                doc("a", &["a0", "a1"]),
                doc("b", &["b0"]),
                doc("c", &["c0", "c1", "c2"]),
            ],
        )
        .unwrap();
        let sub = whole.subset(|i| i != 1).unwrap();
        let fresh = Corpus::new("r", vec![whole.docs[0].clone(), whole.docs[2].clone()]).unwrap();
        assert_eq!(sub.docs, fresh.docs);
        assert_eq!(sub.index_of("c"), Some(1));
        assert_eq!(sub.index_of("b"), None);
        // Each passage is the text written out by hand (title, heading, body), whichever
        // corpus makes it first; the subset and the whole hand out one allocation.
        assert_eq!(&*sub.passage(1, 2), "T c\nH2\nc2");
        assert!(Arc::ptr_eq(&sub.passage(1, 2), &whole.passage(2, 2)));
        assert_eq!(&*whole.passage(0, 1), "T a\nH1\na1");
        assert!(Arc::ptr_eq(&whole.passage(0, 1), &sub.passage(0, 1)));
        // A corpus built anew has its own table: the same text, another allocation.
        assert_eq!(fresh.passage(1, 2), sub.passage(1, 2));
        assert!(!Arc::ptr_eq(&fresh.passage(1, 2), &sub.passage(1, 2)));
        assert!(whole.subset(|_| false).is_err());
    }
}
