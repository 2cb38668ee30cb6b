//! ranklab-input: bounds on everything ranklab reads (a leaf crate that both the engine and the
//! evaluator read input through; the engine re-exports it as `ranklab_engine::input` and
//! [`suggest`] as `ranklab_engine::suggest`): the one way input files are opened, and the limits every
//! reader keeps (suites, experiments, judgments and other YAML, qrels and runs, BEIR jsonl,
//! Markdown records, engine recordings, the baseline).
//!
//! - **Regular files only.** [`open`] looks at the file's metadata (following links) before
//!   opening it and refuses a FIFO, a character or block device, a socket or a directory at
//!   once, naming what it is; the open itself is non-blocking, and the opened file is checked
//!   again, so a FIFO swapped in between cannot hold ranklab either.
//! - **Size.** [`read`] refuses a file over its limit before reading it: [`MAX_YAML_BYTES`]
//!   for YAML and other small text files, [`MAX_WHOLE_BYTES`] for other files read whole
//!   (recordings, the baseline). Files read line by line (qrels, runs, jsonl) may be up to
//!   [`MAX_FILE_BYTES`], and every line is bounded by [`MAX_LINE_BYTES`] ([`read_line`]), so no
//!   reader buffers more than that.
//! - **Ids.** Document, query, task and hit ids are at most [`MAX_ID_BYTES`] bytes.
//! - **YAML nesting.** [`yaml_depth`] scans a text for its flow (`[`, `{`) and block
//!   (indentation, `- `) nesting in one linear pass, so a file nested deeper than
//!   [`MAX_YAML_DEPTH`] is refused before the parser recurses into it.
//!
//! Errors are `std::io::Error`s of kind `InvalidInput` whose message says what the file is and
//! what to do; callers wrap them with the path as they wrap any other I/O error.
//!
//! - [`suggest`]: "did you mean", the known names nearest to a misspelt one.

#![warn(missing_docs)]

pub mod suggest;

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::Path;

/// Largest YAML (or other small text) file read: 16 MiB.
pub const MAX_YAML_BYTES: u64 = 16 << 20;
/// Largest other file read whole (an engine or model-output recording, the baseline): 1 GiB.
pub const MAX_WHOLE_BYTES: u64 = 1 << 30;
/// Largest file read at all (a file read line by line, such as a BEIR `corpus.jsonl`, qrels or
/// a run): 16 GiB.
pub const MAX_FILE_BYTES: u64 = 16 << 30;
/// Longest line of a line-oriented file (qrels, run, jsonl) or of an engine's answer: 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// Longest id (document, query, task, hit): 4,096 bytes of UTF-8.
pub const MAX_ID_BYTES: usize = 4096;
/// Deepest YAML nesting (flow collections and block indentation together): 64 levels.
pub const MAX_YAML_DEPTH: usize = 64;

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, message)
}

/// What a file that is not regular is, in words.
fn kind_of(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn regular(meta: &std::fs::Metadata) -> std::io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(invalid(format!(
        "{}, not a regular file; ranklab reads input only from regular files (copy the data into a file)",
        kind_of(meta.file_type())
    )))
}

/// Opens `path` for reading if it is a regular file no larger than [`MAX_FILE_BYTES`]; returns
/// the file and its size. Never blocks on a FIFO.
pub fn open(path: &Path) -> std::io::Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    regular(&std::fs::metadata(path)?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    regular(&meta)?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big(meta.len(), MAX_FILE_BYTES));
    }
    Ok((file, meta.len()))
}

fn too_big(len: u64, max: u64) -> std::io::Error {
    invalid(format!(
        "the file is {len} bytes, over ranklab's limit of {max} bytes for it (see `ranklab help formats`, \"Limits\")"
    ))
}

/// Reads the regular file `path` whole, refusing it when it is over `max` bytes (it is never
/// read further than `max` bytes, even if it grows while read).
pub fn read(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let (file, len) = open(path)?;
    if len > max {
        return Err(too_big(len, max));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64, max));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text (invalid UTF-8 is an error of kind `InvalidData`).
