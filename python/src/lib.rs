//! `treclab._native`: the Python bindings of ranklab's evaluator (what `ranklab eval` runs).
//!
//! No measure is computed here: measures are resolved by [`ranklab_eval::metrics::Selection`] (the
//! CLI's `-m` parser), files are parsed by [`ranklab_eval::trec`] and evaluated by
//! [`ranklab_eval::trec::evaluate_run`], exactly as the CLI does, with the GIL released.
//!
//! A run dict is walked once, with the GIL held (it is made of Python objects), checked on the
//! way (string ids without whitespace, finite scores), each query's documents given to a
//! [`ranklab_eval::trec::RunFeed`]: the blocks, ranking and values of the file reader, without TREC
//! text. A qrels dict (small) becomes TREC text read by the qrels parser.
//!
//! Errors become Python exceptions carrying the CLI's message: `ValueError` for bad input
//! (file and line for a malformed file, the nearest names for an unknown measure), `OSError`
//! when a file cannot be read.

use std::borrow::Cow;
use std::error::Error as _;
use std::path::{Path, PathBuf};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use ranklab_eval::metrics::{Measure, Selection};
use ranklab_eval::trec::{evaluate_run, EvalOptions, Evaluation, Qrels, RunFeed, TrecError};

/// The name a qrels dict goes by in messages.
const QRELS_DICT: &str = "<qrels dict>";
/// The name a run dict goes by in messages.
const RUN_DICT: &str = "<run dict>";

/// A qrels or run: a file the Rust parser reads, or a dict already turned into TREC text.
enum Source {
    File(PathBuf),
    Text(Vec<u8>),
}

/// A run argument: a file, or a dict walked straight into the evaluator.
enum RunSource<'a, 'py> {
    File(PathBuf),
    Dict(&'a Bound<'py, PyDict>),
}

fn run_source<'a, 'py>(obj: &'a Bound<'py, PyAny>) -> PyResult<RunSource<'a, 'py>> {
    match obj.cast::<PyDict>() {
        Ok(dict) => Ok(RunSource::Dict(dict)),
        Err(_) => match obj.extract::<PathBuf>() {
            Ok(path) => Ok(RunSource::File(path)),
            Err(_) => Err(not_a_source(obj, "run")),
        },
    }
}

fn not_a_source(obj: &Bound<'_, PyAny>, what: &str) -> PyErr {
    PyValueError::new_err(format!(
        "{what}: expected a path (str or os.PathLike) or a dict {{query_id: {{doc_id: \
         value}}}}, got {}",
        type_name(obj)
    ))
}

/// Gives a run dict's documents to `feed`, query by query, checking ids and scores as
/// [`run_line`] does. A [`TrecError`] of the feed (a repeated query cannot happen in a dict)
/// comes back as the outer error; the inner one is a Python error (bad id or score).
fn feed_dict(dict: &Bound<'_, PyDict>, feed: &mut RunFeed<'_>) -> Result<PyResult<()>, TrecError> {
    for (qid, docs) in dict.iter() {
        let qid = match id(&qid, "run", "query id", None) {
            Ok(q) => q,
            Err(e) => return Ok(Err(e)),
        };
        let docs = match docs.cast::<PyDict>() {
            Ok(d) => d,
            Err(_) => {
                return Ok(Err(PyValueError::new_err(format!(
                    "run: the value of query `{qid}` must be a dict {{doc_id: value}}, got {}",
                    type_name(&docs)
                ))))
            }
        };
        feed.query(&qid)?;
        for (doc, value) in docs.iter() {
            let doc = match id(&doc, "run", "document id", Some(&qid)) {
                Ok(d) => d,
                Err(e) => return Ok(Err(e)),
            };
            match score(&qid, &doc, &value) {
                Ok(s) => feed.push(&doc, s),
                Err(e) => return Ok(Err(e)),
            }
        }
    }
    Ok(Ok(()))
}

