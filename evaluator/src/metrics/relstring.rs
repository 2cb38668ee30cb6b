//! `relstring`: the judgments of the first N retrieved documents as one character each
//! (`0`-`9`, `>` above 9, `-` not in the qrels, `.` judged below 0). Printed per query only.

use super::QueryView;

/// The relstring of the first `len` retrieved documents.
pub fn relstring(q: &QueryView<'_>, len: usize) -> String {
    let n = len.min(q.num_ret);
    let mut out = vec![b'-'; n];
    for h in q.hits.iter().take_while(|h| h.rank < n) {
        out[h.rank] = match h.rel {
            r if r > 9 => b'>',
            r if r >= 0 => b'0' + r as u8,
            _ => b'.',
        };
    }
    String::from_utf8(out).expect("ascii")
}
