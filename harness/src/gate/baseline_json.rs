//! `reports/baseline.json` written with serde_json: the baseline's serializable shape and the
//! layout that keeps its diff reviewable.
//!
//! Every string goes through serde_json (so a configuration fingerprint, a suite name or a
//! reason is escaped like any JSON string), every number with exactly four decimals (a
//! [`Fixed`] written as a raw JSON number). The layout ([`Layout`], a serde_json `Formatter`)
//! puts one item per line where a reviewer reads a list: the top level, each of `suites`,
//! `rows`, `expectations` and `inputs`, and inside `inputs` each suite's block and each of its
//! maps; everything deeper is one line, `{ "key": value, ... }`. Field order is the structs'
//! order; maps are in key order (`BTreeMap`).

use std::collections::BTreeMap;
use std::io;

use serde::{Serialize, Serializer};

use super::baseline::{Accepted, Baseline, Expectation, Fixed, Inputs, Kind, Row, SuiteEntry};

/// A [`Fixed`] as a JSON number with four decimals (`0.9700`, not `0.97`).
struct Decimal4(Fixed);

impl Serialize for Decimal4 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw = serde_json::value::RawValue::from_string(self.0.show())
            .map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

/// The whole file.
#[derive(Serialize)]
struct File<'a> {
    about: &'a str,
    suites: BTreeMap<&'a str, SuiteOut<'a>>,
    rows: Vec<RowOut<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    expectations: Vec<ExpectationOut<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    inputs: BTreeMap<&'a str, InputsOut<'a>>,
}

#[derive(Serialize)]
struct SuiteOut<'a> {
    kind: Kind,
    corpus_sha256: &'a str,
    suite_sha256: &'a str,
    #[serde(skip_serializing_if = "is_false")]
    llm_grades: bool,
}

#[derive(Serialize)]
struct RowOut<'a> {
    suite: &'a str,
    configuration: &'a str,
    metric: &'a str,
    value: Decimal4,
    tolerance: Decimal4,
    #[serde(skip_serializing_if = "Option::is_none")]
    spread: Option<Decimal4>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rise: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    accepted: Option<RowAcceptedOut<'a>>,
}

#[derive(Serialize)]
struct RowAcceptedOut<'a> {
    from: Decimal4,
    to: Decimal4,
    #[serde(flatten)]
    who: WhoOut<'a>,
}

#[derive(Serialize)]
struct ExpectationOut<'a> {
    suite: &'a str,
    configuration: &'a str,
    task: &'a str,
    document: &'a str,
    within: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    accepted: Option<ExpectationAcceptedOut<'a>>,
}

#[derive(Serialize)]
struct ExpectationAcceptedOut<'a> {
    /// `null`: the document was not in the run when the change was accepted.
    rank: Option<usize>,
    #[serde(flatten)]
    who: WhoOut<'a>,
}

#[derive(Serialize)]
struct WhoOut<'a> {
    by: &'a str,
    at: &'a str,
    why: &'a str,
}

#[derive(Serialize)]
struct InputsOut<'a> {
    records: &'a BTreeMap<String, String>,
    tasks: &'a BTreeMap<String, String>,
    judgments: &'a BTreeMap<String, BTreeMap<String, i32>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    recordings: &'a BTreeMap<String, String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn who(a: &Accepted) -> WhoOut<'_> {
    WhoOut {
        by: &a.by,
        at: &a.at,
        why: &a.why,
    }
}

fn suite_out(e: &SuiteEntry) -> SuiteOut<'_> {
    SuiteOut {
        kind: e.kind,
        corpus_sha256: &e.corpus_sha256,
        suite_sha256: &e.suite_sha256,
        llm_grades: e.llm_grades,
    }
}

fn row_out(r: &Row) -> RowOut<'_> {
    RowOut {
        suite: &r.suite,
        configuration: &r.configuration,
        metric: &r.metric,
        value: Decimal4(r.value),
        tolerance: Decimal4(r.tolerance),
        spread: r.spread.map(Decimal4),
        rise: r.rise_fails.then_some("fails"),
        config: r.config.as_deref(),
        accepted: r.accepted.as_ref().map(|a| RowAcceptedOut {
            from: Decimal4(a.from),
            to: Decimal4(a.to),
            who: who(&a.who),
        }),
    }
}

fn expectation_out(e: &Expectation) -> ExpectationOut<'_> {
    ExpectationOut {
        suite: &e.suite,
        configuration: &e.configuration,
        task: &e.task,
        document: &e.document,
        within: e.within,
        accepted: e.accepted.as_ref().map(|a| ExpectationAcceptedOut {
            rank: a.rank,
            who: who(&a.who),
        }),
    }
}