/// Reads a qrels or run argument: a path (`str` or `os.PathLike`) or a `{qid: {docid: value}}`
/// dict, walked into TREC lines by `line` (which checks the value and appends one line).
fn source(
    obj: &Bound<'_, PyAny>,
    what: &str,
    line: impl Fn(&mut Vec<u8>, &str, &str, &Bound<'_, PyAny>) -> PyResult<()>,
) -> PyResult<Source> {
    let Ok(dict) = obj.cast::<PyDict>() else {
        return match obj.extract::<PathBuf>() {
            Ok(path) => Ok(Source::File(path)),
            Err(_) => Err(not_a_source(obj, what)),
        };
    };
    let mut text = Vec::with_capacity(dict.len() * 64);
    for (qid, docs) in dict.iter() {
        let qid = id(&qid, what, "query id", None)?;
        let docs = docs.cast::<PyDict>().map_err(|_| {
            PyValueError::new_err(format!(
                "{what}: the value of query `{qid}` must be a dict {{doc_id: value}}, got {}",
                type_name(&docs)
            ))
        })?;
        for (doc, value) in docs.iter() {
            let doc = id(&doc, what, "document id", Some(&qid))?;
            line(&mut text, &qid, &doc, &value)?;
        }
    }
    Ok(Source::Text(text))
}

/// An id of a dict: a non-empty `str` without whitespace (a TREC field). Borrowed when Python
/// can lend its UTF-8 bytes; the message's place is only built on an error.
fn id<'a>(
    obj: &'a Bound<'_, PyAny>,
    what: &str,
    kind: &str,
    qid: Option<&str>,
) -> PyResult<Cow<'a, str>> {
    let place = || qid.map(|q| format!(" in query `{q}`")).unwrap_or_default();
    let s = obj.cast::<PyString>().map_err(|_| {
        PyValueError::new_err(format!(
            "{what}: {kind} {}{} is a {}, not a str; ids are strings, as in a TREC file \
             (convert them with str())",
            repr(obj),
            place(),
            type_name(obj)
        ))
    })?;
    let s = utf8::text(s).map_err(|_| {
        PyValueError::new_err(format!(
            "{what}: {kind} {}{} holds an unpaired surrogate, which is not text that UTF-8 can \
             encode; ids are written to and compared as UTF-8",
            repr(obj),
            place()
        ))
    })?;
    let blank = if s.is_ascii() {
        s.bytes().any(|b| b.is_ascii_whitespace())
    } else {
        s.contains(char::is_whitespace)
    };
    if s.is_empty() || blank {
        return Err(PyValueError::new_err(format!(
            "{what}: {kind} {}{} is empty or contains whitespace; TREC ids are single fields",
            repr(obj),
            place()
        )));
    }
    Ok(s)
}

/// `qid 0 docid rel`: the judgment must be an integer (a `bool` is refused too).
fn qrels_line(out: &mut Vec<u8>, qid: &str, doc: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let rel = match value.cast::<PyInt>() {
        Ok(i) if !value.is_instance_of::<PyBool>() => i.extract::<i32>().ok(),
        _ => None,
    };
    let Some(rel) = rel else {
        return Err(PyValueError::new_err(format!(
            "qrels: the judgment of document `{doc}` in query `{qid}` is {} ({}), not an \
             integer; judgments are integers such as 0, 1 or 2",
            repr(value),
            type_name(value)
        )));
    };
    for part in [qid.as_bytes(), b" 0 ", doc.as_bytes(), b" "] {
        out.extend_from_slice(part);
    }
    out.extend_from_slice(rel.to_string().as_bytes());
    out.push(b'\n');
    Ok(())
}

/// A score: a finite number (`int` or `float`, not `bool`).
#[inline]
fn score(qid: &str, doc: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    let score = if let Ok(f) = value.cast::<PyFloat>() {
        Some(f.value())
    } else if value.is_instance_of::<PyBool>() {
        None
    } else {
        value.extract::<f64>().ok()
    };
    score.filter(|s| s.is_finite()).ok_or_else(|| {
        PyValueError::new_err(format!(
            "run: the score of document `{doc}` in query `{qid}` is {}, not a finite number; \
             scores must be finite numbers (NaN and infinity are rejected, as their order is \
             undefined)",
            repr(value)
        ))
    })
}

