"""Choosing the multi-task net's ranking weight, P(keep) threshold and keep-top rule.

One :class:`~probrank.models.multitask.network.MultiTaskNet` is fitted per ranking weight
``lambda`` (early stopping on the validation loss); then ``lambda``, the threshold on P(keep)
and whether each list's top-ranked answer is always kept are chosen together by a validation
score, ``(accuracy, MRR)`` compared lexicographically (ties by MRR). The score is the caller's:
:class:`~probrank.models.multitask.MultiTaskRanker` uses the accuracy of the kept/dropped labels
and MEDIQA's MRR, the ``mediqa_multitask`` protocol MEDIQA's official scorer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.models.multitask.network import MultiTaskData, MultiTaskNet, fit_multitask
from probrank.models.multitask.network import predict_multitask as _predict

__all__ = [
    "DEFAULT_THRESHOLDS",
    "KeepTop",
    "MultiTaskChoice",
    "Scorer",
    "keep_labels",
    "select_multitask",
]

DEFAULT_THRESHOLDS = tuple(float(t) for t in np.round(np.linspace(0.1, 0.9, 33), 3))
"""P(keep) thresholds tried on validation (the MEDIQA protocol's grid)."""

Scorer = Callable[[np.ndarray, np.ndarray], tuple[float, float]]
"""``(scores, labels) -> (accuracy, MRR)`` of the validation answers (each `n`)."""


class KeepTop(str, Enum):
    """Whether each list's top-ranked answer is always kept."""

    CHOOSE = "choose"
    """Chosen on validation together with lambda and the threshold (the protocol's)."""
    ALWAYS = "always"
    """Always keep the top-ranked answer (every query has a correct answer)."""
    NEVER = "never"
    """Keep exactly the answers above the threshold."""

    @property
    def options(self) -> tuple[bool, ...]:
        """The keep-top rules tried (``False`` first)."""
        return {KeepTop.CHOOSE: (False, True), KeepTop.ALWAYS: (True,), KeepTop.NEVER: (False,)}[
            self
        ]


def keep_labels(
    groups: Sequence[Sequence[int]],
    scores: np.ndarray,
    probs: np.ndarray,
    threshold: float,
    keep_top: bool,
) -> np.ndarray:
    """Kept (1) or dropped (0) labels: P(keep) above ``threshold``, plus, with ``keep_top``,
    the top-scored answer of every group.

    Args:
        groups: Each list's answer indices.
        scores: `n` ranking scores.
        probs: `n` P(keep).
        threshold: The P(keep) threshold.
        keep_top: Always keep each list's top-scored answer.

    Returns:
        `n` integer labels.
    """
    labels = (probs > threshold).astype(int)
    if keep_top:
        for group in groups:
            if group:
                labels[max(group, key=lambda i: scores[i])] = 1
    return labels


@dataclass
class MultiTaskChoice:
    """A fitted net with the settings chosen on validation.

    Attributes:
        net: The network.
        ranking_weight: lambda.
        threshold: The P(keep) threshold.
        keep_top: Whether each list's top-ranked answer is always kept.
        validation_accuracy: Its validation accuracy.
        validation_mrr: Its validation MRR.
        best_epoch: The epoch early stopping kept.
    """

    net: MultiTaskNet
    ranking_weight: float
    threshold: float
    keep_top: bool
    validation_accuracy: float
    validation_mrr: float
    best_epoch: int

    def predict(
        self,
        features: Tensor,
        groups: Sequence[Sequence[int]],
        *,
        num_samples: int = 200,
        seed: int = 0,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, labels, P(keep))`` of `n` answers (each `n`): posterior mean utility,
        kept/dropped labels by the chosen rule, posterior mean P(keep).

        Args:
            features: `n x d` answer features.
            groups: Each list's answer indices.
            num_samples: Draws of the output layer.
            seed: Seed of the draws.
        """
        probs, mean, _ = _predict(self.net, features, num_samples=num_samples, seed=seed)
        scores, p = mean.numpy(), probs.numpy()
        return scores, keep_labels(groups, scores, p, self.threshold, self.keep_top), p


def select_multitask(
    new_net: Callable[[float], MultiTaskNet],
    train: MultiTaskData,
    validation: MultiTaskData,
    validation_groups: Sequence[Sequence[int]],
    scorer: Scorer,
    *,
    ranking_weights: Sequence[float],
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    keep_top: KeepTop | str = KeepTop.CHOOSE,
    lr: float = 3e-3,
    weight_decay: float = 1e-4,
    max_epochs: int = 300,
    patience: int = 20,
    num_samples: int = 200,
    seed: int = 0,
    progress: bool = False,
) -> MultiTaskChoice:
    """Fit one net per ranking weight and keep the best (weight, threshold, keep-top rule).

    Args:
        new_net: A fresh (float64) net for a ranking weight.
        train: Training answers.
        validation: Validation answers (early stopping and selection).
        validation_groups: Each validation list's answer indices.
        scorer: The validation score of ``(scores, labels)``, compared as a tuple.
        ranking_weights: Candidate lambdas.
        thresholds: Candidate P(keep) thresholds.
        keep_top: :class:`KeepTop`.
        lr: Adam learning rate.
        weight_decay: Adam's L2 penalty.
        max_epochs: Full-batch steps at most.
        patience: Steps without a better validation loss before stopping.
        num_samples: Draws of the output layer for P(keep).
        seed: Seeds training and the draws.
        progress: Show a progress bar while training.

    Returns:
        The chosen :class:`MultiTaskChoice`.

    Raises:
        InputDataError: no ranking weight or no threshold.
    """
    if not ranking_weights or not thresholds:
        raise InputDataError("ranking_weights and thresholds must not be empty")
    rules = KeepTop(keep_top).options
    best: tuple[tuple[float, float], MultiTaskChoice] | None = None
    for weight in ranking_weights:
        net = new_net(weight)
        best_epoch = fit_multitask(
            net,
            train,
            validation,
            lr=lr,
            weight_decay=weight_decay,
            max_epochs=max_epochs,
            patience=patience,
            seed=seed,
            progress=progress,
        )
        probs, mean, _ = _predict(net, validation.features, num_samples=num_samples, seed=seed)
        scores, p = mean.numpy(), probs.numpy()
        for threshold in thresholds:
            for rule in rules:
                labels = keep_labels(validation_groups, scores, p, threshold, rule)
                key = scorer(scores, labels)
                if best is None or key > best[0]:
                    choice = MultiTaskChoice(
                        net, float(weight), float(threshold), rule, key[0], key[1], best_epoch
                    )
                    best = (key, choice)
    if best is None:  # unreachable: the grids are non-empty
        raise InputDataError("nothing to choose from")
    return best[1]
