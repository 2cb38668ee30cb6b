//! What every fuzz target checks, one function per target. The fuzz targets call these, and
//! `harness/tests/fuzz_regressions.rs` includes this file (`#[path]`) to replay every committed
//! input (`fuzz/regressions/<target>/`, `fuzz/corpus/<target>/`) through the same code in CI.
//!
//! Each function feeds arbitrary bytes to one parser and checks, beyond "does not panic":
//! - an error names the file it was reading (`Display` contains the file name);
//! - what is accepted satisfies the format's own rules (ids without white space, cutoffs in
//!   range, finite metric values, ...).
//!
//! `http_response` reads nothing of ranklab but `harness/src/external/wire.rs`, which the fuzz
//! build includes as a file (`#[path]`): built with `--no-default-features` (no `harness`
//! feature), the fuzz crate compiles without ranklab, in a few minutes instead of ~25. The
//! other checks need the `harness` feature (the default), or run inside ranklab's own tests.

#[cfg(any(feature = "harness", not(fuzzing)))]
use std::io::Cursor;
use std::io::Read;
#[cfg(any(feature = "harness", not(fuzzing)))]
use std::path::{Path, PathBuf};
#[cfg(any(feature = "harness", not(fuzzing)))]
use std::sync::OnceLock;

#[cfg(any(feature = "harness", not(fuzzing)))]
/// A per-process scratch directory for the loaders that read files.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("ranklab-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(d.join("qrels")).expect("scratch directory");
        d
    })
}

#[cfg(any(feature = "harness", not(fuzzing)))]
fn ok_id(id: &str) -> bool {
    !id.is_empty() && !id.chars().any(char::is_whitespace)
}

