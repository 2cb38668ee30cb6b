//! Byte-level line splitting shared by the run and qrels parsers.
//!
//! Reads the file in large blocks (no per-line allocation), finds line ends eight bytes at a time,
//! and splits each line on C's `isspace` (space, tab, CR, VT, FF), like trec_eval: tabs and runs
//! of spaces separate fields, CRLF line ends are accepted, a UTF-8 byte-order mark at the start
//! of the file is skipped, blank lines and lines starting with `#` are skipped. Each content line
//! is checked to be UTF-8.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::{Location, TrecError};

/// At most this many fields are kept per line (more are counted, for the error message).
pub(crate) const MAX_FIELDS: usize = 8;

const BLOCK: usize = 1 << 20;

/// One content line split into fields.
#[derive(Debug)]
pub(crate) struct Fields<'a> {
    line: &'a str,
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
    pub fn get(&self, i: usize) -> &'a str {
        &self.line[self.starts[i] as usize..self.ends[i] as usize]
    }

    /// 1-based byte column of field `i`.
    pub fn column(&self, i: usize) -> usize {
        self.starts[i] as usize + 1
    }
}

/// C's `isspace` minus the newline, which ends lines before fields are split.
#[inline]
fn is_space(b: u8) -> bool {
    b == b' ' || (b'\t'..=b'\r').contains(&b)
}

/// Position of the first `\n`, scanning a word at a time.
#[inline]
fn find_newline(hay: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let mut i = 0;
    while i + 8 <= hay.len() {
        let word = u64::from_le_bytes(hay[i..i + 8].try_into().expect("8 bytes")) ^ NL;
        // The lowest flagged byte is the first zero byte (flags above it may be false).
        let zero = word.wrapping_sub(LO) & !word & HI;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay[i..].iter().position(|&b| b == b'\n').map(|p| i + p)
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
    pub fn new(reader: R, path: &Path) -> Self {
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
    /// it. Returns false at end of file.
    fn refill(&mut self) -> Result<bool, TrecError> {
        if self.eof {
            return Ok(false);
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.end == self.buf.len() {
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
            if self.buf[..self.end].starts_with(b"\xEF\xBB\xBF") {
                self.pos = 3;
            }
        }
        Ok(true)
    }

    /// The next content line, or `None` at end of file.
    pub fn next_fields(&mut self) -> Result<Option<Fields<'_>>, TrecError> {
        let (start, stop, mut fields) = loop {
            let (start, stop) = match find_newline(&self.buf[self.pos..self.end]) {
                Some(i) => {
                    let s = self.pos;
                    self.pos += i + 1;
                    (s, s + i)
                }
                None => {
                    if self.refill()? {
                        continue;
                    }
                    if self.pos == self.end {
                        return Ok(None);
                    }
                    // last line without a newline
                    let s = self.pos;
                    self.pos = self.end;
                    (s, self.end)
                }
            };
            self.line_no += 1;
            let fields = split(&self.buf[start..stop], self.line_no);
            if fields.count > 0 && self.buf[start + fields.starts[0] as usize] != b'#' {
                break (start, stop, fields);
            }
        };
        let bytes = &self.buf[start..stop];
        fields.line = std::str::from_utf8(bytes).map_err(|e| TrecError::Utf8 {
            at: Location::new(&self.path, self.line_no, e.valid_up_to() + 1),
        })?;
        Ok(Some(fields))
    }
}

/// Splits one line (without its newline) at whitespace; the text is attached by the caller.
#[inline]
fn split(bytes: &[u8], line_no: u64) -> Fields<'static> {
    // Offsets are u32: no TREC line is 4 GiB long.
    debug_assert!(bytes.len() <= u32::MAX as usize);
    let mut fields = Fields {
        line: "",
        line_no,
        count: 0,
        starts: [0; MAX_FIELDS],
        ends: [0; MAX_FIELDS],
    };
    let n = bytes.len();
    let mut i = 0;
    loop {
        while i < n && is_space(bytes[i]) {
            i += 1;
        }
        if i == n {
            break;
        }
        let s = i;
        while i < n && !is_space(bytes[i]) {
            i += 1;
        }
        if fields.count < MAX_FIELDS {
            fields.starts[fields.count] = s as u32;
            fields.ends[fields.count] = i as u32;
        }
        fields.count += 1;
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(input: &[u8]) -> Result<Vec<(u64, Vec<String>)>, TrecError> {
        let mut s = LineSplitter::new(input, Path::new("t"));
        let mut out = Vec::new();
        while let Some(f) = s.next_fields()? {
            let n = f.count.min(MAX_FIELDS);
            out.push((f.line_no, (0..n).map(|i| f.get(i).to_string()).collect()));
        }
        Ok(out)
    }

    #[test]
    fn finds_newlines_at_every_offset() {
        for len in 0..40 {
            for at in 0..len {
                let mut v = vec![b'x'; len];
                v[at] = b'\n';
                assert_eq!(find_newline(&v), Some(at), "len {len} at {at}");
            }
            assert_eq!(find_newline(&vec![b'x'; len]), None);
        }
        // bytes just above and below '\n' must not match
        assert_eq!(find_newline(b"\x0b\x09\x8a\x0a"), Some(3));
    }

    #[test]
    fn splits_on_any_whitespace_and_accepts_crlf_bom_blank_and_comments() {
        let input = b"\xEF\xBB\xBFq1 Q0\td1  1 2.5 run\r\n\n   \n# comment\nq2\tQ0 d2 2 1 run";
        let got = split_all(input).unwrap();
        assert_eq!(
            got,
            vec![
                (1, vec!["q1", "Q0", "d1", "1", "2.5", "run"].into_iter().map(String::from).collect()),
                (5, vec!["q2", "Q0", "d2", "2", "1", "run"].into_iter().map(String::from).collect()),
            ]
        );
    }

    #[test]
    fn counts_fields_beyond_the_kept_ones() {
        let mut s = LineSplitter::new(&b"a b c d e f g h i j\n"[..], Path::new("t"));
        let f = s.next_fields().unwrap().unwrap();
        assert_eq!(f.count, 10);
    }

    #[test]
    fn lines_longer_than_the_block_are_read_whole() {
        let long = "x".repeat(3 * BLOCK);
        let input = format!("a {long} c\nd e\n");
        let got = split_all(input.as_bytes()).unwrap();
        assert_eq!(got[0].1[1].len(), 3 * BLOCK);
        assert_eq!(got[1], (2, vec!["d".to_string(), "e".to_string()]));
    }

    #[test]
    fn invalid_utf8_names_line_and_column() {
        let err = split_all(b"a b\nq1 \xff\xfe x\n").unwrap_err();
        assert_eq!(err.to_string().split(':').take(3).collect::<Vec<_>>(), ["t", "2", "4"]);
    }
}
