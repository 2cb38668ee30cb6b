//! TREC run files: `qid Q0 docno rank score tag`, one retrieved document per line.
//!
//! [`RunReader::for_each`] streams a run, handing each line to a closure without allocating per
//! line (the text is borrowed from a 1 MiB read buffer); [`read_run`] loads a small run whole,
//! each query's documents in trec_eval's order ([`trec_order`]).
//!
//! trec_eval's reading rules, which both follow: fields are separated by any whitespace; the
//! rank column and the `Q0` column are ignored; the score decides the order; fields after the
//! tag are ignored (trec_eval's own test file `results.trunc` has such trailing text). On top of
//! trec_eval, ranklab rejects what trec_eval would silently misread: a line with fewer than six
//! fields, a score that is not a finite number (trec_eval's `atof` turns `abc` into 0), and a
//! document listed twice in one query (trec_eval rejects that too, without a line number).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::error::{Location, TrecError};
use super::lines::{plain_run_line, split_line, Fields, LineSplitter};

/// The layout of a run line, for error messages.
pub const RUN_LAYOUT: &str = "qid Q0 docno rank score tag";

/// One line of a run, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunLine<'a> {
    /// Query id.
    pub qid: &'a str,
    /// Document id.
    pub docno: &'a str,
    /// The score (finite).
    pub score: f64,
    /// The run tag (last field).
    pub tag: &'a str,
    /// 1-based line number.
    pub line: u64,
}

/// Streams the lines of a run: `for_each` hands every line to a closure, borrowing the text from
/// the read buffer.
pub struct RunReader<R> {
    lines: LineSplitter<R>,
    path: PathBuf,
}

impl RunReader<File> {
    /// Opens a run file.
    pub fn open(path: &Path) -> Result<Self, TrecError> {
        let file = ranklab_input::open(path)
            .map(|(file, _)| file)
            .map_err(|source| TrecError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(RunReader::new(file, path))
    }
}

impl<R: Read> RunReader<R> {
    /// Reads a run from `reader`; `path` names it in errors.
    pub fn new(reader: R, path: &Path) -> Self {
        RunReader {
            lines: LineSplitter::new(reader, path),
            path: path.to_path_buf(),
        }
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Calls `f` with every line, in file order, until `f` breaks or the run ends. A malformed
    /// line stops the reading with its error; so does an empty run (no content line). After a
    /// break the reader is spent.
    pub fn for_each<B>(
        &mut self,
        mut f: impl FnMut(RunLine<'_>) -> Result<ControlFlow<B>, TrecError>,
    ) -> Result<ControlFlow<B>, TrecError> {
        let path = &self.path;
        let mut any = false;
        let flow = self.lines.for_each_text(|text, line_no| {
            split_run_lines(text, line_no, path, &mut |l| {
                any = true;
                f(l)
            })
        })?;
        if !any {
            return Err(TrecError::Empty {
                path: path.clone(),
                kind: "run",
                hint: "a run has one line `qid Q0 docno rank score tag` per retrieved document",
            });
        }
        Ok(flow)
    }
}

/// A run line with fewer than six fields; four with an integer last one are qrels.
#[cold]
fn too_few_fields(f: &Fields<'_>, path: &Path) -> TrecError {
    let qrels = f.count == 4 && f.get(3).parse::<i32>().is_ok();
    TrecError::FieldCount {
        at: Location::new(path, f.line_no, 0),
        expected: 6,
        found: f.count,
        layout: RUN_LAYOUT,
        note: if qrels {
            " (this looks like qrels, `qid iter docno rel`, where a run is expected: give the qrels first, then the run)"
        } else {
            " (fields after the tag are ignored, as by trec_eval)"
        },
    }
}

/// Calls `f` with every run line of `text` (whole lines; the last may lack its newline) in
/// order, `line_no` counting them, until `f` breaks. Plain lines ([`plain_run_line`]) are split
/// by a fast path, every other line by [`split_line`], with the same fields.
#[inline]
pub(super) fn split_run_lines<'a, B>(
    text: &'a str,
    line_no: &mut u64,
    path: &Path,
    f: &mut impl FnMut(RunLine<'a>) -> Result<ControlFlow<B>, TrecError>,
) -> Result<ControlFlow<B>, TrecError> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        *line_no += 1;
        let line = if let Some((sep, end)) = plain_run_line(bytes, i) {
            let score_text = &text[sep[3] + 1..sep[4]];
            let Some(score) = parse_score(score_text) else {
                return Err(TrecError::BadScore {
                    at: Location::new(path, *line_no, sep[3] + 2 - i),
                    text: score_text.to_string(),
                });
            };
            let l = RunLine {
                qid: &text[i..sep[0]],
                docno: &text[sep[1] + 1..sep[2]],
                score,
                tag: &text[sep[4] + 1..end],
                line: *line_no,
            };
            i = end + 1;
            l
        } else {
            match split_line(text, &mut i, *line_no) {
                Some(fields) => run_line(&fields, path)?,
                None => continue,
            }
        };
        if let ControlFlow::Break(b) = f(line)? {
            return Ok(ControlFlow::Break(b));
        }
    }
    Ok(ControlFlow::Continue(()))
}

#[inline]
pub(super) fn run_line<'a>(f: &Fields<'a>, path: &Path) -> Result<RunLine<'a>, TrecError> {
    if f.count < 6 {
        return Err(too_few_fields(f, path));
    }
    let text = f.get(4);
    let Some(score) = parse_score(text) else {
        return Err(TrecError::BadScore {
            at: Location::new(path, f.line_no, f.column(4)),
            text: text.to_string(),
        });
    };
    Ok(RunLine {
        qid: f.get(0),
        docno: f.get(2),
        score,
        tag: f.get(5),
        line: f.line_no,
    })
}

