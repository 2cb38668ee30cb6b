"""An ir_measures provider that computes on treclab (ranklab's Rust evaluator).

ir_measures (0.4.3) has no entry point for third-party providers: its registry is a dict that
``ir_measures.providers.register`` fills, and ``ir_measures.calc_aggregate`` runs a
``DefaultPipeline`` whose list of providers is fixed when ir_measures is imported. So importing
this module registers the provider under the name ``treclab`` (``ir_measures.providers.registry
["treclab"]``), and :func:`use_as_default` puts it first in ``DefaultPipeline``, after which
``ir_measures.calc_aggregate([nDCG@10, AP], qrels, run)`` runs on treclab for the measures it
supports (the others fall through to ir_measures' own providers). ``Judged@k`` is left to
ir_measures' ``judged`` provider: ir_measures divides by the documents retrieved when a query
has fewer than k, ranklab's ``Judged@k`` always by k. A registration without that
call would need ir_measures to read an entry point group (a change on their side).

>>> import ir_measures
>>> from ir_measures import nDCG, AP, P
>>> from treclab.ir_measures_provider import provider
>>> qrels = {"q1": {"a": 1, "b": 2}}
>>> run = {"q1": {"a": 2.0, "b": 1.0, "c": 0.5}}
>>> provider.calc_aggregate([AP, P@2, nDCG@10], qrels, run)
{AP: 1.0, P@2: 1.0, nDCG@10: 0.8597186998521972}
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, Tuple

import ir_measures
from ir_measures import Metric, measures, providers
from ir_measures.providers.base import NOT_PROVIDED, Any as AnyValue, Choices

from . import RelevanceEvaluator

__all__ = ["TreclabProvider", "provider", "use_as_default"]


def _rel(measure: Any) -> int:
    rel = measure["rel"]
    return 1 if rel is NOT_PROVIDED else rel


def _spec(measure: Any) -> Tuple[Tuple[int, bool], str, str]:
    """(rel level, judged_only), the measure for treclab, the name treclab gives back."""
    name = measure.NAME
    params = measure.params if hasattr(measure, "params") else {}
    judged = bool(params.get("judged_only", False)) if params.get("judged_only", False) is not NOT_PROVIDED else False
    cutoff = params.get("cutoff", NOT_PROVIDED)
    if name == "P":
        return (_rel(measure), judged), f"P.{cutoff}", f"P_{cutoff}"
    if name == "RR":
        return (_rel(measure), judged), "recip_rank", "recip_rank"
    if name == "Rprec":
        return (_rel(measure), judged), "Rprec", "Rprec"
    if name == "AP":
        if cutoff is NOT_PROVIDED:
            return (_rel(measure), judged), "map", "map"
        return (_rel(measure), judged), f"map_cut.{cutoff}", f"map_cut_{cutoff}"
    if name == "nDCG":
        if cutoff is NOT_PROVIDED:
            return (1, judged), "ndcg", "ndcg"
        return (1, judged), f"ndcg_cut.{cutoff}", f"ndcg_cut_{cutoff}"
    if name == "R":
        return (1, judged), f"recall.{cutoff}", f"recall_{cutoff}"
    if name == "Bpref":
        return (_rel(measure), False), "bpref", "bpref"
    if name == "Success":
        return (_rel(measure), judged), f"success.{cutoff}", f"success_{cutoff}"
    if name == "NumRet":
        if measure["rel"] is NOT_PROVIDED:
            return (1, False), "num_ret", "num_ret"
        return (measure["rel"], False), "num_rel_ret", "num_rel_ret"
    if name == "NumRel":
        return (1, False), "num_rel", "num_rel"
    if name == "SetP":
        return (_rel(measure), judged), "set_P", "set_P"
    if name == "SetR":
        return (_rel(measure), False), "set_recall", "set_recall"
    raise ValueError(f"treclab's ir_measures provider does not support {measure}")


class TreclabProvider(providers.Provider):
    """treclab: ranklab's Rust evaluator, trec_eval 10.0's numbers (pytrec_eval's, faster)."""

    NAME = "treclab"
    SUPPORTED_MEASURES = [
        measures._P(cutoff=AnyValue(), rel=AnyValue(), judged_only=AnyValue()),
        measures._RR(cutoff=Choices(NOT_PROVIDED), rel=AnyValue(), judged_only=AnyValue()),
        measures._Rprec(rel=AnyValue(), judged_only=AnyValue()),
        measures._AP(cutoff=AnyValue(), rel=AnyValue(), judged_only=AnyValue()),
        measures._nDCG(cutoff=AnyValue(), dcg=Choices("log2"), gains=Choices(NOT_PROVIDED), judged_only=AnyValue()),
        measures._R(cutoff=AnyValue(), judged_only=AnyValue()),
        measures._Bpref(rel=AnyValue()),
        measures._Success(rel=AnyValue(), cutoff=AnyValue(), judged_only=AnyValue()),
        measures._NumRet(rel=AnyValue()),
        measures._NumRel(rel=Choices(1)),
        measures._SetP(rel=AnyValue(), relative=Choices(False), judged_only=AnyValue()),
        measures._SetR(rel=AnyValue()),
    ]

    def _evaluator(self, measures, qrels):
        qrels = ir_measures.util.QrelsConverter(qrels).as_dict_of_dict()
        groups: Dict[Tuple[int, bool], Dict[str, Tuple[Any, str]]] = defaultdict(dict)
        for m in measures:
            key, spec, out = _spec(m)
            groups[key][out] = (m, spec)
        evaluators = [
            (RelevanceEvaluator(qrels, [s for _, s in by_name.values()], relevance_level=rel, judged_docs_only_flag=judged), by_name)
            for (rel, judged), by_name in groups.items()
        ]
        return _Evaluator(measures, set(qrels), evaluators)

    def install_instructions(self):
        return "pip install treclab (built from ranklab's python/ folder)"


class _Evaluator(providers.Evaluator):
    def __init__(self, measures, qrel_qids, evaluators):
        super().__init__(measures, qrel_qids)
        self.evaluators = evaluators

    def _iter_calc(self, run):
        run = ir_measures.util.RunConverter(run).as_dict_of_dict()
        for evaluator, by_name in self.evaluators:
            for qid, values in evaluator.evaluate(run).items():
                for out, (measure, _) in by_name.items():
                    if out in values:
                        yield Metric(query_id=qid, measure=measure, value=values[out])


#: The registered provider (``ir_measures.providers.registry["treclab"]``).
provider = TreclabProvider()
providers.register(provider)


def use_as_default() -> None:
    """Put treclab first in ``ir_measures.DefaultPipeline`` (what ``ir_measures.calc_aggregate``
    and friends run), once; measures it does not support fall through to the others."""
    pipeline = ir_measures.DefaultPipeline.providers
    if provider not in pipeline:
        pipeline.insert(0, provider)
