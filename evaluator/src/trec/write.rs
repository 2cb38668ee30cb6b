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
/// is built in one buffer). The pieces are pushed directly, the rank with `itoa` and the score
/// with [`push_f32`], instead of going through `format_args!`.
pub fn push_run_line(out: &mut String, qid: &str, docno: &str, rank: usize, score: f32, tag: &str) {
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
    out.push_str(qid);
    out.push_str(" Q0 ");
    out.push_str(docno);
    out.push(' ');
    out.push_str(itoa::Buffer::new().format(rank));
    out.push(' ');
    push_f32(out, score);
    out.push(' ');
    out.push_str(tag);
    out.push('\n');
}

/// Appends `x` exactly as `format!("{x}")` writes it (the shortest digits that read back as
/// `x`, never in exponent notation; `1` not `1.0`; `-0` for negative zero), from the `ryu`
/// crate's shortest digits, several times faster than `Display` (exact ties, where the two
/// pick different digits, are written by `Display`). Non-finite values go through
/// `Display`. The unit tests compare it with `Display` on a million random bit patterns and the
/// edge cases.
pub fn push_f32(out: &mut String, x: f32) {
    if !x.is_finite() {
        use std::fmt::Write as _;
        let _ = write!(out, "{x}");
        return;
    }
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(x);
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    // s is `d.ddd`, `ddd.d`, `0.000ddd` or `d.ddde±N` / `de±N`.
    let (mantissa, exp) = match s.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().expect("ryu writes an integer exponent")),
        None => (s, 0),
    };
    let point = mantissa.find('.').unwrap_or(mantissa.len()) as i32 + exp;
    let mut digits = [0u8; 24];
    let mut n = 0;
    for &b in mantissa.as_bytes() {
        if b != b'.' {
            digits[n] = b;
            n += 1;
        }
    }
    // Significant digits only: leading zeros move the point, trailing zeros are dropped.
    let lead = digits[..n].iter().take_while(|&&d| d == b'0').count();
    let mut point = point - lead as i32;
    let digits = &digits[lead..n];
    let digits = &digits[..digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1)];
    // On an exact tie between two shortest candidates (x = (D ± 0.5)·10^k, D the digits) ryu
    // takes the even one and `Display` the one away from zero: leave those to `Display`. A tie
    // needs -22 <= k <= 22 (else 5^|k| cannot divide x's binary mantissa), where 10^|k| and
    // every quantity below are exact f64s, so a real tie is always caught (a false alarm only
    // costs a `Display`).
    let k = point - digits.len() as i32;
    if !digits.is_empty() && (-22..=22).contains(&k) {
        let d = digits
            .iter()
            .fold(0u64, |acc, &c| acc * 10 + u64::from(c - b'0')) as f64;
        let ax = f64::from(x.abs());
        let p = 10f64.powi(k.abs());
        let tie = if k < 0 {
            let scaled = ax * p;
            scaled == d + 0.5 || scaled == d - 0.5
        } else {
            (d + 0.5) * p == ax || (d - 0.5) * p == ax
        };
        if tie {
            use std::fmt::Write as _;
            let _ = write!(out, "{x}");
            return;
        }
    }
    if negative {
        out.push('-');
    }
    if digits.is_empty() {
        out.push('0');
        return;
    }
    let text = std::str::from_utf8(digits).expect("ASCII digits");
    if point <= 0 {
        out.push_str("0.");
        while point < 0 {
            out.push('0');
            point += 1;
        }
        out.push_str(text);
    } else if point as usize >= text.len() {
        out.push_str(text);
        for _ in text.len()..point as usize {
            out.push('0');
        }
    } else {
        out.push_str(&text[..point as usize]);
        out.push('.');
        out.push_str(&text[point as usize..]);
    }
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

    /// The oracle is the standard library's `Display`, which the run files used before.
    #[test]
    fn push_f32_writes_what_display_writes() {
        let mut edge: Vec<f32> = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            0.5,
            1e-7,
            12.5,
            100.0,
            1e20,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            f32::EPSILON,
            1.0 / 61.0,
            2.0 / 61.0,
            f32::from_bits(1),
            f32::from_bits(0x007f_ffff),
            // Exact ties between two shortest candidates (seen in SciFact's BM25 run).
            5.082_031_3,
            2.847_656_3,
            3.175_781_3,
            0.5f32.powi(10),
            1.5f32 * 1024.0,
        ];
        for e in -45..=38 {
            let p = 10f32.powi(e);
            edge.extend([p, p.next_up(), p.next_down(), -p]);
        }
        // A fixed xorshift stream of bit patterns (finite ones kept), a million values.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = Vec::new();
        while random.len() < 1_000_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = f32::from_bits((state >> 32) as u32);
            if x.is_finite() {
                random.push(x);
            }
        }
        let mut out = String::new();
        for x in edge.into_iter().chain(random) {
            out.clear();
            push_f32(&mut out, x);
            assert_eq!(out, format!("{x}"), "bits {:#010x}", x.to_bits());
        }
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