/// Powers of ten exactly representable as `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Parses a score to the nearest `f64`, as C's `atof` (trec_eval) does for a decimal number;
/// `None` unless it is a finite number. Plain decimals (`-12.375`, up to 15 significant digits
/// and 22 fraction digits) take an exact fast path (Clinger: an exact integer divided by an
/// exact power of ten rounds correctly); anything else goes to the standard parser.
#[inline]
pub fn parse_score(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    // The integer digits, then the fraction's; wrapping arithmetic, as more than 15 digits
    // (which could overflow) are sent to the standard parser anyway.
    let n = digits.len();
    let mut mantissa: u64 = 0;
    let mut i = 0;
    while i < n && digits[i].is_ascii_digit() {
        mantissa = mantissa
            .wrapping_mul(10)
            .wrapping_add((digits[i] - b'0') as u64);
        i += 1;
    }
    let int_digits = i;
    let mut exp = 0;
    if i < n && digits[i] == b'.' {
        i += 1;
        let start = i;
        while i < n && digits[i].is_ascii_digit() {
            mantissa = mantissa
                .wrapping_mul(10)
                .wrapping_add((digits[i] - b'0') as u64);
            i += 1;
        }
        exp = i - start;
    }
    let num_digits = int_digits + exp;
    if i != n || num_digits == 0 || num_digits > 15 || exp >= POW10.len() {
        return slow_parse(text);
    }
    // Below 10^15, so exact as i64 and as f64 (one conversion instruction, not the u64 dance).
    let v = mantissa as i64 as f64 / POW10[exp];
    Some(if negative { -v } else { v })
}

#[cold]
fn slow_parse(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// trec_eval's ranking order: score descending, ties broken by document id descending (byte
/// order). `-0.0` and `0.0` tie, as with C's comparisons. Total for finite scores.
pub fn trec_order(a: (&str, f64), b: (&str, f64)) -> Ordering {
    if a.1 > b.1 {
        Ordering::Less
    } else if a.1 < b.1 {
        Ordering::Greater
    } else {
        b.0.as_bytes().cmp(a.0.as_bytes())
    }
}

/// One query of a run, its documents in trec_eval's order.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedQuery {
    /// Query id.
    pub qid: String,
    /// `(docno, score)`, rank 1 first.
    pub docs: Vec<(String, f64)>,
}

impl RankedQuery {
    /// The document ids in rank order, as [`crate::metrics::evaluate_ranking`] takes them.
    pub fn ranked(&self) -> Vec<&str> {
        self.docs.iter().map(|(d, _)| d.as_str()).collect()
    }
}

/// Reads a whole run into memory: queries by query id (byte order), each query's documents in
/// trec_eval's order. For small runs (reports, tests); `ranklab eval` streams instead.
pub fn read_run(path: &Path) -> Result<Vec<RankedQuery>, TrecError> {
    read_run_where(path, |_| true)
}

