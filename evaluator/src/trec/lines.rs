//! Byte-level line splitting shared by the run and qrels parsers.
//!
//! Reads the file in 1 MiB blocks (no per-line allocation), checks each block's complete lines
//! for UTF-8 in one call, and splits lines on C's `isspace` (space, tab, CR, VT, FF) in a single
//! pass, like trec_eval: tabs and runs of spaces separate fields, CRLF line ends are accepted, a
//! UTF-8 byte-order mark at the start of the file is skipped, blank lines and lines starting
//! with `#` are skipped. A line is at most [`ranklab_input::MAX_LINE_BYTES`] long: a
//! longer one (a file with no newline, say) is refused instead of buffered whole.

use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::error::{Location, TrecError};

/// At most this many fields are kept per line (more are counted, for the error message).
pub(crate) const MAX_FIELDS: usize = 8;

const BLOCK: usize = 1 << 20;

/// The UTF-8 byte-order mark, skipped at the start of a file.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One content line split into fields.
#[derive(Debug)]
pub(crate) struct Fields<'a> {
    text: &'a str,
    /// Byte offset of the line in `text`.
    line_start: usize,
    /// 1-based line number.
    pub line_no: u64,
    /// Number of fields on the line (may exceed [`MAX_FIELDS`]).
    pub count: usize,
    starts: [u32; MAX_FIELDS],
    ends: [u32; MAX_FIELDS],
}

impl<'a> Fields<'a> {
    /// Field `i` (0-based, `i < count.min(MAX_FIELDS)`).
    #[inline]
    pub(super) fn get(&self, i: usize) -> &'a str {
        &self.text[self.starts[i] as usize..self.ends[i] as usize]
    }

    /// 1-based byte column of field `i`.
    pub(super) fn column(&self, i: usize) -> usize {
        self.starts[i] as usize - self.line_start + 1
    }
}

/// Byte classes: 1 = C `isspace` other than newline, 2 = newline, 0 = part of a field. The
/// splitter tests bytes with [`is_space`] and [`is_blank`]; the table is their definition, which
/// the tests check them against.
#[cfg(test)]
const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b' ' as usize] = 1;
    t[b'\t' as usize] = 1;
    t[b'\r' as usize] = 1;
    t[0x0b] = 1;
    t[0x0c] = 1;
    t[b'\n' as usize] = 2;
    t
};

/// C `isspace`: space, tab, newline, VT, FF, CR (by arithmetic: a table lookup is a dependent
/// load on the splitter's hot path).
#[inline]
fn is_space(b: u8) -> bool {
    b == b' ' || b.wrapping_sub(b'\t') < 5
}

/// C `isspace` other than newline.
#[inline]
fn is_blank(b: u8) -> bool {
    is_space(b) && b != b'\n'
}

/// The end of the field starting at `i`: the first whitespace or newline at or after `i`, or
/// `bytes.len()`. Scans eight bytes at a time for a byte below `!` (every whitespace byte is),
/// then checks that candidate with [`is_space`] (other control bytes belong to the field).
#[inline]
fn field_end(bytes: &[u8], mut i: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    while i + 8 <= n {
        let w = u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        // Flags bytes < 0x21; the lowest flag is exact (borrows only run upwards from it).
        let below = w.wrapping_sub(0x21 * LO) & !w & HI;
        if below == 0 {
            i += 8;
            continue;
        }
        let j = i + (below.trailing_zeros() / 8) as usize;
        if is_space(bytes[j]) {
            return j;
        }
        i = j + 1;
    }
    while i < n && !is_space(bytes[i]) {
        i += 1;
    }
    i
}

/// Splits a reader into content lines of whitespace-separated fields.
pub(crate) struct LineSplitter<R> {
    reader: R,
    path: PathBuf,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    started: bool,
    line_no: u64,
}

impl<R: Read> LineSplitter<R> {
    /// Splits `reader`; `path` names it in errors.
    pub(super) fn new(reader: R, path: &Path) -> Self {
        LineSplitter {
            reader,
            path: path.to_path_buf(),
            buf: vec![0; BLOCK],
            pos: 0,
            end: 0,
            eof: false,
            started: false,
            line_no: 0,
        }
    }

