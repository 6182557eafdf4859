"""trec_eval-exact evaluation through ir-measures (pytrec_eval backend).

Measures are named in ir-measures syntax (``AP``, ``nDCG@10``, ``P(rel=2)@10``, ``RBP(p=0.8)``).
pytrec_eval (trec_eval's own C code) computes every measure it supports; ``Judged@k`` comes from
ir-measures' own ``judged`` provider and ``RBP`` from trectools, since trec_eval has neither.

trec_eval's options map to keyword arguments:

* ``-l LEVEL`` -> ``relevance_level``: measures that take ``rel`` use it unless the name sets it.
* ``-c`` -> ``all_queries``: average over every query of the qrels; a query the run lacks is
  scored as an empty ranking (0 for every measure but ``NumRel``, which comes from the qrels).
* ``-M DEPTH`` -> ``depth``: each query's ranking is cut at ``depth`` in trec_eval order.

``NumRel`` and ``RBP`` are computed in :mod:`probrank.evaluation.local_measures` (see there
why); ``RBP`` ignores ``relevance_level`` as trec_eval's ``rbp`` does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import ir_measures
import pandas as pd
from ir_measures import Measure

from probrank.data.trec import Qrels, Run
from probrank.evaluation.local_measures import IGNORE_RELEVANCE_LEVEL, LOCAL_MEASURES
from probrank.exceptions import InputDataError

__all__ = [
    "DEFAULT_MEASURES",
    "evaluate",
    "evaluate_per_query",
    "parse_measures",
    "per_query_values",
]

DEFAULT_MEASURES: tuple[str, ...] = (
    "NumRet",
    "NumRel",
    "NumRelRet",
    "AP",
    "Rprec",
    "Bpref",
    "RR",
    "P@5",
    "P@10",
    "P@100",
    "R@100",
    "nDCG@10",
)
"""trec_eval's headline measures plus nDCG@10 and R@100."""

# Providers in order of preference: pytrec_eval is trec_eval itself.
_PROVIDERS = ("pytrec_eval", "judged", "trectools")


@dataclass(frozen=True)
class _Resolved:
    name: str
    measure: Measure


def parse_measures(
    names: Iterable[str] | str, relevance_level: int | None = None
) -> list[tuple[str, Measure]]:
    """Parse measure names, applying ``relevance_level`` to measures that take ``rel``.

    Args:
        names: ir-measures names (one string or several).
        relevance_level: trec_eval's ``-l``; a name that sets ``rel`` itself keeps its own.

    Returns:
        ``(name as given, ir_measures measure)`` pairs, in the given order.

    Raises:
        InputDataError: an unknown or unsupported measure name.
    """
    if isinstance(names, str):
        names = [names]
    parsed = []
    for name in names:
        try:
            measure = ir_measures.parse_measure(name)
        except (ValueError, NameError, SyntaxError, TypeError, KeyError, AttributeError) as exc:
            raise InputDataError(f"unknown measure {name!r} ({exc})") from None
        if (
            relevance_level is not None
            and "rel" in measure.SUPPORTED_PARAMS
            and measure.NAME not in IGNORE_RELEVANCE_LEVEL
            and "rel=" not in name.replace(" ", "")
        ):
            measure = measure(rel=relevance_level)
        if measure.NAME not in LOCAL_MEASURES:
            _provider_for(measure, name)
        parsed.append((name, measure))
    if not parsed:
        raise InputDataError("no measure given")
    return parsed


def _provider_for(measure: Measure, name: str) -> str:
    for provider_name in _PROVIDERS:
        provider = ir_measures.providers.registry[provider_name]
        if provider.supports(measure) and provider.is_available():
            return provider_name
    raise InputDataError(f"measure {name!r} is not supported by {', '.join(_PROVIDERS)}")


def _as_qrels(qrels: Qrels | str | os.PathLike[str]) -> Qrels:
    return qrels if isinstance(qrels, Qrels) else Qrels.read(qrels)


def _as_run(run: Run | str | os.PathLike[str]) -> Run:
    return run if isinstance(run, Run) else Run.read(run)