pub fn read_to_string(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read(path, max)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// [`read`] with [`MAX_YAML_BYTES`], as UTF-8 (invalid bytes replaced): for the readers that
/// only look lines up in a file parsed before.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    read(path, MAX_YAML_BYTES).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Reads one line (up to and including `\n`, or to the end of the input) into `buf`, which is
/// cleared first; returns the bytes read (0 at the end). A line longer than `max` bytes is an
/// error naming `line_no`; no more than `max` + one block is ever buffered.
pub fn read_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
    line_no: u64,
) -> std::io::Result<usize> {
    buf.clear();
    loop {
        let avail = match reader.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(buf.len());
        }
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        if buf.len() + take > max + usize::from(done) {
            return Err(line_too_long(line_no, max));
        }
        buf.extend_from_slice(&avail[..take]);
        reader.consume(take);
        if done {
            return Ok(buf.len());
        }
    }
}

/// The error of a line over `max` bytes.
pub fn line_too_long(line_no: u64, max: usize) -> std::io::Error {
    invalid(format!(
        "line {line_no} is longer than {max} bytes (no newline within it); ranklab's limit per line is {max} bytes (see `ranklab help formats`, \"Limits\")"
    ))
}

/// The message for an id over [`MAX_ID_BYTES`]: `what` names the id (e.g. "hit id"); the id is
/// quoted by a short prefix only.
pub fn id_too_long(what: &str, id: &str) -> String {
    format!(
        "{what} {:?}… is {} bytes long, over ranklab's limit of {MAX_ID_BYTES} bytes for an id",
        prefix(id, 40),
        id.len()
    )
}

/// At most the first `max` bytes of `s` (cut at a character boundary), for quoting untrusted text
/// in a message; `…` and the full length are added by the caller when it was cut.
pub fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// [`prefix`] with a note of what was left out: the text itself when it is at most `max` bytes,
/// else its first `max` bytes and `… (N bytes in all)`.
pub fn bounded(s: &str, max: usize) -> String {
    if s.len() <= max {
        s.to_string()
    } else {
        format!("{}… ({} bytes in all)", prefix(s, max), s.len())
    }
}

/// The deepest nesting in the YAML `text` and its 1-based line, found by a linear scan: block
/// nesting from indentation and `- ` entries, flow nesting from `[` and `{` where a flow
/// collection may start (outside quotes and comments). An over-estimate at worst for odd text
/// in block scalars; never below the parser's depth for the documents ranklab reads.
pub fn yaml_depth(text: &str) -> (usize, usize) {
    let mut deepest = (0, 0);
    let mut block: Vec<usize> = Vec::new(); // indentation columns of the open block levels
    let mut flow = 0usize;
    let mut quote: Option<u8> = None;
    for (n, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let mut i = 0;
        if quote.is_none() && flow == 0 {
            // Block context: indentation, then `- ` entries, each a level.
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
            if i == bytes.len() || bytes[i] == b'#' {
                continue;
            }
            loop {
                while block.last().is_some_and(|&c| c >= i) {
                    block.pop();
                }
                block.push(i);
                if bytes[i] == b'-' && bytes.get(i + 1).is_none_or(|&b| b == b' ') {
                    i += 1;
                    while i < bytes.len() && bytes[i] == b' ' {
                        i += 1;
                    }
                    if i < bytes.len() {
                        continue;
                    }
                }
                break;
            }
        }
        // Flow and quotes: a `[`, `{` or quote opens only where a value may start.
        let mut starts = true;
        while i < bytes.len() {
            let b = bytes[i];
            if let Some(q) = quote {
                if q == b'"' && b == b'\\' {
                    i += 2;
                    continue;
                }
                if b == q {
                    if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    quote = None;
                    starts = false;
                }
                i += 1;
                continue;
            }
            match b {
                b'#' if i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b'\t' => break,
                b'[' | b'{' if starts || flow > 0 => {
                    flow += 1;
                    starts = true;
                    let d = block.len() + flow;
                    if d > deepest.0 {
                        deepest = (d, n + 1);
                    }
                    i += 1;
                    continue;
                }
                b']' | b'}' if flow > 0 => flow -= 1,
                b'"' | b'\'' if starts => quote = Some(b),
                b' ' | b'\t' => {
                    i += 1;
                    continue;
                }
                b',' => {
                    starts = flow > 0;
                    i += 1;
                    continue;
                }
                b':' | b'-' | b'?' if bytes.get(i + 1).is_none_or(|&c| c == b' ') => {
                    starts = true;
                    i += 1;
                    continue;
                }
                _ => {}
            }
            starts = false;
            i += 1;
        }
        if block.len() + flow > deepest.0 {
            deepest = (block.len() + flow, n + 1);
        }
    }
    deepest
}

