"""CombSUM, CombMNZ and CombMAX (Fox & Shaw 1994) on already-normalised runs.

For one query, let ``S(d)`` be the normalised scores document ``d`` received from the runs
that retrieved it (a run that lacks the query, or lacks ``d``, contributes nothing):

* CombSUM: ``sum S(d)``; with weights, ``sum_i w_i(q) * s_i(d)`` (the QLFusion rule, where
  ``w_i(q)`` is the predicted proportion of relevant documents in run ``i``'s list for ``q``);
* CombMNZ: ``|S(d)| * sum S(d)``;
* CombMAX: ``max S(d)``.

Sums are computed with :func:`math.fsum`, which rounds exactly once, so the fused scores (and
hence the ranking, ties included) do not depend on the order of the input runs. The output
holds every query some run has a non-empty list for, in a fixed order; documents are stored
in trec_eval order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from probrank.data.trec import Run
from probrank.exceptions import InputDataError

__all__ = [
    "QueryLists",
    "Weights",
    "check_runs",
    "collect_lists",
    "collect_scores",
    "comb_max",
    "comb_mnz",
    "comb_sum",
    "combine",
    "combmax_rule",
    "combmnz_rule",
    "combsum_rule",
    "query_order",
]

QueryLists = Mapping[str, Mapping[str, float]]
"""One run's scores as a mapping ``query_id -> {doc_id: score}``."""
Weights = Mapping[str, float | Mapping[str, float]]
"""Per-run weights: ``{run.name: weight}`` or ``{run.name: {query_id: weight}}``."""

_NUMBER = re.compile(r"\d+")


def query_order(query_ids: Iterable[str]) -> list[str]:
    """Query ids sorted naturally (``"2" < "10" < "a"``), independent of where they came from."""

    def key(qid: str) -> tuple[int, int, str]:
        if _NUMBER.fullmatch(qid):
            return (0, int(qid), qid)
        return (1, 0, qid)

    return sorted(set(query_ids), key=key)


def check_runs(runs: Sequence[Run]) -> None:
    """Raise :class:`InputDataError` unless ``runs`` is a non-empty sequence of :class:`Run`."""
    if isinstance(runs, Run) or len(runs) == 0:
        raise InputDataError("fusion needs a non-empty sequence of runs")
    for run in runs:
        if not isinstance(run, Run):
            raise InputDataError(f"fusion expects probrank.data.Run objects, got {type(run)!r}")


def _constant(value: float) -> Callable[[str], float]:
    def lookup(_qid: str) -> float:
        return value

    return lookup


def _weight_lookup(
    names: Sequence[str], lists: Sequence[QueryLists], weights: Weights
) -> list[Callable[[str], float]]:
    """One ``query_id -> weight`` function per run, validated up front."""
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InputDataError(
            f"weights are keyed by run name, but several runs are named {duplicated[0]!r}"
        )
    lookups: list[Callable[[str], float]] = []
    for name, by_query in zip(names, lists, strict=True):
        if name not in weights:
            raise InputDataError(f"no weight for run {name!r}")
        spec = weights[name]
        if isinstance(spec, Mapping):
            per_query = {str(q): float(w) for q, w in spec.items()}
            for qid, docs in by_query.items():
                if docs and qid not in per_query:
                    raise InputDataError(f"no weight for run {name!r}, query {qid!r}")
            bad = [(q, w) for q, w in per_query.items() if not math.isfinite(w)]
            if bad:
                raise InputDataError(f"weight of run {name!r}, query {bad[0][0]!r} is {bad[0][1]}")
            lookups.append(per_query.__getitem__)
        else:
            value = float(spec)
            if not math.isfinite(value):
                raise InputDataError(f"weight of run {name!r} is {value}")
            lookups.append(_constant(value))
    return lookups


