//! TREC qrels files: `qid iter docno rel`, one judgment per line (the `iter` column is ignored).
//!
//! As trec_eval: fields separated by any whitespace, exactly four per line, the judgment an
//! integer (negative means "in the pool but not judged": never relevant), a document judged
//! twice for one query is an error. Queries are kept in query-id byte order (trec_eval's order
//! for per-query output), each query's judgments in document-id byte order. BEIR's tsv qrels
//! (with a header line) are read by the corpus loaders, not here.

use std::collections::HashMap;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::error::{Location, TrecError};
use super::lines::LineSplitter;

/// The layout of a qrels line, for error messages.
pub const QRELS_LAYOUT: &str = "qid iter docno rel";

/// One query's judgments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrelsQuery {
    /// Query id.
    pub qid: String,
    /// Line where the query is first judged (for messages).
    pub line: u64,
    /// `(docno, judgment)` by document id (byte order), each document once.
    pub judgments: Vec<(String, i32)>,
}

impl QrelsQuery {
    /// The judgments as a map, as [`crate::metrics::evaluate_ranking`] takes them.
    pub fn to_map(&self) -> HashMap<String, i32> {
        self.judgments.iter().cloned().collect()
    }
}

/// A whole qrels file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qrels {
    path: PathBuf,
    queries: Vec<QrelsQuery>,
    index: HashMap<String, usize>,
}

impl Qrels {
    /// Reads a qrels file.
    pub fn read(path: &Path) -> Result<Self, TrecError> {
        let file = ranklab_input::open(path)
            .map(|(file, _)| file)
            .map_err(|source| TrecError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Self::from_reader(file, path)
    }

    /// Reads qrels from `reader`; `path` names it in errors.
    pub fn from_reader(reader: impl Read, path: &Path) -> Result<Self, TrecError> {
        let mut lines = LineSplitter::new(reader, path);
        let mut by_qid: HashMap<String, Vec<(String, i32, u64)>> = HashMap::new();
        let _ = lines.for_each::<()>(|f| {
            if f.count != 4 {
                // Six fields with `Q0` or a decimal score: a run given where qrels go.
                let run = f.count == 6 && (f.get(1) == "Q0" || f.get(4).contains('.'));
                return Err(TrecError::FieldCount {
                    at: Location::new(path, f.line_no, 0),
                    expected: 4,
                    found: f.count,
                    layout: QRELS_LAYOUT,
                    note: if run {
                        " (this looks like a run, `qid Q0 docno rank score tag`, where qrels are expected: give the qrels first, then the run)"
                    } else {
                        ""
                    },
                });
            }
            let rel: i32 = f.get(3).parse().map_err(|e: std::num::ParseIntError| {
                TrecError::BadRelevance {
                    at: Location::new(path, f.line_no, f.column(3)),
                    text: f.get(3).to_string(),
                    why: match e.kind() {
                        std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                            "is out of range (a relevance is between -2147483648 and 2147483647)"
                        }
                        _ => "is not an integer",
                    },
                }
            })?;
            let judgments = match by_qid.get_mut(f.get(0)) {
                Some(j) => j,
                None => by_qid.entry(f.get(0).to_string()).or_default(),
            };
            judgments.push((f.get(2).to_string(), rel, f.line_no));
            Ok(ControlFlow::Continue(()))
        })?;
        if by_qid.is_empty() {
            return Err(TrecError::Empty {
                path: path.to_path_buf(),
                kind: "qrels",
                hint: "qrels have one line `qid iter docno rel` per judgment",
            });
        }
        let mut duplicate: Option<TrecError> = None;
        let mut queries: Vec<QrelsQuery> = by_qid
            .into_iter()
            .map(|(qid, mut j)| {
                let line = j.iter().map(|x| x.2).min().unwrap_or(0);
                j.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()).then(a.2.cmp(&b.2)));
                for w in j.windows(2) {
                    if w[0].0 == w[1].0 {
                        let at = Location::new(path, w[1].2, 0);
                        let earlier = match &duplicate {
                            Some(TrecError::DuplicateJudgment { at: prev, .. }) => {
                                at.line < prev.line
                            }
                            _ => true,
                        };
                        if earlier {
                            duplicate = Some(TrecError::DuplicateJudgment {
                                at,
                                qid: qid.clone(),
                                docno: w[1].0.clone(),
                                first_line: w[0].2,
                            });
                        }
                    }
                }
                QrelsQuery {
                    qid,
                    line,
                    judgments: j.into_iter().map(|(d, r, _)| (d, r)).collect(),
                }
            })
            .collect();
        if let Some(e) = duplicate {
            return Err(e);
        }
        queries.sort_by(|a, b| a.qid.as_bytes().cmp(b.qid.as_bytes()));
        let index = queries
            .iter()
            .enumerate()
            .map(|(i, q)| (q.qid.clone(), i))
            .collect();
        Ok(Qrels {
            path: path.to_path_buf(),
            queries,
            index,
        })
    }

    /// The file the qrels came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every judged query, by query id (byte order).
    pub fn queries(&self) -> &[QrelsQuery] {
        &self.queries
    }

    /// One query's judgments.
    pub fn query(&self, qid: &str) -> Option<&QrelsQuery> {
        self.index.get(qid).map(|&i| &self.queries[i])
    }

    /// Position of a query in [`Qrels::queries`].
    pub fn position(&self, qid: &str) -> Option<usize> {
        self.index.get(qid).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(input: &str) -> Result<Qrels, TrecError> {
        Qrels::from_reader(input.as_bytes(), Path::new("qrels.txt"))
    }

    #[test]
    fn groups_and_sorts_like_trec_eval() {
        let q = parse("q2 0 b 1\nq10 0 z 2\r\nq2\t0\ta\t0\nq10 0 y -1\n").unwrap();
        let qids: Vec<&str> = q.queries().iter().map(|q| q.qid.as_str()).collect();
        assert_eq!(qids, ["q10", "q2"]);
        assert_eq!(
            q.query("q2").unwrap().judgments,
            vec![("a".to_string(), 0), ("b".to_string(), 1)]
        );
        assert_eq!(q.query("q2").unwrap().line, 1);
        assert_eq!(q.query("q10").unwrap().to_map()["y"], -1);
    }

    #[test]
    fn errors_name_file_and_line() {
        let cases = [
            ("q1 0 d1\n", "qrels.txt:1: expected 4 fields"),
            ("q1 0 d1 1\nq1 0 d2 1 x\n", "qrels.txt:2: expected 4 fields"),
            ("q1 0 d1 high\n", "qrels.txt:1:9: relevance `high`"),
            ("q1 0 d1 1.5\n", "qrels.txt:1:9: relevance `1.5`"),
            (
                "q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 0\n",
                "qrels.txt:3: document `d1` is judged twice",
            ),
            ("\n\n", "qrels.txt: the qrels file is empty"),
        ];
        for (input, want) in cases {
            let err = parse(input).unwrap_err().to_string();
            assert!(err.starts_with(want), "{input:?}: {err}");
        }
    }
}
