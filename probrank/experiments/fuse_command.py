"""``probrank fuse``: fuse run files, write the fused run, return its measures.

Unsupervised methods fuse every topic directly. The learned methods ``qlfusion`` (the
paper's) and ``qlfusion_plus`` (the extension with judgement-free list descriptors) run a
``folds``-fold cross-validation over topics (see :mod:`probrank.experiments.qlfusion`) with
the settings of ``models/qlfusion/*.toml`` and fuse each topic with the quantifiers of the
fold that held it out; they need judgements to train, so topics absent from the qrels are
left out of their output.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from probrank.data.trec import Qrels, Run
from probrank.evaluation.measures import evaluate
from probrank.exceptions import InputDataError
from probrank.experiments.qlfusion.data import prepare_cv
from probrank.experiments.qlfusion.protocol import num_threads
from probrank.experiments.qlfusion.variants import (
    DEFAULT_SETTINGS,
    VARIANTS,
    Inputs,
    QuantifierSettings,
    cross_validated_weights,
)
from probrank.experiments.selection import top_runs as select_top_runs
from probrank.fusion.fuse import fuse

__all__ = ["FUSED_MEASURES", "fuse_command"]

FUSED_MEASURES = (
    "P@5", "R@5", "nDCG@5", "P@10", "R@10", "nDCG@10", "P@20", "R@20", "nDCG@20", "AP",
)  # fmt: skip

_LEARNED = {"qlfusion", "qlfusion_plus"}


def fuse_command(
    qrels_path: str | os.PathLike[str],
    run_paths: Sequence[str | os.PathLike[str]],
    *,
    method: str = "combsum",
    norm: str = "minmax",
    depth: int = 100,
    top_runs: int | None = None,
    folds: int = 10,
    seed: int = 0,
    output: str | os.PathLike[str],
    progress: bool = True,
    settings: QuantifierSettings | None = None,
    on_duplicate: str = "error",
) -> dict[str, float]:
    """Fuse runs, write the result atomically to ``output`` and evaluate it.

    Args:
        qrels_path: TREC qrels (for ``top_runs``, learned methods and the returned measures).
        run_paths: TREC run files.
        method: ``combsum``, ``combmnz``, ``combmax``, ``rrf``, ``meta``, ``qlfusion`` or
            ``qlfusion_plus`` (the extension with judgement-free list descriptors).
        norm: Score normalisation for score-based methods.
        depth: Documents per list used for fusion.
        top_runs: Fuse only the runs with the highest MAP (None: all).
        folds: Cross-validation folds for learned methods.
        seed: Seeds learned methods.
        output: Path of the fused run.
        progress: Show progress bars while training.
        settings: Quantifier training settings; default
            :data:`~probrank.experiments.qlfusion.variants.DEFAULT_SETTINGS`, the settings of
            ``models/qlfusion/*.toml`` (a test keeps them equal).
        on_duplicate: A document listed twice for a topic in a run file: ``"error"`` (the
            default: such a file is malformed), ``"max"`` (keep the higher score) or
            ``"first"``; see :meth:`probrank.data.Run.read`.

    Returns:
        ``{measure: value}``: P, R and nDCG at 5, 10 and 20, and AP of the fused run.

    Raises:
        InputDataError: unreadable inputs or bad options.
    """
    if not run_paths:
        raise InputDataError("give at least one run file")
    qrels = Qrels.read(qrels_path)
    runs = [Run.read(p, on_duplicate=on_duplicate) for p in run_paths]
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise InputDataError(f"run names must be distinct, got {names}")
    if top_runs is not None:
        runs = select_top_runs(qrels, runs, top_runs, "AP")
    if method in _LEARNED:
        plus = VARIANTS[method].inputs is Inputs.PLUS
        data = prepare_cv(runs, qrels, folds=folds, depth=depth, fold_seed=seed, plus=plus)
        with num_threads(1):
            weights, _ = cross_validated_weights(
                data,
                seed=seed,
                settings=settings or DEFAULT_SETTINGS,
                variants=[method],
                progress=progress,
            )
        judged = [run.restrict(data.topics) for run in runs]  # topics without qrels are dropped
        fused = fuse(
            judged, "weighted", norm=norm, depth=depth, weights=weights[method], name=method
        )
    else:
        fused = fuse(runs, method, norm=norm, depth=depth, seed=seed, name=method)
    fused.write(output)
    return evaluate(qrels, fused, list(FUSED_MEASURES))
