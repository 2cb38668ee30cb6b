//! The BEIR layout, so public test collections run without conversion:
//! `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`) and
//! `qrels/<split>.tsv` (a header line, then `query-id<TAB>corpus-id<TAB>score`).
//!
//! A BEIR document is one section whose text is the title followed by the text (as Anserini's
//! "flat" indexing does). Judgments that name an absent query or document are kept and counted:
//! as in trec_eval, a judgment for an absent document simply never matches.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Corpus, Document, Section};
use crate::{Error, Result};

#[derive(Deserialize)]
struct CorpusLine {
    #[serde(rename = "_id")]
    id: IdValue,
    #[serde(default)]
    title: String,
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct QueryLine {
    #[serde(rename = "_id")]
    id: IdValue,
    text: String,
}

/// BEIR ids are strings, but some dumps write numbers.
#[derive(Deserialize)]
#[serde(untagged)]
enum IdValue {
    S(String),
    N(serde_json::Number),
}

impl IdValue {
    fn into_string(self) -> String {
        match self {
            IdValue::S(s) => s,
            IdValue::N(n) => n.to_string(),
        }
    }
}

/// A BEIR query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Query id.
    pub id: String,
    /// Query text.
    pub text: String,
}

/// One judgment of a qrels file.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgment {
    /// Query id.
    pub query: String,
    /// Document id.
    pub doc: String,
    /// Graded relevance.
    pub grade: i32,
}

fn for_each_line(path: &Path, mut f: impl FnMut(usize, &str) -> Result<()>) -> Result<()> {
    let (file, _) = crate::input::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    let mut line_no = 0;
    loop {
        let n = crate::input::read_line(
            &mut reader,
            &mut buf,
            crate::input::MAX_LINE_BYTES,
            line_no as u64 + 1,
        )
        .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        let text = std::str::from_utf8(&buf)
            .map_err(|_| Error::parse(path, line_no, "invalid UTF-8; save the file as UTF-8"))?;
        let text = if line_no == 1 {
            text.trim_start_matches('\u{feff}')
        } else {
            text
        };
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            f(line_no, text)?;
        }
    }
}

fn json_error(path: &Path, line: usize, e: serde_json::Error, what: &str) -> Error {
    Error::Parse {
        path: path.to_path_buf(),
        line,
        column: e.column(),
        // serde_json ends its message with " at line 1 column C" (of the one line parsed).
        message: format!(
            "not a valid {what} line: {}",
            crate::yaml::plain(e.to_string().split(" at line ").next().unwrap_or_default())
        ),
    }
}

/// `id` if it is a valid BEIR id: non-empty, without white space, at most
/// [`crate::input::MAX_ID_BYTES`] bytes.
fn checked_id(path: &Path, line: usize, id: String) -> Result<String> {
    if id.len() > crate::input::MAX_ID_BYTES {
        return Err(Error::parse(
            path,
            line,
            crate::input::id_too_long("_id", &id),
        ));
    }
    if id.is_empty() || id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::parse(
            path,
            line,
            format!("invalid _id {id:?}: ids must be non-empty without white space or control characters"),
        ));
    }
    Ok(id)
}

/// Loads `corpus.jsonl`.
pub fn load_corpus(path: &Path) -> Result<Corpus> {
    let mut docs = Vec::new();
    for_each_line(path, |line, text| {
        let rec: CorpusLine = serde_json::from_str(text).map_err(|e| {
            json_error(
                path,
                line,
                e,
                "corpus (expects {\"_id\", \"title\", \"text\"})",
            )
        })?;
        let id = checked_id(path, line, rec.id.into_string())?;
        docs.push(Document::plain(
            id,
            rec.title.clone(),
            vec![Section {
                heading: rec.title,
                body: rec.text,
            }],
            PathBuf::from(format!("{}:{line}", path.display())),
        ));
        Ok(())
    })?;
    let root = path.parent().unwrap_or(path).to_path_buf();
    if docs.is_empty() {
        return Err(Error::EmptyCorpus {
            path: path.to_path_buf(),
        });
    }
    Corpus::new(root, docs)
}

