"""Every input form gives the numbers of the file form (the file, read by the Rust parser, is
the reference; the file form itself is checked against trec_eval's outputs in
test_trec_eval_files.py): str path, pathlib.Path, dict, pandas and polars DataFrames
(query_id, doc_id, relevance | score), ir_measures-style namedtuples (Qrel, ScoredDoc) and plain
tuples; a DataFrame with a document twice in a query, or without the needed columns, is refused
(the good frame beside it works)."""

from collections import namedtuple

import pytest

import treclab
from conftest import read_trec

Qrel = namedtuple("Qrel", "query_id doc_id relevance")  # ir_measures' field names
ScoredDoc = namedtuple("ScoredDoc", "query_id doc_id score")
MEASURES = ["map", "P.5,10", "ndcg_cut.10", "recall.100", "recip_rank", "bpref"]


def rows(d):
    return [(q, doc, v) for q, docs in d.items() for doc, v in docs.items()]


@pytest.fixture(scope="module")
def reference(trec_dir):
    q, r = trec_dir / "qrels.test", trec_dir / "results.test"
    return q, r, treclab.evaluate(str(q), str(r), MEASURES, per_query=True)


def forms(q_path, r_path):
    q, r = read_trec(q_path, False), read_trec(r_path, True)
    yield "path", q_path, r_path
    yield "dict", q, r
    yield "namedtuples", [Qrel(*t) for t in rows(q)], [ScoredDoc(*t) for t in rows(r)]
    yield "tuples", rows(q), iter(rows(r))


@pytest.mark.parametrize("form", ["path", "dict", "namedtuples", "tuples"])
def test_forms_equal_the_file(reference, form):
    q_path, r_path, want = reference
    (_, q, r), = [f for f in forms(q_path, r_path) if f[0] == form]
    assert treclab.evaluate(q, r, MEASURES, per_query=True) == want


@pytest.mark.parametrize("lib", ["pandas", "polars"])
def test_dataframes_equal_the_file(reference, lib):
    mod = pytest.importorskip(lib)
    q_path, r_path, want = reference
    cols_q, cols_r = ["query_id", "doc_id", "relevance"], ["query_id", "doc_id", "score"]
    if lib == "pandas":
        qf = mod.DataFrame(rows(read_trec(q_path, False)), columns=cols_q)
        rf = mod.DataFrame(rows(read_trec(r_path, True)), columns=cols_r)
    else:
        qf = mod.DataFrame(rows(read_trec(q_path, False)), schema=cols_q, orient="row")
        rf = mod.DataFrame(rows(read_trec(r_path, True)), schema=cols_r, orient="row")
    assert treclab.evaluate(qf, rf, MEASURES, per_query=True) == want
    assert treclab.RelevanceEvaluator(qf, set(MEASURES)).evaluate(rf) == want


def frame(lib, rows, columns):
    """A pandas or polars DataFrame of `rows` (the installed library; the test is skipped without it)."""
    mod = pytest.importorskip(lib)
    if lib == "pandas":
        return mod.DataFrame(rows, columns=columns)
    return mod.DataFrame(rows, schema=columns, orient="row")


@pytest.mark.parametrize("lib", ["pandas", "polars"])
def test_bad_dataframes_are_refused(lib):
    qcols, rcols = ["query_id", "doc_id", "relevance"], ["query_id", "doc_id", "score"]
    qf = frame(lib, [("q1", "a", 1)], qcols)
    good = frame(lib, [("q1", "a", 1.0), ("q1", "b", 0.5)], rcols)
    assert treclab.evaluate(qf, good, "P.1") == {"P_1": 1.0}
    twice = frame(lib, [("q1", "a", 1.0), ("q1", "a", 0.5)], rcols)
    with pytest.raises(ValueError, match=r"document `a` appears twice in query `q1`"):
        treclab.evaluate(qf, twice, "P.1")
    renamed = frame(lib, [("q1", "a", 1.0), ("q1", "b", 0.5)], ["query_id", "doc_id", "sim"])
    with pytest.raises(ValueError, match=r"needs the columns query_id, doc_id, score; missing: score"):
        treclab.evaluate(qf, renamed, "P.1")
    ints = frame(lib, [(1, "a", 1.0)], rcols)
    with pytest.raises(ValueError, match=r"query id 1 is a int, not a str"):
        treclab.evaluate(qf, ints, "P.1")


def test_polars_is_not_needed(tmp_path):
    """treclab imports and evaluates without polars (nor pandas): they are only touched through
    a frame the caller passes. Run from an empty directory, so that the installed package is
    imported, not python/treclab."""
    import subprocess
    import sys

    code = "import sys; sys.modules['polars'] = sys.modules['pandas'] = None; import treclab; print(treclab.evaluate({'q': {'a': 1}}, {'q': {'a': 1.0}}, 'P.1'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip() == "{'P_1': 1.0}"