/// `qid Q0 docid 0 score treclab`: the score must be a finite number (`int` or `float`).
fn run_line(out: &mut Vec<u8>, qid: &str, doc: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let score = score(qid, doc, value)?;
    for part in [qid.as_bytes(), b" Q0 ", doc.as_bytes(), b" 0 "] {
        out.extend_from_slice(part);
    }
    out.extend_from_slice(ryu::Buffer::new().format_finite(score).as_bytes());
    out.extend_from_slice(b" treclab\n");
    Ok(())
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A [`TrecError`] as a Python exception, with its chain (`OSError` for an unreadable file).
fn trec_error(err: TrecError, qrels_dict: bool) -> PyErr {
    let mut msg = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    // The CLI's flag, in this API's words; a dict has no line to point at, nor a file.
    msg = msg.replace("pass -c to", "pass complete=True to");
    if let TrecError::Empty { path, kind, .. } = &err {
        if path == Path::new(QRELS_DICT) || path == Path::new(RUN_DICT) {
            return PyValueError::new_err(format!(
                "{kind}: the {kind} dict holds no document; pass {{query_id: {{doc_id: {}}}}}",
                if *kind == "run" { "score" } else { "judgment" }
            ));
        }
    }
    if qrels_dict {
        if let Some(rest) = msg
            .strip_prefix(QRELS_DICT)
            .and_then(|r| r.strip_prefix(':'))
        {
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == ':');
            msg = format!("qrels:{rest}");
        }
    }
    match err {
        TrecError::Io { .. } => PyOSError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

/// What one evaluation gives back, before it becomes Python objects.
struct Outcome {
    selection: Selection,
    evaluation: Evaluation,
}

fn read_qrels(qrels: Source) -> Result<Qrels, TrecError> {
    match qrels {
        Source::File(path) => Qrels::read(&path),
        Source::Text(text) => Qrels::from_reader(&text[..], Path::new(QRELS_DICT)),
    }
}

/// Evaluates `run` against `qrels` as `ranklab eval` does; returns `(summary, per_query)`:
/// `{name: value}` (with `runid` and `num_q` when the selection prints them) and, when
/// `per_query`, `{qid: {name: value}}` (else `None`). `skip_missing` leaves out the qrels
/// queries the run lacks (pytrec_eval's output), `summary_lines` includes `runid` and `num_q`.
#[pyfunction]
#[pyo3(signature = (qrels, run, measures, per_query, relevance_level, judged_only, complete, skip_missing, summary_lines))]
#[allow(clippy::too_many_arguments)]
fn evaluate<'py>(
    py: Python<'py>,
    qrels: &Bound<'py, PyAny>,
    run: &Bound<'py, PyAny>,
    measures: Vec<String>,
    per_query: bool,
    relevance_level: i32,
    judged_only: bool,
    complete: bool,
    skip_missing: bool,
    summary_lines: bool,
) -> PyResult<(Bound<'py, PyDict>, Option<Bound<'py, PyDict>>)> {
    if relevance_level < 0 {
        return Err(PyValueError::new_err(format!(
            "relevance_level={relevance_level}: the minimum judgment for a document to be \
             relevant is 0 or more (trec_eval -l)"
        )));
    }
    let selection =
        Selection::from_specs(&measures).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let opts = EvalOptions {
        rel_level: relevance_level,
        complete,
        max_docs: None,
        judged_only,
        all_judged: selection.reads_nonrelevant(),
        params: selection.params.clone(),
    };
    let qrels_dict = qrels.is_instance_of::<PyDict>();
    let qrels = source(qrels, "qrels", qrels_line)?;
    let run = run_source(run)?;
    let qrels = py
        .detach(move || read_qrels(qrels))
        .map_err(|e| trec_error(e, qrels_dict))?;
    let measures = &selection.measures;
    let evaluation = match run {
        RunSource::File(path) => py.detach(|| evaluate_run(&qrels, &path, measures, &opts)),
        RunSource::Dict(dict) => {
            let mut feed = RunFeed::new(&qrels, Path::new(RUN_DICT), measures, &opts);
            match feed_dict(dict, &mut feed) {
                Ok(Ok(())) => feed.finish().map(|mut ev| {
                    // The tag the run lines of a dict used to carry.
                    ev.runid = "treclab".into();
                    ev
                }),
                Ok(Err(bad_input)) => return Err(bad_input),
                Err(e) => Err(e),
            }
        }
    }
    .map_err(|e| trec_error(e, qrels_dict))?;
    let outcome = Outcome {
        selection,
        evaluation,
    };
    to_python(py, &outcome, per_query, skip_missing, summary_lines)
}

fn to_python<'py>(
    py: Python<'py>,
    outcome: &Outcome,
    per_query: bool,
    skip_missing: bool,
    summary_lines: bool,
) -> PyResult<(Bound<'py, PyDict>, Option<Bound<'py, PyDict>>)> {
    let ev = &outcome.evaluation;
    let names: Vec<Bound<'py, PyString>> = ev
        .measures
        .iter()
        .map(|m| PyString::new(py, &outcome.selection.name(m)))
        .collect();
    let summary = PyDict::new(py);
    if summary_lines && outcome.selection.runid {
        summary.set_item("runid", &ev.runid)?;
    }
    if summary_lines && outcome.selection.num_q {
        summary.set_item("num_q", ev.num_q)?;
    }
    for ((m, name), v) in ev.measures.iter().zip(&names).zip(&ev.summary) {
        if m.in_summary() {
            summary.set_item(name, *v)?;
        }
    }
    if !per_query {
        return Ok((summary, None));
    }
    let queries = PyDict::new(py);
    for q in &ev.per_query {
        if skip_missing && q.missing {
            continue;
        }
        let values = PyDict::new(py);
        for ((m, name), v) in ev.measures.iter().zip(&names).zip(&q.values) {
            if *m == Measure::Relstring {
                values.set_item(name, q.relstring.as_deref().unwrap_or(""))?;
            } else if m.per_query() {
                values.set_item(name, *v)?;
            }
        }
        queries.set_item(&q.qid, values)?;
    }
    Ok((summary, Some(queries)))
}