/// Loads `queries.jsonl`.
pub fn load_queries(path: &Path) -> Result<Vec<Query>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for_each_line(path, |line, text| {
        let q: QueryLine = serde_json::from_str(text)
            .map_err(|e| json_error(path, line, e, "queries (expects {\"_id\", \"text\"})"))?;
        let id = checked_id(path, line, q.id.into_string())?;
        if let Some(first) = seen.insert(id.clone(), line) {
            return Err(Error::parse(path, line, format!("duplicate query _id {id:?} (first at line {first}); query ids must be unique, rename or drop one")));
        }
        out.push(Query { id, text: q.text });
        Ok(())
    })?;
    Ok(out)
}

/// Loads `qrels/<split>.tsv`: a header line, then `query-id corpus-id score`.
pub fn load_qrels(path: &Path) -> Result<Vec<Judgment>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for_each_line(path, |line, text| {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if line == 1
            && fields
                .first()
                .is_some_and(|f| f.eq_ignore_ascii_case("query-id"))
        {
            return Ok(());
        }
        if fields.len() != 3 {
            return Err(Error::parse(
                path,
                line,
                format!(
                    "expected 3 fields `query-id corpus-id score`, found {}",
                    fields.len()
                ),
            ));
        }
        let grade: i32 = fields[2].parse().map_err(|_| {
            Error::parse(
                path,
                line,
                format!("score {:?} is not an integer", fields[2]),
            )
        })?;
        if let Some(first) = seen.insert((fields[0].to_string(), fields[1].to_string()), line) {
            return Err(Error::parse(path, line, format!("document {:?} is judged twice for query {:?} (first at line {first}); keep one judgment per (query, document)", fields[1], fields[0])));
        }
        out.push(Judgment {
            query: fields[0].to_string(),
            doc: fields[1].to_string(),
            grade,
        });
        Ok(())
    })?;
    Ok(out)
}

/// A whole BEIR collection.
#[derive(Debug, Clone)]
pub struct Collection {
    /// The collection's name (its directory name).
    pub name: String,
    /// The documents.
    pub corpus: Corpus,
    /// The queries that have judgments in the split, in file order.
    pub queries: Vec<Query>,
    /// The split's judgments.
    pub qrels: Vec<Judgment>,
    /// Judgments naming a document absent from the corpus (kept; they never match).
    pub unknown_docs: Vec<String>,
    /// Judgments naming a query absent from queries.jsonl.
    pub unknown_queries: Vec<String>,
}

/// Loads `dir/corpus.jsonl`, `dir/queries.jsonl` and `dir/qrels/<split>.tsv`; keeps only the
/// queries judged in the split.
pub fn load_collection(dir: &Path, split: &str) -> Result<Collection> {
    let corpus = load_corpus(&dir.join("corpus.jsonl"))?;
    let all_queries = load_queries(&dir.join("queries.jsonl"))?;
    let qrels = load_qrels(&dir.join("qrels").join(format!("{split}.tsv")))?;
    let judged: std::collections::HashSet<&str> = qrels.iter().map(|j| j.query.as_str()).collect();
    let known: std::collections::HashSet<&str> =
        all_queries.iter().map(|q| q.id.as_str()).collect();
    let mut unknown_docs: Vec<String> = qrels
        .iter()
        .filter(|j| corpus.index_of(&j.doc).is_none())
        .map(|j| j.doc.clone())
        .collect();
    unknown_docs.dedup();
    let mut unknown_queries: Vec<String> = judged
        .iter()
        .filter(|q| !known.contains(*q))
        .map(|q| q.to_string())
        .collect();
    unknown_queries.sort();
    let queries = all_queries
        .into_iter()
        .filter(|q| judged.contains(q.id.as_str()))
        .collect();
    let name = dir
        .canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "beir".into());
    Ok(Collection {
        name,
        corpus,
        queries,
        qrels,
        unknown_docs,
        unknown_queries,
    })
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every field of a BEIR corpus and queries line (from the types).
    #[test]
    fn formats_md_names_every_beir_field() {
        let reference = include_str!("../../../docs/formats.md");
        for r in [
            crate::yaml::shape::documented::<super::CorpusLine>(reference, "BEIR collections", &[]),
            crate::yaml::shape::documented::<super::QueryLine>(reference, "BEIR collections", &[]),
        ] {
            r.unwrap();
        }
    }
}