/// [`read_run`] of the queries `keep` accepts (by query id); the other lines are skipped
/// unchecked, as `ranklab eval` skips a query the qrels do not judge (a document twice in such
/// a query is no error there either).
pub fn read_run_where(
    path: &Path,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<RankedQuery>, TrecError> {
    let mut reader = RunReader::open(path)?;
    let mut queries: Vec<RankedQuery> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut seen: HashMap<(usize, String), u64> = HashMap::new();
    let _ = reader.for_each::<()>(|l| {
        if !keep(l.qid) {
            return Ok(ControlFlow::Continue(()));
        }
        let q = match index.get(l.qid) {
            Some(&q) => q,
            None => {
                index.insert(l.qid.to_string(), queries.len());
                queries.push(RankedQuery {
                    qid: l.qid.to_string(),
                    docs: Vec::new(),
                });
                queries.len() - 1
            }
        };
        if let Some(&first_line) = seen.get(&(q, l.docno.to_string())) {
            return Err(TrecError::DuplicateDoc {
                at: Location::new(path, l.line, 0),
                qid: l.qid.to_string(),
                docno: l.docno.to_string(),
                first_line,
            });
        }
        seen.insert((q, l.docno.to_string()), l.line);
        queries[q].docs.push((l.docno.to_string(), l.score));
        Ok(ControlFlow::Continue(()))
    })?;
    for q in &mut queries {
        q.docs.sort_by(|a, b| trec_order((&a.0, a.1), (&b.0, b.1)));
    }
    queries.sort_by(|a, b| a.qid.as_bytes().cmp(b.qid.as_bytes()));
    Ok(queries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &str) -> Result<Vec<(String, String, f64, u64)>, TrecError> {
        let mut r = RunReader::new(input.as_bytes(), Path::new("run.txt"));
        let mut out = Vec::new();
        let _ = r.for_each::<()>(|l| {
            out.push((l.qid.to_string(), l.docno.to_string(), l.score, l.line));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    #[test]
    fn reads_lines_ignoring_rank() {
        let got = lines("q1 Q0 d1 7 2.5 tag\nq1\tQ0\td2\t1\t-1e3\ttag trailing junk\r\n").unwrap();
        assert_eq!(
            got,
            vec![
                ("q1".into(), "d1".into(), 2.5, 1),
                ("q1".into(), "d2".into(), -1000.0, 2)
            ]
        );
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let cases = [
            ("q1 Q0 d1 1 2.5\n", "run.txt:1: expected 6 fields"),
            (
                "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 1\n",
                "run.txt:2: expected 6 fields",
            ),
            ("q1 Q0 d1 1 NaN t\n", "run.txt:1:12: score `NaN`"),
            ("q1 Q0 d1 1 inf t\n", "run.txt:1:12: score `inf`"),
            ("q1 Q0 d1 1 abc t\n", "run.txt:1:12: score `abc`"),
            ("", "run.txt: the run file is empty"),
            ("# only a comment\n\n", "run.txt: the run file is empty"),
        ];
        for (input, want) in cases {
            let err = lines(input).unwrap_err().to_string();
            assert!(err.starts_with(want), "{input:?}: {err}");
        }
    }

    #[test]
    fn parse_score_cases() {
        for (text, want) in [
            ("2.129133", Some(2.129133)),
            ("  ", None),
            ("-0", Some(-0.0)),
            ("+3.", Some(3.0)),
            (".5", Some(0.5)),
            ("1e3", Some(1000.0)),
            ("0.1234567890123456789", Some(0.123_456_789_012_345_68)),
            ("1.5.2", None),
            ("-", None),
            (".", None),
            ("nan", None),
            ("-inf", None),
            ("1e400", None),
            ("0x10", None),
        ] {
            assert_eq!(parse_score(text), want, "{text:?}");
        }
    }

    proptest::proptest! {
        /// The fast path gives the same f64 as the standard (correctly rounded) parser.
        #[test]
        fn parse_score_is_exact(int in 0u64..10_000_000, frac in "[0-9]{0,12}", neg: bool) {
            let text = format!("{}{int}.{frac}", if neg { "-" } else { "" });
            proptest::prop_assert_eq!(parse_score(&text), Some(text.parse::<f64>().unwrap()));
        }
    }

    #[test]
    fn trec_order_is_score_desc_then_docno_desc() {
        let mut docs = vec![
            ("a", 1.0),
            ("b", 2.0),
            ("c", 1.0),
            ("B", 1.0),
            ("z", -0.0),
            ("y", 0.0),
        ];
        docs.sort_by(|a, b| trec_order(*a, *b));
        assert_eq!(
            docs,
            vec![
                ("b", 2.0),
                ("c", 1.0),
                ("a", 1.0),
                ("B", 1.0),
                ("z", -0.0),
                ("y", 0.0)
            ]
        );
    }
}
