"""The data of QLFusion's cross-fitting: per-(fold, run) *member* tensors and held-out weights.

To fuse the very topics it learns from, :meth:`~probrank.models.qlfusion.QLFusion.cross_fit`
splits the topics into ``F`` folds (:func:`probrank.data.folds.fold_indices`, the project's
one fold rule, each fold sorted; at least 3 folds here). For fold ``f`` the test topics are
fold ``f``, the validation topics fold ``f + 1`` (mod ``F``), the rest train; one quantifier
per (fold, run) member is trained and predicts its test lists. Members are ordered
``fold * R + run``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from probrank.data.folds import fold_indices
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import query_order
from probrank.fusion.fuse import fuse
from probrank.models.qlfusion.network import list_features, relevant_counts
from probrank.models.qlfusion.plus_features import plus_features

__all__ = ["MIN_CROSS_FIT_FOLDS", "PARTS", "CrossFit", "CrossFitData", "prepare_members"]

PARTS = ("train", "val", "test")

MIN_CROSS_FIT_FOLDS = 3
"""Cross-fitting needs a test fold, a validation fold and at least one training fold."""


@dataclass(frozen=True)
class CrossFitData:
    """Per-(fold, run) member tensors of a cross-fitting.

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

    @property
    def parts(self) -> tuple[dict[str, Tensor], dict[str, Tensor], dict[str, Tensor]]:
        """``(train, val, test)``."""
        return self.train, self.val, self.test

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

    def weights(self, p_hat: Tensor, part: str = "test") -> dict[str, dict[str, float]]:
        """``{run: {topic: p_hat}}`` from `M x n` predictions on ``part``'s lists."""
        n_runs = len(self.run_names)
        out: dict[str, dict[str, float]] = {name: {} for name in self.run_names}
        rows = self.part(part)
        index, mask = rows["index"].tolist(), rows["mask"].tolist()
        values = p_hat.tolist()
        for m, (idx, keep, vals) in enumerate(zip(index, mask, values, strict=True)):
            name = self.run_names[m % n_runs]
            for i, k, v in zip(idx, keep, vals, strict=True):
                if k:
                    out[name][self.topics[i]] = float(v)
        return out


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


def prepare_members(
    runs: Sequence[Run],
    qrels: Qrels,
    *,
    folds: int = 10,
    depth: int = 100,
    fold_seed: int = 0,
    plus: bool = False,
    relevance_level: int = 1,
) -> CrossFitData:
    """Features, relevant counts and fold splits for every (fold, run) member.

    Topics are those of the qrels that at least one run retrieved, in natural order.

    Args:
        runs: The `R` input runs; not modified.
        qrels: Judgements (for the relevant counts).
        folds: Number of folds (at least :data:`MIN_CROSS_FIT_FOLDS`).
        depth: `k`, list length.
        fold_seed: Seeds the fold split.
        plus: Also compute the richer inputs of ``qlfusion_plus`` (no judgements used).
        relevance_level: Lowest qrels grade counted relevant.
    """
    judged = set(qrels)
    topics = query_order(q for run in runs for q in run if q in judged)
    if not topics:
        raise InputDataError("the runs and the qrels share no topic")
    split = fold_indices(len(topics), folds, seed=fold_seed, min_folds=MIN_CROSS_FIT_FOLDS)
    per_run = {
        "x": torch.stack([list_features(run, topics, depth) for run in runs]),
        "counts": torch.stack(
            [relevant_counts(run, qrels, topics, depth, relevance_level) for run in runs]
        ),
    }
    names: list[str] = []
    if plus:
        per_run["plus"], names = plus_features(runs, topics, depth)
    return CrossFitData(
        topics=topics,
        run_names=[run.name for run in runs],
        folds=split,
        train=_stack(per_run, split, "train"),
        val=_stack(per_run, split, "val"),
        test=_stack(per_run, split, "test"),
        plus_names=names,
    )


@dataclass(frozen=True)
class CrossFit:
    """Cross-fitted predictions (:meth:`~probrank.models.qlfusion.QLFusion.cross_fit`): every
    topic's lists predicted by quantifiers that never saw its judgements.

    Attributes:
        data: The members (folds, topics, runs and their tensors).
        depth: `k`, the list length fusion uses.
        predictions: ``{variant: p_hat}``, `M x n_test` held-out predictions of each variant.
        test_mae: ``{variant: MAE}`` of ``p_hat`` on the test lists.
        val_mae: ``{variant: MAE}`` of the chosen models on their validation lists (mean
            over members).
        val_predictions: ``{variant: p_hat}``, `M x n_val` (for selection on validation).
        batch_sizes: ``{variant: [chosen batch size per member]}`` (neural variants).
        seconds: Wall time of each training group (e.g. ``"bayesian/scores"``).
        quantifiers: ``{variant: TrainedQuantifier}`` (neural variants trained here).
        coverage: ``{variant: {"coverage_50": ..., "coverage_90": ...}}``: the share of test
            lists whose observed proportion lies in its 50% / 90% posterior predictive
            interval (neural variants; :mod:`~probrank.models.qlfusion.predictive`).
        loo: ``{variant: {"elpd_loo_per_list": ..., "se_per_list": ..., "p_loo": ...,
            "pareto_k_bad": ...}}``: PSIS-LOO of the training lists under the counts'
            likelihood (Bayesian binomial-loss variants;
            :func:`~probrank.models.qlfusion.predictive.members_loo`).
        concentration: ``{variant: [c of each fold x run member]}`` for a latent
            concentration (``likelihood = "latent_beta_binomial"``).
    """

    data: CrossFitData
    depth: int
    predictions: dict[str, Tensor]
    test_mae: dict[str, float]
    val_mae: dict[str, float]
    val_predictions: dict[str, Tensor]
    batch_sizes: dict[str, list[int]]
    seconds: dict[str, float]
    quantifiers: dict[str, Any]
    coverage: dict[str, dict[str, float]] = field(default_factory=dict)
    loo: dict[str, dict[str, float]] = field(default_factory=dict)
    concentration: dict[str, list[float]] = field(default_factory=dict)

    def weights(self, variant: str = "qlfusion", part: str = "test") -> dict[str, dict[str, float]]:
        """Fusion weights ``{run: {topic: p_hat}}`` of ``variant`` on ``part``'s lists."""
        source = self.predictions if part == "test" else self.val_predictions
        if variant not in source:
            raise InputDataError(f"no cross-fitted variant {variant!r}; have {sorted(source)}")
        return self.data.weights(source[variant], part)

    def fuse(
        self,
        runs: Sequence[Run],
        variant: str = "qlfusion",
        *,
        norm: str = "minmax",
        name: str | None = None,
    ) -> Run:
        """Fuse ``runs`` with ``variant``'s held-out weights (min-max scores times weight,
        summed over runs; the rule of :meth:`~probrank.models.qlfusion.QLFusion.fuse`).

        Args:
            runs: The cross-fitted runs; not modified.
            variant: A cross-fitted variant.
            norm: Score normalisation.
            name: The fused run's name (default the variant's).
        """
        return fuse(
            runs,
            "weighted",
            norm=norm,
            depth=self.depth,
            weights=self.weights(variant),
            name=variant if name is None else name,
        )
