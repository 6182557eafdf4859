"""Cross-fitted QLFusion weights: every topic weighted by quantifiers that never saw it.

QLFusion needs judged training topics; to fuse the very topics it learns from (as the
``qlfusion_cv`` protocol and ``probrank fuse --method qlfusion`` do), the topics are split into
``F`` folds at random (``fold_seed``). For fold ``f`` the test topics are fold ``f``, the
validation topics fold ``f + 1`` (mod ``F``), the rest train; one quantifier per (fold, run)
*member* is trained (all in one vectorised loop, :func:`~probrank.models.qlfusion.variants.
member_predictions`) and predicts its test lists. Members are ordered ``fold * R + run``.

The unit of work that can run apart is a *training group* of one seed
(:class:`~probrank.models.qlfusion.variants.TrainingGroup`: all members of one vectorised loop,
or one scikit-learn kind): :func:`cross_validated_group` trains one, anywhere, and
:func:`merge_cross_validated` turns a seed's groups into the weights
:func:`cross_validated_weights` gives, bit for bit on CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import query_order
from probrank.models.qlfusion.network import list_features, relevant_counts
from probrank.models.qlfusion.plus_features import plus_features
from probrank.models.qlfusion.variants import (
    QuantifierSettings,
    TrainingGroup,
    group_predictions,
    member_predictions,
    merge_group_predictions,
)

__all__ = [
    "PARTS",
    "CVData",
    "cross_validated_group",
    "cross_validated_predictions",
    "cross_validated_weights",
    "make_folds",
    "merge_cross_validated",
    "prepare_cv",
    "weights_from_predictions",
]

PARTS = ("train", "val", "test")


@dataclass(frozen=True)
class CVData:
    """Per-(fold, run) member tensors of a cross-validation.

    Members are ordered ``fold * R + run``. ``train``/``val``/``test`` hold ``x`` (`M x n x k`,
    the paper's input), ``counts`` (`M x n`), ``mask`` (`M x n`), ``index`` (`M x n` topic
    indices, -1 on padding) and, when built with ``plus=True``, ``plus`` (`M x n x F`, the
    richer inputs of :mod:`probrank.models.qlfusion.plus_features`).
    """

    topics: list[str]
    run_names: list[str]
    folds: list[list[int]]
    train: dict[str, Tensor]
    val: dict[str, Tensor]
    test: dict[str, Tensor]
    plus_names: list[str] = field(default_factory=list)

    def part(self, name: str) -> dict[str, Tensor]:
        """``train``, ``val`` or ``test``."""
        if name not in PARTS:
            raise InputDataError(f"part must be one of {PARTS}, got {name!r}")
        out: dict[str, Tensor] = getattr(self, name)
        return out

    def fold_members(self, fold: int) -> slice:
        """The members of one fold (one per run)."""
        runs = len(self.run_names)
        return slice(fold * runs, (fold + 1) * runs)


def make_folds(num_topics: int, folds: int, seed: int = 0) -> list[list[int]]:
    """Split topic indices ``0..n-1`` into ``folds`` near-equal random folds (sorted)."""
    if folds < 3:
        raise InputDataError(f"cross-validation needs at least 3 folds, got {folds}")
    if num_topics < folds:
        raise InputDataError(f"{num_topics} topics cannot fill {folds} folds")
    order = torch.randperm(num_topics, generator=torch.Generator().manual_seed(seed)).tolist()
    return [sorted(order[i::folds]) for i in range(folds)]


def _rows(folds: list[list[int]], part: str) -> list[list[int]]:
    count = len(folds)
    if part == "test":
        return [folds[f] for f in range(count)]
    if part == "val":
        return [folds[(f + 1) % count] for f in range(count)]
    return [
        sorted(i for g in range(count) if g not in (f, (f + 1) % count) for i in folds[g])
        for f in range(count)
    ]


def _stack(per_run: Mapping[str, Tensor], folds: list[list[int]], part: str) -> dict[str, Tensor]:
    """Gather ``{name: R x n_topics x ...}`` per-run tensors into `M x width x ...` members."""
    rows = _rows(folds, part)
    n_runs = next(iter(per_run.values())).shape[0]
    width = max(len(r) for r in rows)
    members = len(folds) * n_runs
    index = torch.full((members, width), -1, dtype=torch.long)
    mask = torch.zeros(members, width, dtype=torch.bool)
    for f, idx in enumerate(rows):
        index[f * n_runs : (f + 1) * n_runs, : len(idx)] = torch.tensor(idx, dtype=torch.long)
        mask[f * n_runs : (f + 1) * n_runs, : len(idx)] = True
    run_of = (torch.arange(members) % n_runs).unsqueeze(-1).expand(-1, width)
    out = {"mask": mask, "index": index}
    for name, values in per_run.items():
        gathered = values[run_of, index.clamp_min(0)]
        pad = (~mask).view(*mask.shape, *([1] * (values.dim() - 2)))
        out[name] = gathered.masked_fill(pad, 0.0)
    return out


def prepare_cv(
    runs: Sequence[Run],
    qrels: Qrels,
    *,
    folds: int = 10,
    depth: int = 100,
    fold_seed: int = 0,
    plus: bool = False,
) -> CVData:
    """Features, relevant counts and fold splits for every (fold, run) member.

    Topics are those of the qrels that at least one run retrieved, in natural order.

    Args:
        runs: The `R` input runs; not modified.
        qrels: Judgements (for the relevant counts).
        folds: Number of folds.
        depth: `k`, list length.
        fold_seed: Seeds the fold split.
        plus: Also compute the richer inputs of ``qlfusion_plus`` (no judgements used).
    """
    judged = set(qrels)
    topics = query_order(q for run in runs for q in run if q in judged)
    if not topics:
        raise InputDataError("the runs and the qrels share no topic")
    per_run = {
        "x": torch.stack([list_features(run, topics, depth) for run in runs]),
        "counts": torch.stack([relevant_counts(run, qrels, topics, depth) for run in runs]),
    }
    names: list[str] = []
    if plus:
        per_run["plus"], names = plus_features(runs, topics, depth)
    split = make_folds(len(topics), folds, fold_seed)
    return CVData(
        topics=topics,
        run_names=[run.name for run in runs],
        folds=split,
        train=_stack(per_run, split, "train"),
        val=_stack(per_run, split, "val"),
        test=_stack(per_run, split, "test"),
        plus_names=names,
    )


def weights_from_predictions(
    data: CVData, p_hat: Tensor, part: str = "test"
) -> dict[str, dict[str, float]]:
    """``{run: {topic: p_hat}}`` from `M x n` predictions on ``part``'s lists."""
    n_runs = len(data.run_names)
    out: dict[str, dict[str, float]] = {name: {} for name in data.run_names}
    rows = data.part(part)
    index, mask = rows["index"].tolist(), rows["mask"].tolist()
    values = p_hat.tolist()
    for m, (idx, keep, vals) in enumerate(zip(index, mask, values, strict=True)):
        name = data.run_names[m % n_runs]
        for i, k, v in zip(idx, keep, vals, strict=True):
            if k:
                out[name][data.topics[i]] = float(v)
    return out