    /// Moves the unread tail to the front and reads more; grows the buffer when one line fills
    /// it. Sets `eof` at the end of the input.
    fn refill(&mut self) -> Result<(), TrecError> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.end == self.buf.len() {
            // One line fills the buffer: grow it, up to the bound on a line.
            if self.buf.len() >= ranklab_input::MAX_LINE_BYTES {
                return Err(TrecError::Io {
                    path: self.path.clone(),
                    source: ranklab_input::line_too_long(
                        self.line_no + 1,
                        ranklab_input::MAX_LINE_BYTES,
                    ),
                });
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    self.end += n;
                    if !self.started && self.end < 3 {
                        continue;
                    }
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(TrecError::Io {
                        path: self.path.clone(),
                        source,
                    })
                }
            }
        }
        if !self.started {
            self.started = true;
            if self.buf[..self.end].starts_with(BOM) {
                self.pos = BOM.len();
            }
        }
        Ok(())
    }

    /// Calls `f` with every content line in order, until `f` breaks or the input ends.
    pub(super) fn for_each<B>(
        &mut self,
        mut f: impl FnMut(&Fields<'_>) -> Result<ControlFlow<B>, TrecError>,
    ) -> Result<ControlFlow<B>, TrecError> {
        self.for_each_text(|text, line_no| split_lines(text, line_no, &mut f))
    }

    /// Calls `f` with the input in order as runs of whole lines (the last of the input may lack
    /// its newline) and the number of the line before them, which `f` advances by the lines it
    /// reads, until `f` breaks or the input ends.
    pub(super) fn for_each_text<B>(
        &mut self,
        mut f: impl FnMut(&str, &mut u64) -> Result<ControlFlow<B>, TrecError>,
    ) -> Result<ControlFlow<B>, TrecError> {
        loop {
            if !self.eof {
                self.refill()?;
            }
            // The complete lines in the buffer (all of it at the end of the input).
            let chunk_end = if self.eof {
                self.end
            } else {
                match memchr::memrchr(b'\n', &self.buf[self.pos..self.end]) {
                    Some(i) => self.pos + i + 1,
                    None => continue,
                }
            };
            let bytes = &self.buf[self.pos..chunk_end];
            let (valid, bad) = match std::str::from_utf8(bytes) {
                Ok(text) => (text, None),
                Err(e) => {
                    // Lines before the one holding the invalid byte are processed first.
                    let bad = e.valid_up_to();
                    let line_start = memchr::memrchr(b'\n', &bytes[..bad]).map_or(0, |i| i + 1);
                    let text = std::str::from_utf8(&bytes[..line_start]).expect("valid prefix");
                    (text, Some(bad - line_start + 1))
                }
            };
            if let ControlFlow::Break(b) = f(valid, &mut self.line_no)? {
                return Ok(ControlFlow::Break(b));
            }
            if let Some(column) = bad {
                return Err(TrecError::Utf8 {
                    at: Location::new(&self.path, self.line_no + 1, column),
                });
            }
            self.pos = chunk_end;
            if self.eof {
                return Ok(ControlFlow::Continue(()));
            }
        }
    }
}

