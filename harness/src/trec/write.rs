//! Writing TREC runs and qrels that trec_eval (and [`super::run`]) read back exactly.

use std::io::{self, Write};

/// One run line `qid Q0 docno rank score tag`, ending with `\n`.
///
/// The score is printed with Rust's shortest round-trip form for `f32` (`{}`), never in exponent
/// notation, so distinct `f32` scores stay distinct and keep their order when read back as `f64`
/// by ranklab or trec_eval. Ids and tag must be non-empty and free of whitespace, the score
/// finite (checked in debug builds).
pub fn format_run_line(qid: &str, docno: &str, rank: usize, score: f32, tag: &str) -> String {
    let mut s = String::new();
    push_run_line(&mut s, qid, docno, rank, score, tag);
    s
}

/// [`format_run_line`] appended to `out` (no allocation per line: a run file of 300,000 lines
/// is built in one buffer).
pub fn push_run_line(out: &mut String, qid: &str, docno: &str, rank: usize, score: f32, tag: &str) {
    use std::fmt::Write as _;
    debug_assert!(
        score.is_finite(),
        "non-finite score {score} for {qid}/{docno}"
    );
    debug_assert!(
        [qid, docno, tag]
            .iter()
            .all(|s| !s.is_empty() && !s.contains(char::is_whitespace)),
        "TREC ids may not be empty or contain whitespace: {qid:?} {docno:?} {tag:?}"
    );
    // Writing into a String cannot fail.
    let _ = writeln!(out, "{qid} Q0 {docno} {rank} {score} {tag}");
}

/// Writes judgments as qrels lines `qid 0 docno rel`, in the order given.
///
/// An empty id or one containing whitespace cannot be read back: it is rejected with
/// [`io::ErrorKind::InvalidInput`] before anything is written.
pub fn write_qrels(w: &mut impl Write, qrels: &[(String, String, i32)]) -> io::Result<()> {
    if let Some((q, d, _)) = qrels.iter().find(|(q, d, _)| !valid_id(q) || !valid_id(d)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "qrels ids must be non-empty and free of whitespace: query {q:?}, document {d:?}"
            ),
        ));
    }
    for (qid, docno, rel) in qrels {
        writeln!(w, "{qid} 0 {docno} {rel}")?;
    }
    Ok(())
}

fn valid_id(s: &str) -> bool {
    !s.is_empty() && !s.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use proptest::prelude::*;

    use super::super::qrels::Qrels;
    use super::super::run::RunReader;
    use super::*;

    #[test]
    fn formats_a_run_line() {
        assert_eq!(
            format_run_line("q1", "d7", 3, 12.5, "bm25"),
            "q1 Q0 d7 3 12.5 bm25\n"
        );
        assert_eq!(
            format_run_line("q1", "d7", 1, 1e-7, "t"),
            "q1 Q0 d7 1 0.0000001 t\n"
        );
        assert_eq!(
            format_run_line("q1", "d7", 1, -3.0, "t"),
            "q1 Q0 d7 1 -3 t\n"
        );
    }

    #[test]
    fn qrels_round_trip_and_reject_bad_ids() {
        let judged = vec![
            ("q2".to_string(), "b".to_string(), 2),
            ("q1".to_string(), "a".to_string(), 0),
        ];
        let mut out = Vec::new();
        write_qrels(&mut out, &judged).unwrap();
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "q2 0 b 2\nq1 0 a 0\n"
        );
        let back = Qrels::from_reader(&out[..], Path::new("q")).unwrap();
        assert_eq!(
            back.query("q2").unwrap().judgments,
            vec![("b".to_string(), 2)]
        );

        let mut out = Vec::new();
        let bad = vec![("q 1".to_string(), "a".to_string(), 1)];
        assert_eq!(
            write_qrels(&mut out, &bad).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert!(out.is_empty());
    }

    proptest! {
        /// Distinct f32 scores stay distinct and ordered after a write/read round trip.
        #[test]
        fn f32_scores_round_trip_in_order(a in proptest::num::f32::NORMAL | proptest::num::f32::SUBNORMAL | proptest::num::f32::ZERO,
                                          b in proptest::num::f32::NORMAL | proptest::num::f32::SUBNORMAL | proptest::num::f32::ZERO) {
            let text = format_run_line("q", "a", 1, a, "t") + &format_run_line("q", "b", 2, b, "t");
            let mut scores = Vec::new();
            let _ = RunReader::new(text.as_bytes(), Path::new("r"))
                .for_each::<()>(|l| {
                    scores.push(l.score);
                    Ok(std::ops::ControlFlow::Continue(()))
                })
                .unwrap();
            let (ra, rb) = (scores[0], scores[1]);
            prop_assert_eq!(ra as f32, a);
            prop_assert_eq!(rb as f32, b);
            prop_assert_eq!(a.partial_cmp(&b), ra.partial_cmp(&rb));
        }
    }
}
