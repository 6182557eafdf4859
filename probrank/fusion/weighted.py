"""Weighted fusion rules with one weight per run (or per run and query), as in ranx.

For one query, with ``s_i(d)`` the normalised score and ``r_i(d)`` the 1-based rank (trec_eval
order) that run ``i`` gives document ``d``, summing over the runs that retrieved ``d``:

* weighted CombSUM (ranx ``wsum``): ``sum_i w_i s_i(d)``: :func:`~probrank.fusion.comb.comb_sum`
  with weights, ``fuse(runs, "weighted", weights=...)``;
* weighted CombMNZ (ranx ``wmnz``, Wu & Crestani 2002): ``(sum_i s_i(d)) * (sum_i w_i)``, the
  sum of the scores times the sum of the weights of the runs that retrieved ``d`` (with all
  weights 1 it is CombMNZ): :func:`wmnz`, ``fuse(runs, "weighted_mnz", weights=...)``;
* weighted RRF: ``sum_i w_i / (k + r_i(d))``: :func:`weighted_rrf`, ``fuse(runs, "weighted_rrf",
  weights=...)``. ranx has no weighted RRF; it equals ranx's ``wsum`` over the runs that
  ranx's ``rrf`` produces from each run alone.

Sums are exactly rounded (:func:`math.fsum`), so the result does not depend on the order of
the runs. Weights are ``{run.name: w}`` or ``{run.name: {query_id: w}}``
(:data:`~probrank.fusion.comb.Weights`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from probrank.data.trec import Run
from probrank.fusion.comb import (
    QueryLists,
    Weights,
    check_runs,
    collect_lists,
    combine,
    combsum_rule,
)
from probrank.fusion.normalize import check_depth
from probrank.fusion.rrf import DEFAULT_RRF_K, reciprocal_ranks

__all__ = ["combine_wmnz", "weighted_rrf", "wmnz"]


def combine_wmnz(
    names: Sequence[str], lists: Sequence[QueryLists], weights: Weights, name: str
) -> Run:
    """Weighted CombMNZ of already-normalised per-run lists ``{query_id: {doc_id: score}}``.

    Raises:
        InputDataError: ``weights`` misses a run or a (run, query) pair, or is not finite.
    """
    scores = collect_lists(names, lists, None)
    present = [{q: dict.fromkeys(docs, 1.0) for q, docs in by_q.items()} for by_q in lists]
    weight_sums = collect_lists(names, present, weights)
    collected = {
        qid: {
            doc: [math.fsum(values), math.fsum(weight_sums[qid][doc])]
            for doc, values in docs.items()
        }
        for qid, docs in scores.items()
    }
    return combine(collected, _product, name)


def _product(pair: list[float]) -> float:
    return pair[0] * pair[1]


def wmnz(runs: Sequence[Run], weights: Weights, *, name: str = "wmnz") -> Run:
    """Weighted CombMNZ of normalised runs: ``(sum_i s_i(d)) * (sum_i w_i)``.

    Args:
        runs: Normalised runs (e.g. from :func:`~probrank.fusion.normalize.normalize`).
        weights: ``{run.name: w}`` or ``{run.name: {query_id: w}}``.
        name: The fused run's name.

    Returns:
        The fused run.

    Raises:
        InputDataError: no runs, a missing or non-finite weight, duplicate run names.
    """
    check_runs(runs)
    return combine_wmnz([r.name for r in runs], [r.as_dict() for r in runs], weights, name)


def weighted_rrf(
    runs: Sequence[Run],
    weights: Weights,
    k: float = DEFAULT_RRF_K,
    *,
    depth: int | None = None,
    name: str = "wrrf",
) -> Run:
    """Weighted reciprocal rank fusion of raw runs: ``sum_i w_i / (k + r_i(d))``.

    Args:
        runs: The runs (only their trec_eval order matters).
        weights: ``{run.name: w}`` or ``{run.name: {query_id: w}}``.
        k: The RRF constant.
        depth: Use only each list's top ``depth`` documents; ``None`` uses all.
        name: The fused run's name.

    Returns:
        The fused run.

    Raises:
        InputDataError: no runs, a bad ``k`` or ``depth``, a missing or non-finite weight.
    """
    check_runs(runs)
    depth = check_depth(depth)
    lists = [reciprocal_ranks(run, k, depth).as_dict() for run in runs]
    return combine(collect_lists([r.name for r in runs], lists, weights), combsum_rule, name)
