"""Choosing which runs to fuse: the ``k`` runs with the highest mean of a measure.

This lives in :mod:`probrank.evaluation` (not in :mod:`probrank.fusion`) because it evaluates
runs: ``fusion`` depends on ``data`` only; the ``qlfusion_cv`` protocol, ``probrank fuse`` and
the tutorials select their input runs with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from probrank.data.trec import Qrels, Run
from probrank.evaluation.measures import evaluate
from probrank.exceptions import InputDataError

__all__ = ["top_runs"]


def top_runs(
    qrels: Qrels,
    runs: Sequence[Run],
    k: int,
    measure: str = "AP",
    *,
    depth: int | None = None,
) -> list[Run]:
    """The ``k`` runs with the highest mean ``measure`` (MAP by default), best first.

    Runs are evaluated as trec_eval does by default (over the queries each run shares with the
    qrels). Equal means are ordered by run name, so the choice does not depend on the order of
    ``runs``.

    Args:
        qrels: The judgements to select on (use training topics only when the selection is part
            of an experiment).
        runs: Candidate runs; not modified.
        k: How many runs to keep, ``1 <= k``; all runs when ``k >= len(runs)``.
        measure: An ir-measures name, e.g. ``"AP"`` or ``"nDCG@10"``.
        depth: Evaluate each run cut at ``depth`` (trec_eval ``-M``); ``None``: all.

    Returns:
        The selected runs, highest measure first.

    Raises:
        InputDataError: ``k < 1``, no runs, an unknown measure, or a run sharing no query with
            the qrels.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputDataError(f"k must be a positive integer, got {k!r}")
    if len(runs) == 0:
        raise InputDataError("top_runs needs at least one run")
    scored = [(evaluate(qrels, run, [measure], depth=depth)[measure], run) for run in runs]
    scored.sort(key=lambda item: (-item[0], item[1].name))
    return [run for _, run in scored[:k]]
