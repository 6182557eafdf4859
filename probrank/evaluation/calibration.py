"""Calibration of predicted relevance probabilities: ECE, MCE, Brier, NLL, reliability curves.

ECE follows Guo et al. (2017): M equal-width bins over [0, 1] (bin b holds confidences in
((b-1)/M, b/M], the first bin also holds 0), ECE = ``sum_b |B_b| / N |acc_b - conf_b|``,
and MCE = ``max_b |acc_b - conf_b|`` over non-empty bins. For binary relevance the default
``kind="top_label"`` uses the predicted label's confidence max(p, 1 - p) and its accuracy, as
the GPF-BERT and SNGP papers do; ``kind="positive"`` bins P(relevant) against the observed
relevance rate (the reliability diagram of a probabilistic classifier; the plots are in
:mod:`probrank.evaluation.calibration_plots`). These few lines are
written here because scikit-learn's ``calibration_curve`` has no ECE and drops empty bins
differently for the two kinds.

Inputs are `n` probabilities of the positive class (or `n x C` class probabilities, top-label
only) and `n` integer labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
import torch

from probrank._options import parse_enum
from probrank.exceptions import InputDataError

__all__ = [
    "CalibrationKind",
    "ReliabilityCurve",
    "brier_score",
    "expected_calibration_error",
    "maximum_calibration_error",
    "negative_log_likelihood",
    "reliability_curve",
]

ArrayLike = np.ndarray | torch.Tensor | list[float] | list[int]


class CalibrationKind(str, Enum):
    """What is binned."""

    TOP_LABEL = "top_label"
    """Confidence of the predicted class against its accuracy (Guo et al. 2017)."""
    POSITIVE = "positive"
    """P(relevant) against the fraction of relevant items in the bin."""


@dataclass(frozen=True)
class ReliabilityCurve:
    """Per-bin statistics (`n_bins` arrays; empty bins have count 0 and NaN means).

    Attributes:
        edges: `n_bins + 1` bin edges from 0 to 1.
        counts: Items per bin.
        confidence: Mean confidence per bin.
        accuracy: Accuracy (or positive rate) per bin.
    """

    edges: np.ndarray
    counts: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray

    @property
    def gaps(self) -> np.ndarray:
        """`n_bins` absolute differences ``|accuracy - confidence|`` (NaN for empty bins)."""
        return np.abs(self.accuracy - self.confidence)


def _as_numpy(values: ArrayLike, name: str) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().double().numpy()
    array = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise InputDataError(f"{name} contain NaN or infinite values")
    return array


def _confidence_and_hits(
    probs: ArrayLike, labels: ArrayLike, kind: CalibrationKind | str
) -> tuple[np.ndarray, np.ndarray]:
    p = _as_numpy(probs, "probabilities")
    y = _as_numpy(labels, "labels")
    if p.shape[0] != y.shape[0] or y.ndim != 1:
        raise InputDataError(f"probabilities {p.shape} and labels {y.shape} do not match")
    if p.size and (p.min() < 0.0 or p.max() > 1.0):
        raise InputDataError("probabilities must lie in [0, 1]")
    if np.any(y != np.round(y)) or (y.size and y.min() < 0):
        raise InputDataError("labels must be non-negative integers")
    mode = parse_enum(CalibrationKind, kind, "kind")
    if p.ndim == 2:
        if mode is not CalibrationKind.TOP_LABEL:
            raise InputDataError("class-probability matrices support kind='top_label' only")
        predicted = p.argmax(axis=1)
        return p.max(axis=1), (predicted == y).astype(np.float64)
    if p.ndim != 1:
        raise InputDataError(f"probabilities must be `n` or `n x C`, got shape {p.shape}")
    if np.any(y > 1):
        raise InputDataError("binary probabilities need 0/1 labels")
    if mode is CalibrationKind.POSITIVE:
        return p, y
    predicted = (p > 0.5).astype(np.float64)
    return np.maximum(p, 1.0 - p), (predicted == y).astype(np.float64)


def reliability_curve(
    probs: ArrayLike,
    labels: ArrayLike,
    n_bins: int = 10,
    kind: CalibrationKind | str = CalibrationKind.TOP_LABEL,
) -> ReliabilityCurve:
    """Bin confidences into ``n_bins`` equal-width bins and average per bin.

    Args:
        probs: `n` P(relevant), or `n x C` class probabilities.
        labels: `n` integer labels.
        n_bins: Number of bins M.
        kind: ``top_label`` or ``positive``.

    Returns:
        The per-bin counts, mean confidences and accuracies.
    """
    if n_bins < 1:
        raise InputDataError(f"n_bins must be positive, got {n_bins}")
    confidence, hits = _confidence_and_hits(probs, labels, kind)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # right-closed bins ((b-1)/M, b/M]; 0 goes to the first bin
    index = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, n_bins - 1)
    counts = np.bincount(index, minlength=n_bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.bincount(index, weights=confidence, minlength=n_bins) / counts
        acc = np.bincount(index, weights=hits, minlength=n_bins) / counts
    return ReliabilityCurve(edges=edges, counts=counts, confidence=conf, accuracy=acc)


def expected_calibration_error(
    probs: ArrayLike,
    labels: ArrayLike,
    n_bins: int = 10,
    kind: CalibrationKind | str = CalibrationKind.TOP_LABEL,
) -> float:
    """ECE = ``sum_b |B_b| / N |acc_b - conf_b|`` (see the module docstring for the bins)."""
    curve = reliability_curve(probs, labels, n_bins, kind)
    total = curve.counts.sum()
    if total == 0:
        raise InputDataError("ECE of an empty set is undefined")
    filled = curve.counts > 0
    return float((curve.counts[filled] * curve.gaps[filled]).sum() / total)


def maximum_calibration_error(
    probs: ArrayLike,
    labels: ArrayLike,
    n_bins: int = 10,
    kind: CalibrationKind | str = CalibrationKind.TOP_LABEL,
) -> float:
    """MCE = max over non-empty bins of ``|acc_b - conf_b|``."""
    curve = reliability_curve(probs, labels, n_bins, kind)
    filled = curve.counts > 0
    if not filled.any():
        raise InputDataError("MCE of an empty set is undefined")
    return float(curve.gaps[filled].max())


def brier_score(probs: ArrayLike, labels: ArrayLike) -> float:
    """Mean squared error between P(relevant) and the 0/1 label (`n` inputs)."""
    p, y = _confidence_and_hits(probs, labels, CalibrationKind.POSITIVE)
    return float(np.mean((p - y) ** 2))


def negative_log_likelihood(probs: ArrayLike, labels: ArrayLike, eps: float = 1e-12) -> float:
    """Mean binary cross-entropy of the labels under P(relevant), probabilities clipped to
    [eps, 1 - eps] so that a confident mistake costs a large but finite amount."""
    p, y = _confidence_and_hits(probs, labels, CalibrationKind.POSITIVE)
    p = np.clip(p, eps, 1.0 - eps)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log1p(-p)))