/// Refuses the YAML `text` when it nests deeper than [`MAX_YAML_DEPTH`]: `Some((line, message))`.
pub fn check_yaml_depth(text: &str) -> Option<(usize, String)> {
    let (depth, line) = yaml_depth(text);
    (depth > MAX_YAML_DEPTH).then(|| {
        (
            line,
            format!(
                "nested {depth} levels deep here; ranklab reads YAML at most {MAX_YAML_DEPTH} levels deep (see `ranklab help formats`, \"Limits\")"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once_without_blocking() {
        // Oracle: opening a FIFO for reading with no writer blocks for ever unless refused.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("experiments.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap();
        assert!(made.success());
        let err = read(&p, MAX_YAML_BYTES).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
    }

    #[test]
    fn devices_and_directories_are_refused_naming_them() {
        let e = read(Path::new("/dev/zero"), MAX_YAML_BYTES).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = open(Path::new("/")).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
    }

    #[test]
    fn a_file_over_its_limit_is_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        std::fs::write(&p, vec![b'x'; 11]).unwrap();
        assert_eq!(read(&p, 11).unwrap().len(), 11);
        let e = read(&p, 10).unwrap_err();
        assert!(e.to_string().contains("is 11 bytes"), "{e}");
    }

    #[test]
    fn read_line_bounds_each_line() {
        let mut r = std::io::BufReader::with_capacity(4, &b"abcd\nabcde\nxyz"[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 4, 1).unwrap(), 5);
        assert_eq!(buf, b"abcd\n");
        let e = read_line(&mut r, &mut buf, 4, 2).unwrap_err();
        assert!(
            e.to_string().contains("line 2 is longer than 4 bytes"),
            "{e}"
        );
        // No newline at all: refused once past the bound, not read to the end.
        let mut zero = std::io::BufReader::new(std::io::repeat(0));
        assert!(read_line(&mut zero, &mut buf, 1 << 16, 1).is_err());
        assert!(buf.len() <= 1 << 16);
    }

    #[test]
    fn yaml_depth_counts_flow_and_block_nesting() {
        // Depths counted by hand: the mapping is level 1, its value's sequence level 2, ...
        assert_eq!(yaml_depth("a: 1\nb: 2\n").0, 1);
        assert_eq!(yaml_depth("a:\n  b:\n    c: 1\n").0, 3);
        assert_eq!(yaml_depth("a: [1, [2, {c: 3}]]\n").0, 4);
        assert_eq!(yaml_depth("a:\n  - - - x\n").0, 5);
        // Brackets in quotes, comments and plain text do not nest.
        assert_eq!(yaml_depth("a: \"[[[[\"\nb: '{{{' # [[[\nc: see [1\n").0, 1);
        assert_eq!(yaml_depth("a: it's [ok\nb: [x]\n").0, 2);
        let deep = format!("extra: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(yaml_depth(&deep), (100_001, 1));
        assert!(check_yaml_depth(&deep).is_some());
        let ok = format!("extra: {}{}\n", "[".repeat(63), "]".repeat(63));
        assert!(check_yaml_depth(&ok).is_none());
    }

    #[test]
    fn every_committed_yaml_file_is_within_the_depth_limit() {
        // Oracle: the parser reads these files today; the scan must refuse none of them.
        fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p
                    .extension()
                    .is_some_and(|x| x == "yaml" || x == "yml" || x == "md")
                {
                    out.push(p);
                }
            }
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for d in ["tasks", "corpora", "examples", "bench"] {
            walk(&root.join(d), &mut files);
        }
        assert!(files.len() > 50, "found only {} files", files.len());
        let mut deepest = 0;
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            // A Markdown record's YAML is its front matter.
            let yaml = match f.extension().is_some_and(|x| x == "md") {
                true => match text
                    .strip_prefix("---\n")
                    .and_then(|t| t.split_once("\n---"))
                {
                    Some((front, _)) => front.to_string(),
                    None => continue,
                },
                false => text,
            };
            let (depth, line) = yaml_depth(&yaml);
            assert!(
                depth <= MAX_YAML_DEPTH,
                "{}:{line}: depth {depth}",
                f.display()
            );
            deepest = deepest.max(depth);
        }
        assert!(deepest >= 3, "the deepest file is {deepest} deep");
    }

    #[test]
    fn bounded_quotes_a_prefix_at_a_char_boundary() {
        assert_eq!(bounded("abc", 5), "abc");
        assert_eq!(bounded("ééé", 3), "é… (6 bytes in all)");
    }
}
