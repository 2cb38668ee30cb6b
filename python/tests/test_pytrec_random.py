"""treclab against trec_eval's C code behind Python (pytrec-eval-terrier 0.5.11, pinned) on the
seeded random cases of the Rust suite (harness/tests/pytrec_random.rs: the same xorshift64*
generator, seed and case shapes: graded, 0 and -1 judgments, runs with many ties, queries
missing from the run or from the qrels, queries judged without a relevant document).
Properties checked, on every case, at relevance levels 1 and 2 and with judged_only:
- RelevanceEvaluator(qrels, measures).evaluate(run) has pytrec_eval's shape (the same queries,
  the same measure names) and its values, within 1e-9;
- evaluate(qrels, run, measures) (the summary) is the mean of pytrec_eval's per-query values
  (the sum for counts) over the queries both hold, within 1e-9;
- with complete=True, it is that sum divided by the number of qrels queries.
Not compared (as in the Rust test): rbp, rbp_resid, unj, relstring (pytrec_eval 0.5.11 predates
them or gives no number), iprec_at_recall and 11pt_avg (pytrec_eval bundles trec_eval 9's
rounding of recall points; out.test.aq pins 10.0's, test_trec_eval_files.py checks it), and the
geometric means gm_map, gm_bpref (not per-query measures in trec_eval 10.0's output).
"""

import math

import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

import treclab

CASES = 520
SEED = 0x5EED_1313
MASK = (1 << 64) - 1

FAMILIES = [
    "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P", "recall",
    "infAP", "Rprec_mult", "utility", "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut",
    "map_cut", "relative_P", "success", "set_P", "set_recall", "set_relative_P", "set_map",
    "set_F", "num_nonrel_judged_ret",
]
COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}


class Rng:
    """xorshift64*, as harness/tests/pytrec_random.rs."""

    def __init__(self, seed: int) -> None:
        self.s = seed

    def next(self) -> int:
        s = self.s
        s ^= s >> 12
        s ^= (s << 25) & MASK
        s ^= s >> 27
        self.s = s
        return (s * 0x2545_F491_4F6C_DD1D) & MASK

    def below(self, n: int) -> int:
        return self.next() % n


def case(rng: Rng):
    """One case, as `case` in pytrec_random.rs, as dicts."""
    nq = 1 + rng.below(5)
    pool = 10 + rng.below(40)
    qids = []
    for i in range(nq + 2):
        q = f"q{100 + i * 7 % 13}"
        if not qids or qids[-1] != q:
            qids.append(q)
    qrels, run = {}, {}
    for i, q in enumerate(qids):
        in_qrels = i < nq
        in_run = rng.below(6) != 0 or not in_qrels
        if in_qrels:
            n = 1 + rng.below(min(pool, 30))
            docs = set()
            while len(docs) < n:
                docs.add(rng.below(pool))
            all_zero = rng.below(8) == 0
            for j, d in enumerate(sorted(docs)):
                rel = 0 if all_zero else [-1, 0, 0, 0, 1, 1, 2, 3][rng.below(8)]
                qrels.setdefault(q, {})[f"d{d}"] = max(rel, 0) if j == 0 else rel
        if in_run:
            n = 1 + rng.below(min(pool, 50))
            docs = set()
            while len(docs) < n:
                docs.add(rng.below(pool + 10))
            levels = 1 + rng.below(8)
            for d in sorted(docs):
                run.setdefault(q, {})[f"d{d}"] = rng.below(levels) * 0.25 - 0.5
    if not run:
        run = {qids[0]: {"d0": 1.0}}
    return qrels, run


def all_cases():
    rng = Rng(SEED)
    return [case(rng) for _ in range(CASES)]


CONFIGS = [
    {"relevance_level": 1, "judged_docs_only_flag": False},
    {"relevance_level": 2, "judged_docs_only_flag": False},
    {"relevance_level": 1, "judged_docs_only_flag": True},
]


@pytest.mark.parametrize("config", CONFIGS, ids=["level1", "level2", "judged_only"])
def test_random_cases_match_pytrec_eval(config):
    checked = 0
    for n, (qrels, run) in enumerate(all_cases()):
        want = pytrec_eval.RelevanceEvaluator(qrels, set(FAMILIES), **config).evaluate(run)
        got = treclab.RelevanceEvaluator(qrels, set(FAMILIES), **config).evaluate(run)
        assert set(got) == set(want), f"case {n}: queries {sorted(got)} != {sorted(want)}"
        for qid, values in want.items():
            assert set(got[qid]) == set(values), f"case {n} {qid}: names differ: {set(got[qid]) ^ set(values)}"
            for m, v in values.items():
                assert math.isclose(got[qid][m], v, abs_tol=1e-9), f"case {n} {qid} {m}: {got[qid][m]} != {v}"
                checked += 1
        # The summary: the mean over the queries trec_eval averages (sum for counts).
        common = {q: d for q, d in qrels.items() if q in run}
        kw = {"relevance_level": config["relevance_level"], "judged_only": config["judged_docs_only_flag"]}
        if common:
            summary = treclab.evaluate(common, run, FAMILIES, **kw)
            for m in want[next(iter(want))]:
                values = [want[q][m] for q in want]
                mean = sum(values) if m in COUNTS else sum(values) / len(values)
                assert math.isclose(summary[m], mean, abs_tol=1e-9), f"case {n} {m}: {summary[m]} != {mean}"
        complete = treclab.evaluate(qrels, run, FAMILIES + ["num_q"], complete=True, **kw)
        assert complete["num_q"] == len(qrels)
        for m in ("map", "P_10", "ndcg_cut_10", "recall_100", "recip_rank"):
            total = sum(want[q][m] for q in want)
            assert math.isclose(complete[m], total / len(qrels), abs_tol=1e-9), f"case {n} {m} under complete"
    assert checked > 100_000