fn inputs_out(i: &Inputs) -> InputsOut<'_> {
    InputsOut {
        records: &i.records,
        tasks: &i.tasks,
        judgments: &i.judgments,
        recordings: &i.recordings,
    }
}

/// The text of `b`'s file (`about`: the explanation at its top), ending with a line break.
pub(super) fn render(b: &Baseline, about: &str) -> String {
    let file = File {
        about,
        suites: b
            .suites
            .iter()
            .map(|(n, e)| (n.as_str(), suite_out(e)))
            .collect(),
        rows: b.rows.values().map(row_out).collect(),
        expectations: b.expectations.iter().map(expectation_out).collect(),
        inputs: b
            .inputs
            .iter()
            .map(|(n, i)| (n.as_str(), inputs_out(i)))
            .collect(),
    };
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Layout::default());
    file.serialize(&mut ser)
        .expect("a baseline serializes: strings, integers and four-decimal numbers");
    let mut s = String::from_utf8(out).expect("serde_json writes UTF-8");
    s.push('\n');
    s
}

/// One open object or array: written over several lines, and whether it has a member yet.
struct Frame {
    multiline: bool,
    any: bool,
}

/// The baseline's layout (see the module doc): a container is written one member per line at
/// depth 0 and 1, and at depth 2 and 3 inside `inputs`; deeper ones inline, `{ "a": 1, "b": 2 }`.
#[derive(Default)]
struct Layout {
    open: Vec<Frame>,
    /// The top-level key being written or last written (`inputs` decides depths 2 and 3).
    top_key: String,
    in_top_key: bool,
}

impl Layout {
    fn begin<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        let depth = self.open.len();
        let multiline = depth < 2 || (self.top_key == "inputs" && depth < 4);
        self.open.push(Frame {
            multiline,
            any: false,
        });
        w.write_all(bracket)?;
        if !multiline {
            w.write_all(b" ")?;
        }
        Ok(())
    }

    fn end<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        let f = self.open.pop().expect("a container is open");
        if !f.multiline {
            w.write_all(b" ")?;
        } else if f.any {
            w.write_all(b"\n")?;
            w.write_all(&b"  ".repeat(self.open.len()))?;
        }
        w.write_all(bracket)
    }

    fn member<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        let depth = self.open.len();
        let f = self.open.last_mut().expect("a container is open");
        f.any = true;
        if !first {
            w.write_all(b",")?;
        }
        if f.multiline {
            w.write_all(b"\n")?;
            w.write_all(&b"  ".repeat(depth))
        } else if first {
            Ok(())
        } else {
            w.write_all(b" ")
        }
    }
}

impl serde_json::ser::Formatter for Layout {
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"{")
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"}")
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"[")
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"]")
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if self.open.len() == 1 {
            self.in_top_key = true;
            self.top_key.clear();
        }
        self.member(w, first)
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.in_top_key = false;
        Ok(())
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.member(w, first)
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if self.in_top_key {
            self.top_key.push_str(fragment);
        }
        w.write_all(fragment.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::super::baseline::{Baseline, Row};
    use std::path::Path;

    /// The committed `reports/baseline.json` was written by the hand renderer this module
    /// replaced (an independent implementation of the same layout); read and written again, it
    /// keeps every byte: suites, rows with fingerprints, expectations, and the `inputs` blocks
    /// (maps one item per line, a task's judgments on one, recordings).
    #[test]
    fn the_committed_baseline_renders_to_its_own_bytes() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/baseline.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let b = Baseline::parse(&path, &text).unwrap();
        assert_eq!(b.render(), text);
    }

    /// A configuration fingerprint is escaped like any JSON string: one holding a quote and a
    /// backslash reads back, through serde_json's own parser, as the same string.
    #[test]
    fn a_fingerprint_with_a_quote_and_a_backslash_is_escaped() {
        let mut b = Baseline::default();
        let mut row = Row::new(
            ("s".into(), "c".into(), "MRR".into()),
            super::Fixed(5000),
            false,
        );
        row.config = Some("a\"b\\c".into());
        b.rows.insert(row.key(), row);
        let text = b.render();
        assert!(text.contains(r#""config": "a\"b\\c""#), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["rows"][0]["config"], "a\"b\\c", "{text}");
        assert_eq!(v["rows"][0]["value"].to_string(), "0.5", "{text}");
    }
}
