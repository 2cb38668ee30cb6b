"""treclab.evaluate against trec_eval 10.0's own expected outputs (out.test, .a, .aq, .aqc,
.aql): the lines trec_eval printed are the oracle. Properties checked:
- from file paths and from dicts, every line of each expected file (every measure of
  all_trec, per query and `all`) equals treclab's value printed trec_eval's way (`%6.4f`,
  counts as integers, relstring quoted): the CLI's conformance test
  (harness/tests/conformance.rs) checks `ranklab eval` on the same files, so the two agree;
- treclab's output has no measure the expected file lacks (nothing extra, nothing missing);
- the per-query dict holds the qrels' queries, in trec_eval's (byte) order.
"""

import pytest

import treclab
from conftest import read_trec

COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "num_q"}

# (expected file, qrels, run, measures, keyword arguments), as conformance.rs runs them.
CASES = [
    ("out.test", "qrels.test", "results.test", ["official"], {}),
    ("out.test.a", "qrels.test", "results.test", ["all_trec"], {}),
    ("out.test.aq", "qrels.test", "results.test", ["all_trec"], {"per_query": True}),
    ("out.test.aqc", "qrels.test", "results.trunc", ["all_trec"], {"per_query": True, "complete": True}),
    (
        "out.test.aql",
        "qrels.rel_level",
        "results.test",
        ["all_trec", "relstring.20"],
        {"per_query": True, "relevance_level": 2},
    ),
]


def printed(name: str, value) -> str:
    """A value as trec_eval prints it."""
    if isinstance(value, str):
        return value if name == "runid" else f"'{value}'"
    if name in COUNTS:
        return str(int(value))
    return f"{value:6.4f}"


def expected(path):
    lines = {}
    for line in open(path):
        name, qid, value = line.rstrip("\n").split("\t")
        lines[(name.strip(), qid)] = value
    return lines


def got_lines(qrels, run, measures, kw):
    per_query = kw.get("per_query", False)
    got = {}
    if per_query:
        for qid, values in treclab.evaluate(qrels, run, measures, **kw).items():
            for name, v in values.items():
                got[(name, qid)] = printed(name, v)
    summary_kw = {k: v for k, v in kw.items() if k != "per_query"}
    for name, v in treclab.evaluate(qrels, run, measures, **summary_kw).items():
        got[(name, "all")] = printed(name, v)
    return got


@pytest.mark.parametrize("form", ["files", "dicts"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_equals_trec_eval_expected_output(trec_dir, case, form):
    out, qrels, run, measures, kw = case
    if form == "files":
        q, r = str(trec_dir / qrels), trec_dir / run  # a str and a Path
    else:
        q, r = read_trec(trec_dir / qrels, False), read_trec(trec_dir / run, True)
    want = expected(trec_dir / out)
    got = got_lines(q, r, measures, kw)
    if form == "dicts":
        # A dict has no run tag: the runid line is the files' business.
        want.pop(("runid", "all"), None)
        got.pop(("runid", "all"), None)
    differ = [(k, got.get(k), w) for k, w in want.items() if got.get(k) != w]
    assert not differ, f"{out}: {len(differ)} lines differ, e.g. {differ[:5]}"
    extra = sorted(set(got) - set(want))
    assert not extra, f"{out}: treclab gives lines trec_eval does not print: {extra[:5]}"


def test_per_query_order_is_trec_eval_order(trec_dir):
    got = treclab.evaluate(trec_dir / "qrels.test", trec_dir / "results.test", "map", per_query=True)
    qids = list(got)
    assert qids == sorted(qids, key=lambda s: s.encode())
    assert set(qids) == set(read_trec(trec_dir / "qrels.test", False))


def test_as_frame_when_pandas_is_installed(trec_dir):
    pd = pytest.importorskip("pandas")
    frame = treclab.evaluate(
        trec_dir / "qrels.test", trec_dir / "results.test", ["map", "P.10"], per_query=True, as_frame=True
    )
    plain = treclab.evaluate(trec_dir / "qrels.test", trec_dir / "results.test", ["map", "P.10"], per_query=True)
    assert isinstance(frame, pd.DataFrame)
    assert frame.loc["301", "map"] == plain["301"]["map"]
    assert list(frame.columns) == ["map", "P_10"]
