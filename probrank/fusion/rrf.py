"""Reciprocal rank fusion (Cormack, Clarke & Buettcher 2009).

``RRF(d) = sum_i 1 / (k + r_i(d))`` over the runs ``i`` that retrieved ``d`` for the query,
with ``r_i(d)`` the 1-based rank of ``d`` in run ``i`` in trec_eval order (score descending,
ties by docno descending) and ``k = 60`` as in the paper and in ranx. Only ranks are used, so
no normalisation is needed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from probrank.data.trec import Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import QueryLists, check_runs, collect_lists, combine, combsum_rule
from probrank.fusion.normalize import check_depth, top_documents

__all__ = ["DEFAULT_RRF_K", "reciprocal_ranks", "rrf"]

DEFAULT_RRF_K = 60.0
"""Cormack et al.'s constant."""


def _reciprocal_lists(
    lists: QueryLists, k: float, depth: int | None
) -> dict[str, dict[str, float]]:
    return {
        qid: {doc: 1.0 / (k + rank) for rank, (doc, _) in enumerate(top_documents(docs, depth), 1)}
        for qid, docs in lists.items()
    }


def _check_k(k: float) -> float:
    k = float(k)
    if not (math.isfinite(k) and k >= 0.0):
        raise InputDataError(f"rrf k must be a finite number >= 0, got {k}")
    return k


def reciprocal_ranks(run: Run, k: float = DEFAULT_RRF_K, depth: int | None = None) -> Run:
    """A run whose scores are ``1 / (k + rank)``, rank 1-based in trec_eval order.

    Args:
        run: The input run; not modified.
        k: The RRF constant, finite and ``>= 0``.
        depth: Keep only each query's top ``depth`` documents; ``None`` keeps all.

    Returns:
        A new run with the same name and tag.

    Raises:
        InputDataError: a bad ``k`` or ``depth``.
    """
    lists = _reciprocal_lists(run.as_dict(), _check_k(k), check_depth(depth))
    return Run(lists, name=run.name, tag=run.tag)


def rrf(
    runs: Sequence[Run],
    k: float = DEFAULT_RRF_K,
    *,
    depth: int | None = None,
    name: str = "rrf",
) -> Run:
    """Reciprocal rank fusion of raw runs.

    Args:
        runs: The runs to fuse (raw scores; only their trec_eval order matters).
        k: The RRF constant (60 by default).
        depth: Use only each list's top ``depth`` documents; ``None`` uses all.
        name: The fused run's name.

    Returns:
        The fused run: every query some run has a non-empty list for.

    Raises:
        InputDataError: no runs, a bad ``k`` or ``depth``.
    """
    check_runs(runs)
    k, depth = _check_k(k), check_depth(depth)
    lists = [_reciprocal_lists(run.as_dict(), k, depth) for run in runs]
    return combine(collect_lists([r.name for r in runs], lists), combsum_rule, name)