/// Splits `text` (whole lines; the last may lack its newline) into content lines.
#[inline]
pub(super) fn split_lines<B>(
    text: &str,
    line_no: &mut u64,
    f: &mut impl FnMut(&Fields<'_>) -> Result<ControlFlow<B>, TrecError>,
) -> Result<ControlFlow<B>, TrecError> {
    let mut i = 0;
    while i < text.len() {
        *line_no += 1;
        if let Some(fields) = split_line(text, &mut i, *line_no) {
            if let ControlFlow::Break(b) = f(&fields)? {
                return Ok(ControlFlow::Break(b));
            }
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// Splits the line of `text` starting at `*i` (numbered `line_no`) and moves `*i` past its
/// newline; `None` for a blank or comment line.
#[inline]
pub(super) fn split_line<'a>(text: &'a str, i: &mut usize, line_no: u64) -> Option<Fields<'a>> {
    // Offsets are u32: callers pass at most a few MiB (a block, or one long line).
    let bytes = text.as_bytes();
    assert!(bytes.len() <= u32::MAX as usize, "line block over 4 GiB");
    let n = bytes.len();
    let mut fields = Fields {
        text,
        line_start: *i,
        line_no,
        count: 0,
        starts: [0; MAX_FIELDS],
        ends: [0; MAX_FIELDS],
    };
    loop {
        while *i < n && is_blank(bytes[*i]) {
            *i += 1;
        }
        if *i == n || bytes[*i] == b'\n' {
            break;
        }
        let s = *i;
        *i = field_end(bytes, s);
        if fields.count < MAX_FIELDS {
            fields.starts[fields.count] = s as u32;
            fields.ends[fields.count] = *i as u32;
        }
        fields.count += 1;
    }
    *i += 1; // the newline
    if fields.count == 0 || bytes[fields.starts[0] as usize] == b'#' {
        return None;
    }
    Some(fields)
}

/// The five field separators and the newline of a plain run line starting at `start`: six
/// non-empty fields separated by single spaces, ended by a newline, no other byte below `!`, not
/// a comment. `None` for any other line (and for one within 8 bytes of the end of `bytes`),
/// which the general splitter ([`split_line`]) then reads: on a plain line both give the same
/// fields, as every C `isspace` byte is below `!`.
///
/// Eight bytes at a time: the bytes below `!` of a word are flagged exactly (high bit clear and
/// low seven bits below 0x21, without borrows between bytes), and visited lowest first.
#[inline]
pub(crate) fn plain_run_line(bytes: &[u8], start: usize) -> Option<([usize; 5], usize)> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    let mut seps = [0usize; 5];
    let mut k = 0;
    let mut p = start;
    loop {
        if p + 8 > n {
            return None;
        }
        let w = u64::from_le_bytes(bytes[p..p + 8].try_into().expect("8 bytes"));
        // High bit of each byte: set when the low seven bits are at least 0x21, or the byte is
        // at least 0x80. No carry crosses a byte: 0x7f + 0x5f < 0x100.
        let at_least = ((w & !HI).wrapping_add((0x80 - 0x21) * LO)) | w;
        let mut below = !at_least & HI;
        while below != 0 {
            let j = p + (below.trailing_zeros() / 8) as usize;
            match bytes[j] {
                b' ' if k < 5 => {
                    seps[k] = j;
                    k += 1;
                }
                b'\n' if k == 5 => {
                    let nonempty = seps[0] > start
                        && seps[1] > seps[0] + 1
                        && seps[2] > seps[1] + 1
                        && seps[3] > seps[2] + 1
                        && seps[4] > seps[3] + 1
                        && j > seps[4] + 1;
                    return (nonempty && bytes[start] != b'#').then_some((seps, j));
                }
                _ => return None,
            }
            below &= below - 1;
        }
        p += 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(input: &[u8]) -> Result<Vec<(u64, Vec<String>)>, TrecError> {
        let mut s = LineSplitter::new(input, Path::new("t"));
        let mut out = Vec::new();
        let _ = s.for_each::<()>(|f| {
            let n = f.count.min(MAX_FIELDS);
            out.push((f.line_no, (0..n).map(|i| f.get(i).to_string()).collect()));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_on_any_whitespace_and_accepts_crlf_bom_blank_and_comments() {
        let input = b"\xEF\xBB\xBFq1 Q0\td1  1 2.5 run\r\n\n   \n# comment\nq2\tQ0 d2 2 1 run";
        let got = split_all(input).unwrap();
        assert_eq!(
            got,
            vec![
                (1, owned(&["q1", "Q0", "d1", "1", "2.5", "run"])),
                (5, owned(&["q2", "Q0", "d2", "2", "1", "run"])),
            ]
        );
    }

    #[test]
    fn space_tests_match_the_class_table() {
        for b in 0..=255u8 {
            assert_eq!(is_space(b), CLASS[b as usize] != 0, "{b:#x}");
            assert_eq!(is_blank(b), CLASS[b as usize] == 1, "{b:#x}");
        }
    }

    #[test]
    fn field_end_matches_a_byte_scan() {
        let alphabet = [
            b'a', b' ', b'\t', b'\n', b'\r', 0x01, 0x0b, 0x0c, 0x1f, b'!', 0xc3, 0xa9,
        ];
        let mut seed = 12345u64;
        for _ in 0..5000 {
            let len = (seed % 40) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    alphabet[(seed >> 33) as usize % alphabet.len()]
                })
                .collect();
            for start in 0..len {
                let want = (start..len)
                    .find(|&k| CLASS[bytes[k] as usize] != 0)
                    .unwrap_or(len);
                assert_eq!(field_end(&bytes, start), want, "{bytes:?} from {start}");
            }
        }
    }

    /// The fast path against the general splitter on random lines: where it accepts a line, the
    /// fields and the line end are the general splitter's; it accepts exactly the plain lines
    /// (six non-empty fields, single spaces, a newline, no other byte below `!`, no `#` first,
    /// the 8-byte word holding the newline inside the input).
    #[test]
    fn plain_run_line_agrees_with_split_line() {
        let alphabet: &[&[u8]] = &[
            b"q1",
            b"Q0",
            b"d",
            b"7",
            b"2.5",
            b"-1",
            b"run",
            b" ",
            b" ",
            b" ",
            b"  ",
            b"\t",
            b"\r",
            b"\x0b",
            b"\x01",
            b"!",
            b"#",
            "\u{e9}".as_bytes(),
            b"abcdefghij",
        ];
        let mut seed = 99u64;
        let mut next = |m: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % m
        };
        let (mut accepted, mut refused) = (0, 0);
        for case in 0..20_000 {
            let mut line = Vec::new();
            if case % 2 == 0 {
                // Mostly plain: six tokens joined by single spaces, sometimes perturbed.
                for k in 0..6 {
                    if k > 0 {
                        line.push(b' ');
                    }
                    line.extend_from_slice(alphabet[next(7)]);
                }
                if next(4) == 0 {
                    let at = next(line.len() + 1);
                    let extra = alphabet[next(alphabet.len())];
                    line.splice(at..at, extra.iter().copied());
                }
            } else {
                for _ in 0..next(14) {
                    line.extend_from_slice(alphabet[next(alphabet.len())]);
                }
            }
            let newline = next(8) != 0;
            if newline {
                line.push(b'\n');
            }
            // Sometimes a following line, so that the 8-byte reads can run past this one.
            if next(2) == 0 {
                line.extend_from_slice(b"q2 Q0 d 1 1 r\n");
            }
            let Ok(text) = std::str::from_utf8(&line) else {
                continue;
            };
            let mut i = 0;
            let general = split_line(text, &mut i, 1);
            let line_end = i - 1;
            let fields: Vec<&str> = general
                .as_ref()
                .map(|f| (0..f.count.min(MAX_FIELDS)).map(|k| f.get(k)).collect())
                .unwrap_or_default();
            let this_line = &text.as_bytes()[..(line_end).min(text.len())];
            // The fast path reads whole words from the line start: the newline's must fit.
            let fits = (line_end / 8) * 8 + 8 <= text.len();
            let plain = line_end < text.len()
                && fits
                && fields.len() == 6
                && general.as_ref().unwrap().count == 6
                && this_line.len() == fields.iter().map(|f| f.len()).sum::<usize>() + 5
                && this_line.iter().all(|&b| b >= b' ');
            match plain_run_line(text.as_bytes(), 0) {
                Some((sep, end)) => {
                    accepted += 1;
                    assert!(plain, "{text:?}");
                    assert_eq!(end, line_end, "{text:?}");
                    let mut starts = vec![0];
                    starts.extend(sep.iter().map(|s| s + 1));
                    let mut ends = sep.to_vec();
                    ends.push(end);
                    let fast: Vec<&str> = starts
                        .iter()
                        .zip(&ends)
                        .map(|(&a, &b)| &text[a..b])
                        .collect();
                    assert_eq!(fast, fields, "{text:?}");
                }
                None => {
                    refused += 1;
                    assert!(!plain, "{text:?}");
                }
            }
        }
        assert!(accepted > 1000 && refused > 1000, "{accepted} {refused}");
    }

    #[test]
    fn counts_fields_beyond_the_kept_ones() {
        let mut s = LineSplitter::new(&b"a b c d e f g h i j\n"[..], Path::new("t"));
        let mut count = 0;
        let _ = s
            .for_each::<()>(|f| {
                count = f.count;
                Ok(ControlFlow::Continue(()))
            })
            .unwrap();
        assert_eq!(count, 10);
    }

    #[test]
    fn lines_across_and_longer_than_blocks_are_read_whole() {
        let long = "x".repeat(3 * BLOCK);
        let mut input = format!("a {long} c\nd e\n");
        // many short lines so that block boundaries fall inside lines
        for i in 0..200_000 {
            input += &format!("q{i} d{i}\n");
        }
        let got = split_all(input.as_bytes()).unwrap();
        assert_eq!(got[0].1[1].len(), 3 * BLOCK);
        assert_eq!(got[1], (2, owned(&["d", "e"])));
        assert_eq!(got.len(), 200_002);
        for (i, (line, fields)) in got[2..].iter().enumerate() {
            assert_eq!(*line, i as u64 + 3);
            assert_eq!(fields, &owned(&[&format!("q{i}"), &format!("d{i}")]));
        }
    }

    #[test]
    fn invalid_utf8_names_line_and_column_after_processing_earlier_lines() {
        let mut seen = 0;
        let mut s = LineSplitter::new(&b"a b\nc d\nq1 \xff\xfe x\nz\n"[..], Path::new("t"));
        let err = s
            .for_each::<()>(|_| {
                seen += 1;
                Ok(ControlFlow::Continue(()))
            })
            .unwrap_err();
        assert_eq!(seen, 2);
        assert_eq!(
            err.to_string().split(':').take(3).collect::<Vec<_>>(),
            ["t", "3", "4"]
        );
    }

    #[test]
    fn break_stops_early() {
        let mut s = LineSplitter::new(&b"a\nb\nc\n"[..], Path::new("t"));
        let got = s
            .for_each(|f| {
                Ok(if f.get(0) == "b" {
                    ControlFlow::Break(f.line_no)
                } else {
                    ControlFlow::Continue(())
                })
            })
            .unwrap();
        assert_eq!(got, ControlFlow::Break(2));
    }
}
