"""treclab: ranklab's trec_eval-exact evaluator for Python.

Every number comes from the Rust code of ``ranklab eval`` (the ``ranklab`` crate): the same
measure parser, the same TREC file reader, the same evaluator. Nothing is computed in Python.

>>> import treclab
>>> qrels = {"q1": {"d1": 1, "d2": 0, "d3": 2}}
>>> run = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}
>>> treclab.evaluate(qrels, run, ["map", "P.2", "nDCG@10"])
{'map': 0.8333333333333333, 'P_2': 0.5, 'ndcg_cut_10': 0.7601875334318685}
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from . import _native

__all__ = ["evaluate", "compare", "RelevanceEvaluator", "measure_names", "supported_measures"]

#: A qrels or run: a TREC file path, ``{query_id: {doc_id: judgment or score}}``, a pandas or
#: polars DataFrame (``query_id, doc_id, relevance | score``), or an iterable of ir_measures'
#: ``Qrel`` / ``ScoredDoc`` namedtuples.
Source = Union[str, "os.PathLike[str]", Mapping[str, Mapping[str, Union[int, float]]], Any]


def _specs(measures: Union[str, Iterable[str]]) -> list:
    """A list of measure specifications; a set is sorted so that the result is reproducible."""
    if isinstance(measures, str):
        return [measures]
    if isinstance(measures, (set, frozenset)):
        return sorted(measures)
    out = list(measures)
    for m in out:
        if not isinstance(m, str):
            raise ValueError(f"measures: {m!r} is not a str; name measures like 'map', 'P.10' or 'nDCG@10'")
    return out


def _column(frame: Any, name: str) -> list:
    col = frame[name]
    return col.tolist() if hasattr(col, "tolist") else col.to_list()


def _row(r: Any, value: str) -> tuple:
    """One ``(query_id, doc_id, value)`` row of an iterable qrels or run; a row that is not a
    sequence is a ``TypeError`` naming the argument."""
    if isinstance(r, (str, bytes)) or not isinstance(r, Iterable):
        what = "qrels" if value == "relevance" else "run"
        raise TypeError(
            f"{what}: expected a path, a dict {{query_id: {{doc_id: {value}}}}}, a DataFrame or "
            f"(query_id, doc_id, {value}) rows; got a row {r!r} of type {type(r).__name__}"
        )
    return tuple(r)


def _level(relevance_level: Any) -> int:
    """``relevance_level`` checked: an ``int`` (not a ``bool``) that trec_eval's ``-l`` can hold
    (0 to 2**31 - 1)."""
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int):
        raise TypeError(
            f"relevance_level must be an int, got {relevance_level!r} "
            f"({type(relevance_level).__name__})"
        )
    if not 0 <= relevance_level <= 2**31 - 1:
        raise ValueError(
            f"relevance_level={relevance_level}: out of range; it is the minimum judgment for a "
            "document to be relevant (trec_eval's -l), from 0 to 2147483647"
        )
    return relevance_level


def _source(x: Any, value: str = "relevance") -> Any:
    """A qrels (``value="relevance"``) or run (``value="score"``) as the native layer takes it:
    a path or a ``{query_id: {doc_id: value}}`` dict. DataFrames (pandas, polars) with columns
    ``query_id, doc_id, relevance | score`` and iterables of ir_measures' ``Qrel`` / ``ScoredDoc``
    namedtuples (or ``(query_id, doc_id, value)`` tuples) become such dicts; a document twice in
    one query is refused, as in a file."""
    if isinstance(x, (str, os.PathLike, dict)):
        return x
    if isinstance(x, Mapping):
        return {q: dict(d) if not isinstance(d, dict) else d for q, d in x.items()}
    if hasattr(x, "columns") and hasattr(x, "shape"):
        missing = [c for c in ("query_id", "doc_id", value) if c not in list(x.columns)]
        if missing:
            raise ValueError(
                f"a DataFrame given as {'qrels' if value == 'relevance' else 'run'} needs the columns "
                f"query_id, doc_id, {value}; missing: {', '.join(missing)}"
            )
        rows = zip(_column(x, "query_id"), _column(x, "doc_id"), _column(x, value))
    else:
        try:
            it = iter(x)
        except TypeError:
            return x  # the native layer names what it got
        rows = (
            (r.query_id, r.doc_id, getattr(r, value)) if hasattr(r, "query_id") else _row(r, value)
            for r in it
        )
    out: dict = {}
    for row in rows:
        if len(row) != 3:
            raise ValueError(f"expected (query_id, doc_id, {value}) rows, got {row!r}")
        q, d, v = row
        docs = out.setdefault(q, {})
        if d in docs:
            raise ValueError(f"document `{d}` appears twice in query `{q}`; keep one {value} per (query, document)")
        docs[d] = v
    return out


def evaluate(
    qrels: Source,
    run: Source,
    measures: Union[str, Iterable[str]],
    *,
    per_query: bool = False,
    relevance_level: int = 1,
    judged_only: bool = False,
    complete: bool = False,
    as_frame: bool = False,
) -> Any:
    """Evaluate ``run`` against ``qrels`` exactly as ``ranklab eval`` (and trec_eval 10.0) does.

    ``qrels`` and ``run`` are TREC file paths (parsed in Rust: the fastest way), dicts
    ``{query_id: {doc_id: judgment}}`` and ``{query_id: {doc_id: score}}`` (ids are ``str``,
    judgments ``int``, scores finite numbers), pandas or polars DataFrames with columns
    ``query_id, doc_id, relevance`` / ``query_id, doc_id, score``, or iterables of ir_measures'
    ``Qrel`` / ``ScoredDoc`` namedtuples. ``measures`` are trec_eval specifications
    (``"map"``, ``"P.5,10"``, ``"ndcg_cut.10"``, ``"official"``) or ir_measures names
    (``"nDCG@10"``, ``"R@100"``, ``"RR"``, ``"AP"``, ``"Judged@10"``), as ``ranklab eval -m``
    accepts them.

    Returns ``{measure: value}`` (the summary, keyed by trec_eval's output names such as
    ``ndcg_cut_10`` and ``P_10``; ``runid`` and ``num_q`` too when the measures include
    ``official`` or another nickname) or, with ``per_query=True``, ``{query_id: {measure:
    value}}`` for every query of the qrels. ``relevance_level`` is trec_eval's ``-l``,
    ``judged_only`` its ``-J``, ``complete`` its ``-c`` (a qrels query missing from the run
    counts 0; without it such a run is an error). ``as_frame=True`` returns a pandas DataFrame
    (one row per query with ``per_query``, else one row).

    Raises ``ValueError`` with the CLI's message on bad input: a malformed file (its name and
    line), an unknown measure (the nearest names), a dict id that is not a ``str``, a
    non-finite score, a judged query missing from the run without ``complete=True``.

    >>> qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 2}}
    >>> run = {"q1": {"a": 2.0, "x": 1.0}, "q2": {"y": 5, "c": 1}}
    >>> evaluate(qrels, run, ["P.1", "RR"], per_query=True)
    {'q1': {'recip_rank': 1.0, 'P_1': 1.0}, 'q2': {'recip_rank': 0.5, 'P_1': 0.0}}
    >>> evaluate(qrels, {"q1": {"a": 1.0}}, "map")
    Traceback (most recent call last):
    ...
    ValueError: qrels: query `q2` of the qrels has no results in run <run dict> (0 more such queries); pass complete=True to count missing queries as 0 in every average, or leave them out of the qrels to average over the others (trec_eval 10.0 does neither without -c: it gives a missing query the values of the query it evaluated before)
    >>> evaluate(qrels, {"q1": {"a": 1.0}}, "map", complete=True)
    {'map': 0.25}
    """
    summary, queries = _native.evaluate(
        _source(qrels),
        _source(run, "score"),
        _specs(measures),
        per_query,
        _level(relevance_level),
        judged_only,
        complete,
        False,
        True,
    )
    result = queries if per_query else summary
    if as_frame:
        return _frame(result, per_query)
    return result


def _frame(result: Dict[str, Any], per_query: bool) -> Any:
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("as_frame=True needs pandas: pip install pandas") from e
    if per_query:
        frame = pd.DataFrame.from_dict(result, orient="index")
        frame.index.name = "query_id"
        return frame
    return pd.DataFrame([result])


def measure_names(measures: Union[str, Iterable[str]]) -> list:
    """The output names ``evaluate`` gives for ``measures``, in trec_eval's order.

    >>> measure_names(["nDCG@10", "P.5,10", "AP"])
    ['map', 'P_5', 'P_10', 'ndcg_cut_10']
    """
    return _native.measure_names(_specs(measures))


def _merge_pytrec(measures: Iterable[str]) -> list:
    """pytrec_eval merges the parameters of one measure named several times (``{"P.5",
    "P.10"}`` gives P_5 and P_10); trec_eval (and ``evaluate``) keeps the first. Merge them."""
    merged: Dict[str, list] = {}
    plain: list = []
    for m in sorted(measures):
        name, dot, params = m.partition(".")
        if dot and params and all(p.strip().replace(".", "", 1).isdigit() for p in params.split(",")):
            cuts = merged.setdefault(name, [])
            for p in params.split(","):
                if p not in cuts:
                    cuts.append(p)
        else:
            plain.append(m)
    for name, cuts in merged.items():
        cuts.sort(key=float)
        plain.append(f"{name}.{','.join(cuts)}")
    return plain


class RelevanceEvaluator:
    """pytrec_eval's ``RelevanceEvaluator``, on ranklab: same signature, same output shape.

    ``RelevanceEvaluator(qrels, measures).evaluate(run)`` returns ``{query_id: {measure:
    value}}`` for the queries both in the qrels and in the run (as pytrec_eval does; queries of
    the qrels the run lacks are left out, not an error).

    >>> ev = RelevanceEvaluator({"q1": {"a": 1}, "q2": {"b": 1}}, {"map", "P.1"})
    >>> ev.evaluate({"q1": {"a": 0.5, "z": 0.9}})
    {'q1': {'map': 0.5, 'P_1': 0.0}}
    """

    def __init__(
        self,
        query_relevance: Mapping[str, Mapping[str, int]],
        measures: Iterable[str],
        relevance_level: int = 1,
        judged_docs_only_flag: bool = False,
    ) -> None:
        self._qrels = _source(query_relevance)
        self._measures = _merge_pytrec(_specs(measures))
        self._relevance_level = _level(relevance_level)
        self._judged_only = judged_docs_only_flag
        # Refuse an unknown measure now, as pytrec_eval does.
        _native.measure_names(self._measures)

    def evaluate(self, scores: Mapping[str, Mapping[str, float]]) -> Dict[str, Dict[str, float]]:
        """``{query_id: {measure: value}}`` for ``scores`` (``{query_id: {doc_id: score}}``);
        a run without documents gives ``{}``, as in pytrec_eval."""
        if isinstance(scores, Mapping) and not any(len(d) for d in scores.values()):
            return {}
        _, queries = _native.evaluate(
            self._qrels,
            _source(scores, "score"),
            self._measures,
            True,
            self._relevance_level,
            self._judged_only,
            True,
            True,
            False,
        )
        return queries


def compare(
    qrels: Source,
    runs: Mapping[str, Source],
    measures: Union[str, Iterable[str], None] = None,
    baseline: Optional[str] = None,
    *,
    complete: bool = False,
    relevance_level: int = 1,
    seed: Optional[int] = None,
    judged_at: int = 10,
    as_frame: Optional[bool] = None,
) -> Any:
    """Compare runs with a baseline, as ``ranklab compare`` does (the same Rust code and numbers).

    ``runs`` maps a name to a run (a path or a dict); the baseline is ``baseline`` or the first
    run. ``measures`` default to ``ranklab compare``'s (map, recip_rank, P.10, recall.100,
    ndcg_cut.10). For every measure and run: the mean, Δ against the baseline with its paired
    bootstrap 95% CI, the two-sided paired randomization p (raw and Holm-adjusted across the
    runs), wins/ties/losses, the minimum detectable effect and the queries needed to detect Δ,
    and the run's Judged@k and unjudged documents in its top k. Values are rounded as the
    command prints them (4 decimals).

    Returns a pandas DataFrame indexed by (measure, run) when pandas is installed (``as_frame``
    None or True), its ``attrs`` holding the command's readings and settings; otherwise (or with
    ``as_frame=False``) ``{"rows": [...], **readings and settings}``. Without ``complete``, every
    run must hold every judged query (``ValueError`` naming what each run lacks).

    >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    >>> base = {"q1": {"a": 1.0, "x": 2.0}, "q2": {"b": 1.0, "y": 2.0}, "q3": {"c": 1.0}}
    >>> new = {"q1": {"a": 3.0, "x": 2.0}, "q2": {"b": 3.0, "y": 2.0}, "q3": {"c": 1.0}}
    >>> out = compare(qrels, {"base": base, "new": new}, ["recip_rank"], as_frame=False)
    >>> [(r["run"], r["mean"], r["delta"], r["wins"], r["ties"], r["losses"]) for r in out["rows"]]
    [('base', 0.6667, None, None, None, None), ('new', 1.0, 0.3333, 2, 1, 0)]
    """
    import json

    names = list(runs)
    if len(names) < 2:
        raise ValueError(f"compare needs at least two runs (the baseline and one more), got {len(names)}")
    if baseline is not None:
        if baseline not in runs:
            raise ValueError(f"baseline {baseline!r} is not one of the runs: {names}")
        names.remove(baseline)
        names.insert(0, baseline)
    specs = [] if measures is None else _specs(measures)
    text = _native.compare(
        _source(qrels),
        [(n, _source(runs[n], "score")) for n in names],
        specs,
        _level(relevance_level),
        complete,
        _native.DEFAULT_SEED if seed is None else seed,
        judged_at,
        False,
    )
    out = json.loads(text)
    # The command labels runs by file stem: give back the names the caller used.
    label = {r["label"]: n for r, n in zip(out["runs"], names)}
    power = {(p["measure"], label.get(p["run"], p["run"])): p for p in out.get("power", [])}
    judged = {label.get(j["run"], j["run"]): j for j in out.get("judged", [])}
    rows = []
    for r in out["summary"]:
        run = label.get(r["run"], r["run"])
        row = {"measure": r["measure"], "run": run}
        # The command's column order (its CSV header), not the JSON's alphabetical keys.
        row.update({k: r[k] for k in _COMPARE_COLUMNS if k in r})
        row.update({k: r[k] for k in sorted(r) if k not in row and k != "path"})
        p = power.get((r["measure"], run), {})
        row["mde"] = p.get("mde")
        row["queries_needed"] = p.get("queries_needed")
        row.update({k: v for k, v in judged.get(run, {}).items() if k != "run"})
        rows.append(row)
    rest = {k: v for k, v in out.items() if k not in ("summary", "power", "judged")}
    for r in rest.get("runs", []):
        r["label"] = label.get(r["label"], r["label"])
    rest["baseline"] = names[0]
    if as_frame is False:
        return {"rows": rows, **rest}
    try:
        import pandas as pd
    except ImportError:
        if as_frame:
            raise ImportError("as_frame=True needs pandas: pip install pandas") from None
        return {"rows": rows, **rest}
    frame = pd.DataFrame(rows).set_index(["measure", "run"])
    # Counts stay integers; the baseline's row has none (pandas' nullable Int64 shows <NA>).
    for c in _COMPARE_COUNTS:
        if c in frame.columns:
            frame[c] = frame[c].astype("Int64")
    frame.attrs.update(rest)
    return frame


# `ranklab compare --format csv`'s columns after measure and run, in its order.
_COMPARE_COLUMNS = (
    "queries", "mean", "delta", "ci_low", "ci_high", "p", "p_method", "p_nonzero", "p_holm",
    "wins", "ties", "losses",
)
# The columns that count queries or documents.
_COMPARE_COUNTS = ("queries", "p_nonzero", "wins", "ties", "losses", "queries_needed")


def supported_measures() -> list:
    """The trec_eval measure families ``evaluate`` accepts (besides ir_measures names)."""
    return list(_native.SUPPORTED)