/// The measure names `ranklab eval` prints for `measures` (trec_eval or ir_measures names), in
/// its order; `ValueError` for an unknown measure.
#[pyfunction]
fn measure_names(measures: Vec<String>) -> PyResult<Vec<String>> {
    let selection =
        Selection::from_specs(&measures).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(selection
        .measures
        .iter()
        .filter(|m| m.in_summary() || m.per_query())
        .map(|m| selection.name(m))
        .collect())
}

/// `ranklab compare --format json` on `qrels` and `runs` (`(name, path or dict)`, baseline
/// first): the command's JSON text, which `treclab.compare` turns into a table. Dicts are
/// written as TREC files named after their run (`<name>.trec`) in a temporary directory, so that
/// the command's labels are the names given.
#[pyfunction]
#[pyo3(signature = (qrels, runs, measures, relevance_level, complete, seed, judged_at, per_query))]
#[allow(clippy::too_many_arguments)]
fn compare(
    py: Python<'_>,
    qrels: &Bound<'_, PyAny>,
    runs: Vec<(String, Bound<'_, PyAny>)>,
    measures: Vec<String>,
    relevance_level: i32,
    complete: bool,
    seed: u64,
    judged_at: usize,
    per_query: bool,
) -> PyResult<String> {
    let qrels = source(qrels, "qrels", qrels_line)?;
    let mut sources = Vec::with_capacity(runs.len());
    for (name, run) in &runs {
        sources.push((
            name.clone(),
            source(run, &format!("run `{name}`"), run_line)?,
        ));
    }
    py.detach(move || -> anyhow::Result<String> {
        let dir = tempfile::tempdir()?;
        let file = |name: &str, src: Source| -> anyhow::Result<PathBuf> {
            match src {
                Source::File(path) => Ok(path),
                Source::Text(text) => {
                    let path = dir.path().join(format!("{name}.trec"));
                    std::fs::write(&path, text)?;
                    Ok(path)
                }
            }
        };
        let qrels = file("qrels", qrels)?;
        let mut paths = Vec::with_capacity(sources.len());
        for (i, (name, src)) in sources.into_iter().enumerate() {
            let safe = !name.is_empty()
                && name != "qrels"
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "-_+@=,".contains(c));
            let stem = if safe { name } else { format!("run{i}") };
            paths.push(file(&stem, src)?);
        }
        ranklab_eval::compare::compare_json(
            &qrels,
            &paths,
            &measures,
            relevance_level,
            complete,
            seed,
            judged_at,
            per_query,
        )
    })
    .map_err(|e| {
        PyValueError::new_err(format!("{e:#}").replace("pass -c to", "pass complete=True to"))
    })
}

/// A `str`'s UTF-8 text. This wheel targets CPython's stable ABI from 3.9, where the stable
/// function that lends a `str`'s UTF-8 bytes (`PyUnicode_AsUTF8AndSize`, stable from 3.10) is
/// not declared, so PyO3 copies them through a new `bytes` object: two allocations per id, the
/// largest cost of walking a run dict. CPython has exported that function, with this signature,
/// since 3.3; on Unix the extension resolves it from the interpreter at import, so it is
/// declared here and the bytes are borrowed (the `str` caches its UTF-8 form and keeps it as
/// long as it lives). Elsewhere (Windows links only the stable ABI), PyO3's copy.
mod utf8 {
    use std::borrow::Cow;

    use pyo3::prelude::*;
    use pyo3::types::PyString;

    #[cfg(unix)]
    #[allow(unsafe_code)]
    pub fn text<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, str>> {
        use pyo3::ffi::{PyObject, Py_ssize_t};
        use std::os::raw::c_char;
        extern "C" {
            fn PyUnicode_AsUTF8AndSize(
                unicode: *mut PyObject,
                size: *mut Py_ssize_t,
            ) -> *const c_char;
        }
        let mut len: Py_ssize_t = 0;
        // SAFETY: `s` is a live `str` and the GIL is held (a `Bound` proves both).
        let ptr = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut len) };
        if ptr.is_null() {
            // An unpaired surrogate: not encodable as UTF-8 (the Python error is set).
            return Err(PyErr::fetch(s.py()));
        }
        // SAFETY: on success CPython returns `len` bytes of valid UTF-8, cached in the `str`
        // object and freed with it; `s` borrows that object for `'a`.
        let text = unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                ptr.cast::<u8>(),
                len as usize,
            ))
        };
        Ok(Cow::Borrowed(text))
    }

    #[cfg(not(unix))]
    pub fn text<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, str>> {
        s.to_cow()
    }
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(measure_names, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add("DEFAULT_SEED", ranklab_eval::stats::DEFAULT_SEED)?;
    m.add("RANKLAB_VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add("SUPPORTED", ranklab_eval::metrics::IMPLEMENTED.to_vec())?;
    Ok(())
}