def collect_lists(
    names: Sequence[str], lists: Sequence[QueryLists], weights: Weights | None = None
) -> dict[str, dict[str, list[float]]]:
    """Every list's (optionally weighted) score of each document: ``{qid: {doc: [scores]}}``.

    Args:
        names: The run names (to look weights up).
        lists: Per run, ``{query_id: {doc_id: score}}``.
        weights: As in :func:`comb_sum`.

    Returns:
        Per query, per document, the scores it received, in run order (callers reduce them
        with order-free operations). Queries whose lists are all empty are left out.

    Raises:
        InputDataError: ``weights`` misses a run or a (run, query) pair.
    """
    lookups = None if weights is None else _weight_lookup(names, lists, weights)
    collected: dict[str, dict[str, list[float]]] = {}
    for index, by_query in enumerate(lists):
        for qid, docs in by_query.items():
            if not docs:
                continue
            target = collected.setdefault(qid, {})
            weight = None if lookups is None else lookups[index](qid)
            for doc, score in docs.items():
                value = score if weight is None else weight * score
                bucket = target.get(doc)
                if bucket is None:
                    target[doc] = [value]
                else:
                    bucket.append(value)
    return collected


def collect_scores(
    runs: Sequence[Run], weights: Weights | None = None
) -> dict[str, dict[str, list[float]]]:
    """:func:`collect_lists` on runs.

    Raises:
        InputDataError: no runs, or ``weights`` misses a run or a (run, query) pair.
    """
    check_runs(runs)
    return collect_lists([r.name for r in runs], [r.as_dict() for r in runs], weights)


def combine(
    collected: Mapping[str, Mapping[str, list[float]]],
    reduce: Callable[[list[float]], float],
    name: str,
) -> Run:
    """Reduce each document's collected scores to one fused score and build the run.

    Queries come in natural order, documents in trec_eval order.
    """
    fused: dict[str, dict[str, float]] = {}
    for qid in query_order(collected):
        ranked = sorted(
            ((reduce(values), doc) for doc, values in collected[qid].items()), reverse=True
        )
        fused[qid] = {doc: score for score, doc in ranked}
    return Run(fused, name=name)


def combsum_rule(values: list[float]) -> float:
    """CombSUM of one document's scores (exactly rounded, so order-free)."""
    return math.fsum(values)


def combmnz_rule(values: list[float]) -> float:
    """CombMNZ of one document's scores."""
    return len(values) * math.fsum(values)


def combmax_rule(values: list[float]) -> float:
    """CombMAX of one document's scores."""
    return max(values)


def comb_sum(runs: Sequence[Run], weights: Weights | None = None, *, name: str = "combsum") -> Run:
    """CombSUM: the sum of a document's normalised scores over the runs that retrieved it.

    Args:
        runs: Normalised runs (e.g. from :func:`~probrank.fusion.normalize.normalize`).
        weights: Optional per-run weights ``{run.name: w}`` or per-(run, query) weights
            ``{run.name: {query_id: w}}`` (QLFusion's predicted proportions); each score is
            multiplied by its weight before summing. Run names must then be unique, and every
            non-empty (run, query) list needs a weight.
        name: The fused run's name.

    Returns:
        The fused run.

    Raises:
        InputDataError: no runs, a missing or non-finite weight, duplicate run names with
            ``weights``.
    """
    return combine(collect_scores(runs, weights), combsum_rule, name)


def comb_mnz(runs: Sequence[Run], *, name: str = "combmnz") -> Run:
    """CombMNZ: CombSUM times the number of runs that retrieved the document.

    Args:
        runs: Normalised runs.
        name: The fused run's name.

    Returns:
        The fused run.
    """
    return combine(collect_scores(runs), combmnz_rule, name)


def comb_max(runs: Sequence[Run], *, name: str = "combmax") -> Run:
    """CombMAX: the highest normalised score a document received.

    Args:
        runs: Normalised runs.
        name: The fused run's name.

    Returns:
        The fused run.
    """
    return combine(collect_scores(runs), combmax_rule, name)