#[cfg(any(feature = "harness", not(fuzzing)))]
/// TREC qrels and run (`ranklab eval`): the bytes before the first NUL are the qrels, the rest
/// the run (without a NUL, both are the whole input). The run is streamed by `RunReader`, then,
/// when the qrels parse, evaluated with every measure (`all_trec`, `-c`).
pub fn trec(data: &[u8]) {
    use ranklab::metrics::Selection;
    use ranklab::trec::{evaluate_reader, EvalOptions, Qrels, RunReader};
    use std::ops::ControlFlow;

    let (qrels_bytes, run_bytes) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, data),
    };
    let run_path = Path::new("fuzz.run");
    let qrels_path = Path::new("fuzz.qrels");

    let mut lines = 0u64;
    let read = RunReader::new(run_bytes, run_path).for_each::<()>(|l| {
        // trec_eval splits on C's isspace: other white space (U+00A0, ...) belongs to a field.
        let field = |f: &str| !f.is_empty() && !f.bytes().any(|b| b" \t\n\r\x0b\x0c".contains(&b));
        assert!(field(l.qid) && field(l.docno) && field(l.tag), "{l:?}");
        assert!(l.score.is_finite(), "{l:?}");
        assert!(l.line > lines, "line numbers ascend: {l:?}");
        lines = l.line;
        Ok(ControlFlow::Continue(()))
    });
    if let Err(e) = read {
        assert!(e.to_string().contains("fuzz.run"), "{e}");
    }

    let qrels = match Qrels::from_reader(qrels_bytes, qrels_path) {
        Ok(q) => q,
        Err(e) => {
            assert!(e.to_string().contains("fuzz.qrels"), "{e}");
            return;
        }
    };
    let selection = Selection::from_specs(&["all_trec"]).expect("all_trec");
    let opts = EvalOptions {
        rel_level: 1,
        complete: true,
        all_judged: selection.reads_nonrelevant(),
        params: selection.params.clone(),
        ..EvalOptions::default()
    };
    match evaluate_reader(
        &qrels,
        Cursor::new(run_bytes),
        run_path,
        &selection.measures,
        &opts,
    ) {
        Ok(ev) => {
            for v in ev
                .summary
                .iter()
                .chain(ev.per_query.iter().flat_map(|q| q.values.iter()))
            {
                assert!(v.is_finite(), "non-finite value {v} in {ev:?}");
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.run"), "{e}"),
    }
}

#[cfg(any(feature = "harness", not(fuzzing)))]
/// One corpus record (`ranklab_engine::corpus::markdown::parse_record`).
pub fn front_matter(data: &[u8]) {
    use ranklab_engine::corpus::markdown::parse_record;
    match parse_record(Path::new("corpus/fuzz.md"), data) {
        Ok(d) => {
            assert!(ok_id(&d.id), "{:?}", d.id);
            assert!(!d.sections.is_empty());
            assert!(d.lifecycle_log.windows(2).all(|w| w[0].date <= w[1].date));
            if let Some(last) = d.lifecycle_log.last() {
                assert_eq!(last.lifecycle, d.lifecycle);
            }
            let _ = d.index_snapshot();
            let _ = d.fingerprint();
            for i in 0..d.sections.len() {
                let _ = d.section_text(i);
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.md"), "{e}"),
    }
}

#[cfg(any(feature = "harness", not(fuzzing)))]
/// A suite file and an experiments file with the same bytes (`Suite::load`,
/// `Experiments::load`); the corpus is not loaded.
pub fn suite_yaml(data: &[u8], scratch: &Path) {
    use ranklab::suite::{Experiments, Suite, MAX_K};
    let path = scratch.join("suite.yaml");
    std::fs::write(&path, data).expect("write scratch file");
    match Suite::load(&path) {
        Ok(s) => {
            assert!(!s.tasks.is_empty());
            assert!((1..=MAX_K).contains(&s.k));
            for t in &s.tasks {
                assert!(ok_id(&t.id), "{:?}", t.id);
                assert!((1..=MAX_K).contains(&t.k));
                assert!(t.expected.values().any(|&g| g >= 1));
                assert!(!t.query.trim().is_empty());
            }
        }
        Err(e) => assert!(format!("{e:#}").contains("suite.yaml"), "{e:#}"),
    }
    let path = scratch.join("experiments.yaml");
    std::fs::write(&path, data).expect("write scratch file");
    match Experiments::load(&path) {
        Ok(ex) => {
            assert!(!ex.configurations.is_empty());
            assert!(ex.configurations.iter().any(|c| c.name == ex.baseline()));
            for c in &ex.configurations {
                assert!(ok_id(&c.name) && !c.name.contains('/'), "{:?}", c.name);
                assert!((1..=MAX_K).contains(&c.depth()));
            }
        }
        Err(e) => assert!(format!("{e:#}").contains("experiments.yaml"), "{e:#}"),
    }
}

#[cfg(any(feature = "harness", not(fuzzing)))]
/// The BEIR loaders: the same bytes as `corpus.jsonl`, `queries.jsonl` and `qrels/test.tsv`.
pub fn beir(data: &[u8], scratch: &Path) {
    use ranklab_engine::corpus::beir::{load_corpus, load_qrels, load_queries};
    let corpus = scratch.join("corpus.jsonl");
    std::fs::write(&corpus, data).expect("write scratch file");
    match load_corpus(&corpus) {
        Ok(c) => {
            assert!(!c.is_empty());
            for d in &c.docs {
                assert!(ok_id(&d.id), "{:?}", d.id);
                assert_eq!(c.get(&d.id).map(|x| &x.id), Some(&d.id));
            }
        }
        Err(e) => assert!(e.to_string().contains("corpus.jsonl"), "{e}"),
    }
    let queries = scratch.join("queries.jsonl");
    std::fs::write(&queries, data).expect("write scratch file");
    match load_queries(&queries) {
        Ok(qs) => assert!(qs.iter().all(|q| ok_id(&q.id))),
        Err(e) => assert!(e.to_string().contains("queries.jsonl"), "{e}"),
    }
    let qrels = scratch.join("qrels").join("test.tsv");
    std::fs::create_dir_all(scratch.join("qrels")).expect("scratch directory");
    std::fs::write(&qrels, data).expect("write scratch file");
    match load_qrels(&qrels) {
        Ok(js) => assert!(js.iter().all(|j| ok_id(&j.query) && ok_id(&j.doc))),
        Err(e) => assert!(e.to_string().contains("test.tsv"), "{e}"),
    }
}

// The HTTP client's response reader: the file itself when fuzzing (no ranklab to build), the
// crate's module in ranklab's tests (so its unit tests are not compiled twice).
#[cfg(fuzzing)]
#[allow(dead_code)]
#[path = "../../harness/src/external/wire.rs"]
mod wire;
#[cfg(not(fuzzing))]
use ranklab::external::wire;

/// Gives `data` at most `piece` bytes per read, then the end of the connection.
struct Pieces<'a> {
    data: &'a [u8],
    piece: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.len().min(self.piece).min(out.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// A response and its body, or the failure's text and whether it was "stale" (nothing arrived).
type Read1 = Result<(wire::Response, Vec<u8>), (bool, String)>;

fn read_response(data: &[u8], piece: usize) -> Read1 {
    let mut s = Pieces { data, piece };
    let hour = std::time::Duration::from_secs(3600);
    let (mut buf, mut scratch, mut body) = (Vec::new(), vec![0; 64 * 1024], Vec::new());
    let deadline = std::time::Instant::now() + hour;
    match wire::read_response(&mut s, deadline, hour, &mut buf, &mut scratch, &mut body) {
        Ok(r) => Ok((r, body)),
        Err(wire::Attempt::Stale(f)) => Err((true, format!("{f:?}"))),
        Err(wire::Attempt::Failed(f)) => Err((false, format!("{f:?}"))),
    }
}

/// An engine's answer to an `http://` request (`wire::read_response`, what ranklab's HTTP
/// client reads after sending a request): `data` is everything the engine sends before it closes
/// the connection, read once as it comes (up to 64 KiB a read) and once a byte per read.
/// Checks beyond "no panic":
/// - the outcome does not depend on how the bytes arrive: both readings give the same status,
///   body and `Retry-After`, or both fail;
/// - a failure is "stale" (the request may be sent again) exactly when no byte arrived;
/// - the status is a final one (not 1xx, at most 999); the body is no longer than the input, and
///   with one `Content-Length` header exactly that long.
pub fn http_response(data: &[u8]) {
    let whole = read_response(data, usize::MAX);
    let bytewise = read_response(data, 1);
    match (&whole, &bytewise) {
        (Ok((a, ab)), Ok((b, bb))) => {
            assert_eq!(
                (a.status, &a.retry_after, ab),
                (b.status, &b.retry_after, bb)
            );
        }
        (Err((a, _)), Err((b, _))) => assert_eq!(a, b, "{whole:?} {bytewise:?}"),
        _ => panic!("the outcome depends on how the bytes arrive: {whole:?} / {bytewise:?}"),
    }
    match &whole {
        Ok((r, body)) => {
            assert!(!(100..200).contains(&r.status) && r.status <= 999, "{r:?}");
            assert!(body.len() <= data.len());
            if let Some(n) = content_length(data) {
                if !chunked(data) && r.status != 204 && r.status != 304 {
                    assert_eq!(body.len(), n, "{r:?}");
                }
            }
        }
        Err((stale, e)) => assert_eq!(*stale, data.is_empty(), "{e}"),
    }
}

/// The value of the only `Content-Length` header of the only response head in `data` (None when
/// there is not exactly one head, one such header, or it is not a number). A line scan written
/// for the check, not the parser under test.
fn content_length(data: &[u8]) -> Option<usize> {
    let end = data.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&data[..end]).ok()?;
    // One final head, lines ending in CRLF (a bare LF could end the head elsewhere).
    let bare_lf = head
        .match_indices('\n')
        .any(|(i, _)| !head[..i].ends_with('\r'));
    if !head.starts_with("HTTP/1.") || head.get(9..10) == Some("1") || bare_lf {
        return None;
    }
    let mut values = head.split("\r\n").skip(1).filter_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("content-length").then(|| v.trim())
    });
    let v = values.next()?;
    if values.next().is_some() {
        return None;
    }
    v.parse().ok()
}

fn chunked(data: &[u8]) -> bool {
    data.windows(17)
        .any(|w| w.eq_ignore_ascii_case(b"transfer-encoding"))
}