def per_query_values(
    qrels: Qrels | str | os.PathLike[str],
    run: Run | str | os.PathLike[str],
    measures: Sequence[str] | str = DEFAULT_MEASURES,
    *,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
) -> tuple[dict[str, dict[str, float]], list[tuple[str, Measure]]]:
    """Per-query values ``{query_id: {measure name: value}}`` and the parsed measures.

    Arguments are those of :func:`evaluate`. Queries come in the qrels' order.
    """
    qrels, run = _as_qrels(qrels), _as_run(run)
    parsed = parse_measures(measures, relevance_level)
    if depth is not None:
        run = run.truncate(depth)
    qrels_dict, run_dict = qrels.as_dict(), run.as_dict()
    shared = [q for q in qrels_dict if q in run_dict]
    if not shared and not all_queries:
        raise InputDataError(
            f"run {run.name!r} and qrels {qrels.name!r} share no query (trec_eval would stop too)"
        )
    # pytrec_eval skips queries the qrels lack; drop them up front for every provider alike.
    scoped = {q: run_dict[q] for q in shared}
    by_provider: dict[str, list[_Resolved]] = {}
    values: dict[str, dict[str, float]] = {q: {} for q in shared}
    for name, measure in parsed:
        local = LOCAL_MEASURES.get(str(measure.NAME))
        if local is not None:
            for qid in shared:
                values[qid][name] = local(qrels_dict[qid], scoped[qid], measure)
            continue
        by_provider.setdefault(_provider_for(measure, name), []).append(_Resolved(name, measure))
    for provider_name, resolved in by_provider.items():
        provider = ir_measures.providers.registry[provider_name]
        unique = list(dict.fromkeys(r.measure for r in resolved))
        names_of: dict[Measure, list[str]] = {}
        for r in resolved:
            names_of.setdefault(r.measure, []).append(r.name)
        evaluator = provider.evaluator(unique, qrels_dict)
        for metric in evaluator.iter_calc(scoped):
            if metric.query_id in values:
                for name in names_of[metric.measure]:
                    values[metric.query_id][name] = float(metric.value)
    for qid in shared:  # providers omit nothing in practice; make absence explicit anyway
        for name, _ in parsed:
            values[qid].setdefault(name, 0.0)
    if all_queries:
        values = {q: values.get(q) or _empty_ranking(qrels_dict[q], parsed) for q in qrels_dict}
    return values, parsed


def _empty_ranking(judged: dict[str, int], parsed: list[tuple[str, Measure]]) -> dict[str, float]:
    """Measure values of a query with nothing retrieved (trec_eval ``-c``)."""
    out = {}
    for name, measure in parsed:
        local = LOCAL_MEASURES.get(str(measure.NAME))
        if local is not None:
            out[name] = local(judged, None, measure)
        elif measure.NAME == "NumQ":
            out[name] = 1.0
        else:
            out[name] = 0.0
    return out


def evaluate(
    qrels: Qrels | str | os.PathLike[str],
    run: Run | str | os.PathLike[str],
    measures: Sequence[str] | str = DEFAULT_MEASURES,
    *,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
) -> dict[str, float]:
    """Aggregate measure values of a run, as trec_eval's ``all`` lines.

    Args:
        qrels: Judgements (a :class:`Qrels` or a path).
        run: The run (a :class:`Run` or a path).
        measures: ir-measures names, e.g. ``["nDCG@10", "P@5", "AP"]``.
        relevance_level: trec_eval ``-l``.
        all_queries: trec_eval ``-c``.
        depth: trec_eval ``-M``.

    Returns:
        ``{measure name: value}``; counts (``NumRet``, ``NumRel``, ...) are summed, the rest
        averaged over queries.
    """
    values, parsed = per_query_values(
        qrels,
        run,
        measures,
        relevance_level=relevance_level,
        all_queries=all_queries,
        depth=depth,
    )
    result = {}
    for name, measure in parsed:
        aggregator = measure.aggregator()
        for row in values.values():
            aggregator.add(row[name])
        result[name] = float(aggregator.result())
    return result


def evaluate_per_query(
    qrels: Qrels | str | os.PathLike[str],
    run: Run | str | os.PathLike[str],
    measures: Sequence[str] | str = DEFAULT_MEASURES,
    *,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
) -> pd.DataFrame:
    """Per-query measure values as a DataFrame (index ``query_id``, one column per measure).

    Arguments are those of :func:`evaluate`.
    """
    values, parsed = per_query_values(
        qrels,
        run,
        measures,
        relevance_level=relevance_level,
        all_queries=all_queries,
        depth=depth,
    )
    frame = pd.DataFrame.from_dict(values, orient="index", columns=[n for n, _ in parsed])
    frame.index.name = "query_id"
    return frame
