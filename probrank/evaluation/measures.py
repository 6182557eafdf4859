"""trec_eval-exact evaluation through ir-measures (pytrec_eval backend).

Measures are named in ir-measures syntax (``AP``, ``nDCG@10``, ``P(rel=2)@10``, ``RBP(p=0.8)``).
pytrec_eval (trec_eval's own C code) computes every measure it supports.

trec_eval's options map to keyword arguments:

* ``-l LEVEL`` -> ``relevance_level``: measures that take ``rel`` use it unless the name sets it.
* ``-c`` -> ``all_queries``: average over every query of the qrels; a query the run lacks is
  scored as an empty ranking (0 for every measure but ``NumRel``, which comes from the qrels).
* ``-M DEPTH`` -> ``depth``: each query's ranking is cut at ``depth`` in trec_eval order.

``NumRel``, ``RBP`` and ``Judged`` are computed in :mod:`probrank.evaluation.local_measures`
(see there why); ``RBP`` ignores ``relevance_level`` as trec_eval's ``rbp`` does.

Known difference: ``IPrec@r`` is pytrec_eval's, i.e. trec_eval 9's rule; trec_eval 10 counts
a recall cut-off as reached one relevant document earlier when ``r * num_rel`` is fractional
(trec_eval's test query 301 at recall 0.1: 0.2096 here, 0.2098 in trec_eval 10).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import ir_measures
import pandas as pd
from ir_measures import Measure

from probrank.data.trec import Qrels, Run
from probrank.evaluation.local_measures import IGNORE_RELEVANCE_LEVEL, LOCAL_MEASURES
from probrank.exceptions import InputDataError

__all__ = [
    "DEFAULT_MEASURES",
    "Evaluator",
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

# Backends, in order of preference: pytrec_eval is trec_eval itself.
_PROVIDERS = ("pytrec_eval",)


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
        except (
            ValueError,
            NameError,
            SyntaxError,
            TypeError,
            KeyError,
            AttributeError,
            AssertionError,
        ) as exc:
            raise InputDataError(f"unknown measure {name!r} ({exc})") from None
        if relevance_level is not None and _follows_level(name, measure):
            measure = measure(rel=relevance_level)
        if measure.NAME not in LOCAL_MEASURES:
            _provider_for(measure, name)
        parsed.append((name, measure))
    if not parsed:
        raise InputDataError("no measure given")
    return parsed


def _follows_level(name: str, measure: Measure) -> bool:
    """Whether trec_eval's ``-l`` applies: the measure takes ``rel``, the name does not set it,
    and ``rel`` does not change what is measured (``NumRet(rel=L)`` is NumRelRet in
    ir-measures, so plain ``NumRet`` keeps counting every retrieved document)."""
    if "rel" not in measure.SUPPORTED_PARAMS or measure.NAME in IGNORE_RELEVANCE_LEVEL:
        return False
    if measure.NAME == "NumRet" and "rel" not in measure.params:
        return False
    return "rel=" not in name.replace(" ", "")


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


class Evaluator:
    """Measures prepared once for one set of judgements, then applied to any number of runs.

    Building pytrec_eval's evaluator parses the qrels; doing that once per qrels and measure set
    (as ir-measures' ``evaluator`` does) is what keeps evaluating many runs cheap.

    Args:
        qrels: Judgements (a :class:`Qrels` or a path).
        measures: ir-measures names.
        relevance_level: trec_eval ``-l``.
        all_queries: trec_eval ``-c``.
        depth: trec_eval ``-M``.
    """

    def __init__(
        self,
        qrels: Qrels | str | os.PathLike[str],
        measures: Sequence[str] | str = DEFAULT_MEASURES,
        *,
        relevance_level: int | None = None,
        all_queries: bool = False,
        depth: int | None = None,
    ):
        if depth is not None and depth < 1:
            raise InputDataError(f"depth must be a positive integer, got {depth}")
        self.qrels = _as_qrels(qrels)
        self.measures = parse_measures(measures, relevance_level)
        self.all_queries = all_queries
        self.depth = depth
        qrels_dict = self.qrels.as_dict()
        self._local = [
            (name, LOCAL_MEASURES[str(m.NAME)], m)
            for name, m in self.measures
            if str(m.NAME) in LOCAL_MEASURES
        ]
        by_provider: dict[str, dict[Measure, list[str]]] = {}
        for name, measure in self.measures:
            if str(measure.NAME) not in LOCAL_MEASURES:
                names = by_provider.setdefault(_provider_for(measure, name), {})
                names.setdefault(measure, []).append(name)
        self._backends = [
            (ir_measures.providers.registry[p].evaluator(list(names), qrels_dict), names)
            for p, names in by_provider.items()
        ]

    @property
    def names(self) -> list[str]:
        """The measure names, in the order given."""
        return [name for name, _ in self.measures]

    def per_query(self, run: Run | str | os.PathLike[str]) -> dict[str, dict[str, float]]:
        """``{query_id: {measure name: value}}``, queries in the qrels' order."""
        run = _as_run(run)
        if self.depth is not None:
            run = run.truncate(self.depth)
        qrels_dict, run_dict = self.qrels.as_dict(), run.as_dict()
        shared = [q for q in qrels_dict if q in run_dict]
        if not shared and not self.all_queries:
            raise InputDataError(
                f"run {run.name!r} and qrels {self.qrels.name!r} share no query "
                "(trec_eval would stop too)"
            )
        # pytrec_eval skips queries the qrels lack; drop them up front for every backend alike.
        scoped = {q: run_dict[q] for q in shared}
        values: dict[str, dict[str, float]] = {q: {} for q in shared}
        for name, local, measure in self._local:
            for qid in shared:
                values[qid][name] = local(qrels_dict[qid], scoped[qid], measure)
        for evaluator, names_of in self._backends:
            for metric in evaluator.iter_calc(scoped):
                # ir-measures pads qrels queries the run lacks with a default value (an
                # implicit -c); trec_eval's default leaves them out, and -c is handled below.
                row = values.get(metric.query_id)
                if row is not None:
                    for name in names_of[metric.measure]:
                        row[name] = float(metric.value)
        if self.all_queries:
            values = {
                q: values.get(q) or _empty_ranking(qrels_dict[q], self.measures) for q in qrels_dict
            }
        return values

    def aggregate(self, values: dict[str, dict[str, float]]) -> dict[str, float]:
        """trec_eval's ``all`` line from per-query values: counts summed, the rest averaged."""
        result = {}
        for name, measure in self.measures:
            aggregator = measure.aggregator()
            for row in values.values():
                aggregator.add(row[name])
            result[name] = float(aggregator.result())
        return result

    def __call__(self, run: Run | str | os.PathLike[str]) -> dict[str, float]:
        """Aggregate measure values of ``run``."""
        return self.aggregate(self.per_query(run))


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
    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    return evaluator.per_query(run), evaluator.measures


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

    To evaluate many runs against the same qrels, build an :class:`Evaluator` once instead.

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
    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    return evaluator(run)


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
    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    frame = pd.DataFrame.from_dict(
        evaluator.per_query(run), orient="index", columns=evaluator.names
    )
    frame.index.name = "query_id"
    return frame