def cross_validated_predictions(
    data: CVData,
    *,
    seed: int = 0,
    settings: QuantifierSettings | None = None,
    variants: Sequence[str] = ("qlfusion",),
    progress: bool = True,
) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """Held-out ``p_hat`` (`M x n_test`) of every requested variant.

    Args:
        data: From :func:`prepare_cv` (with ``plus=True`` for the plus variants).
        seed: Seeds training.
        settings: Training settings.
        variants: Names from :data:`~probrank.models.qlfusion.variants.VARIANTS`.
        progress: Show progress bars.

    Returns:
        ``({variant: p_hat}, info)``; see
        :func:`~probrank.models.qlfusion.variants.member_predictions`.
    """
    parts = (data.train, data.val, data.test)
    return member_predictions(
        parts, seed=seed, settings=settings, variants=variants, progress=progress
    )


def cross_validated_weights(
    data: CVData,
    *,
    seed: int = 0,
    settings: QuantifierSettings | None = None,
    variants: Sequence[str] = ("qlfusion",),
    progress: bool = True,
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, Any]]:
    """Held-out fusion weights ``{variant: {run: {topic: p_hat}}}`` and ``info``.

    See :func:`cross_validated_predictions` for the arguments and ``info``.
    """
    preds, info = cross_validated_predictions(
        data, seed=seed, settings=settings, variants=variants, progress=progress
    )
    return {name: weights_from_predictions(data, p) for name, p in preds.items()}, info


def cross_validated_group(
    data: CVData,
    group: TrainingGroup,
    *,
    seed: int = 0,
    settings: QuantifierSettings | None = None,
    progress: bool = True,
) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """Held-out ``p_hat`` of one training group's variants (every (fold, run) member).

    Args:
        data: From :func:`prepare_cv`.
        group: One of :func:`~probrank.models.qlfusion.variants.training_groups`.
        seed: Seeds training.
        settings: Training settings.
        progress: Show progress bars.

    Returns:
        See :func:`~probrank.models.qlfusion.variants.group_predictions`.
    """
    parts = (data.train, data.val, data.test)
    return group_predictions(parts, group, seed=seed, settings=settings, progress=progress)


def merge_cross_validated(
    data: CVData,
    variants: Sequence[str],
    results: Sequence[tuple[dict[str, Tensor], dict[str, Any]]],
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, Any]]:
    """The weights and ``info`` of :func:`cross_validated_weights` from the results of
    :func:`cross_validated_group` for every group of one seed.

    Args:
        data: The cross-validation the groups were trained on.
        variants: The requested variants.
        results: One result per group of ``training_groups(variants)``.
    """
    parts = (data.train, data.val, data.test)
    preds, info = merge_group_predictions(parts, variants, results)
    return {name: weights_from_predictions(data, p) for name, p in preds.items()}, info
