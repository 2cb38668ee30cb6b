"""The ir_measures provider (treclab.ir_measures_provider) against ir_measures' own default
providers (pytrec_eval): the
oracle is ir_measures.calc_aggregate before treclab is put in its pipeline. (Judged@k is not
offered: ir_measures divides by the documents retrieved when fewer than k, ranklab by k.) Properties checked:
- on trec_eval's test files and on the first 200 seeded random cases of the Rust suite, every
  aggregate of the measures both support equals ir_measures' within 1e-9;
- per query (iter_calc), the same values for the same (query, measure) pairs;
- after use_as_default(), ir_measures.calc_aggregate runs on treclab (first in the pipeline)
  and still gives those numbers."""

import math

import pytest

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pytrec_eval")

from ir_measures import AP, P, R, RR, Bpref, NumRel, NumRet, Rprec, SetP, SetR, Success, nDCG

from conftest import read_trec
from test_pytrec_random import all_cases

MEASURES = [
    nDCG @ 10, nDCG, AP, AP @ 100, P @ 5, P @ 10, P(rel=2) @ 5, R @ 100, RR, RR(rel=2), Rprec,
    Bpref, Success @ 5, NumRet, NumRet(rel=1), NumRel, SetP, SetR,
]


def assert_same(got, want, what):
    for m in MEASURES:
        assert math.isclose(got[m], want[m], abs_tol=1e-9), f"{what} {m}: {got[m]} != {want[m]}"


@pytest.fixture(scope="module")
def provider():
    from treclab.ir_measures_provider import provider

    assert ir_measures.providers.registry["treclab"] is provider
    return provider


def test_trec_eval_files(provider, trec_dir):
    q, r = read_trec(trec_dir / "qrels.test", False), read_trec(trec_dir / "results.test", True)
    want = ir_measures.calc_aggregate(MEASURES, q, r)
    assert_same(provider.calc_aggregate(MEASURES, q, r), want, "trec_eval files")
    per_q = {(m.query_id, m.measure): m.value for m in provider.iter_calc(MEASURES, q, r)}
    want_q = {(m.query_id, m.measure): m.value for m in ir_measures.iter_calc(MEASURES, q, r)}
    assert per_q.keys() == want_q.keys()
    assert all(math.isclose(per_q[k], want_q[k], abs_tol=1e-9) for k in want_q)


def test_random_cases(provider):
    for n, (q, r) in enumerate(all_cases()[:200]):
        want = ir_measures.calc_aggregate(MEASURES, q, r)
        assert_same(provider.calc_aggregate(MEASURES, q, r), want, f"case {n}")


def test_use_as_default(provider, trec_dir):
    from treclab.ir_measures_provider import use_as_default

    q, r = read_trec(trec_dir / "qrels.test", False), read_trec(trec_dir / "results.test", True)
    want = ir_measures.calc_aggregate(MEASURES, q, r)
    use_as_default()
    try:
        assert ir_measures.DefaultPipeline.providers[0] is provider
        assert_same(ir_measures.calc_aggregate(MEASURES, q, r), want, "default pipeline")
    finally:
        ir_measures.DefaultPipeline.providers.remove(provider)


def test_module_docstring_example():
    import doctest

    import treclab.ir_measures_provider as mod

    result = doctest.testmod(mod)
    assert result.attempted >= 5 and result.failed == 0
