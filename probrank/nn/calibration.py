"""Post-hoc calibration of relevance heads, selected on validation data by NLL.

Every head's probability can be written ``sigmoid(m / (T sqrt(1 + lambda v)))``: ``m`` and ``v``
are the predictive mean and variance of the logit (``v = 0`` for heads without a Gaussian
predictive, whose ``m`` is the logit of their probability), ``lambda`` is the mean-field factor of
the GP heads (SNGP/GPF tune it on validation data; pi / 8 matches the probit) and ``T`` a
temperature (1: none). :func:`select_calibration` picks ``lambda`` from a grid and, optionally,
fits ``T`` by minimising the validation negative log-likelihood; the NLL is convex in ``1 / T``
for a fixed ``lambda``, so ``T`` is found by bisection on the derivative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = [
    "DEFAULT_MEAN_FIELD_FACTORS",
    "Calibration",
    "CalibrationChoice",
    "calibrated_nll",
    "fit_temperature",
    "select_calibration",
]

DEFAULT_MEAN_FIELD_FACTORS: tuple[float, ...] = (0.0, 0.1, math.pi / 8, 1.0, 3.0, 10.0, 30.0, 100.0)
"""The mean-field factors ``lambda`` tried by default (0 is the MAP logit alone; large values
let the predictive variance temper the logits the way SNGP's tuned factor does)."""


@dataclass(frozen=True)
class Calibration:
    """``P(relevant) = sigmoid(m / (temperature * sqrt(1 + mean_field_factor * v)))``.

    Attributes:
        mean_field_factor: ``lambda >= 0``.
        temperature: ``T > 0``.
    """

    mean_field_factor: float = math.pi / 8
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean_field_factor) and self.mean_field_factor >= 0):
            raise InputDataError(f"mean_field_factor must be >= 0, got {self.mean_field_factor}")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise InputDataError(f"temperature must be positive, got {self.temperature}")

    def logits(self, mean: Tensor, variance: Tensor) -> Tensor:
        """`...` calibrated logits of `...` predictive means and variances."""
        scale = torch.sqrt(1.0 + self.mean_field_factor * variance.clamp_min(0.0))
        return mean / (self.temperature * scale)

    def probability(self, mean: Tensor, variance: Tensor) -> Tensor:
        """`...` calibrated probabilities of `...` predictive means and variances."""
        return torch.sigmoid(self.logits(mean, variance))


@dataclass(frozen=True)
class CalibrationChoice:
    """The result of :func:`select_calibration`.

    Attributes:
        calibration: The NLL-minimising calibration.
        nll: Its mean validation NLL (nats per item).
        grid: ``{lambda: (temperature, NLL)}`` of every factor tried.
    """

    calibration: Calibration
    nll: float
    grid: dict[float, tuple[float, float]] = field(default_factory=dict)


def _check(logits: Tensor, labels: Tensor) -> None:
    if logits.shape != labels.shape or logits.numel() == 0:
        raise InputDataError(
            f"need matching non-empty logits and labels, got shapes {tuple(logits.shape)} "
            f"and {tuple(labels.shape)}"
        )
    if not bool(torch.isfinite(logits).all()):
        raise InputDataError("non-finite predictive means or variances")
    if not bool(((labels == 0) | (labels == 1)).all()):
        raise InputDataError("labels must be 0 or 1")


def calibrated_nll(logits: Tensor, labels: Tensor) -> float:
    """Mean binary negative log-likelihood (nats) of `n` logits and `n` 0/1 labels."""
    _check(logits, labels)
    z, y = logits.double(), labels.double()
    return float(torch.nn.functional.binary_cross_entropy_with_logits(z, y))


def fit_temperature(
    logits: Tensor,
    labels: Tensor,
    *,
    bounds: tuple[float, float] = (0.05, 20.0),
    iterations: int = 100,
) -> float:
    """The temperature ``T`` minimising the mean NLL of ``sigmoid(logits / T)``.

    The NLL is convex in ``a = 1 / T``; its derivative ``mean((sigmoid(a z) - y) z)`` is
    increasing, so its root is found by bisection on ``a`` within ``1 / bounds``.

    Args:
        logits: `n` uncalibrated logits.
        labels: `n` 0/1 labels.
        bounds: Smallest and largest ``T`` allowed.
        iterations: Bisection steps.

    Returns:
        ``T`` within ``bounds``.

    Raises:
        InputDataError: Mismatched or non-finite inputs, labels other than 0/1, bad bounds.
    """
    _check(logits, labels)
    low_t, high_t = bounds
    if not 0 < low_t < high_t:
        raise InputDataError(f"temperature bounds must satisfy 0 < low < high, got {bounds}")
    z, y = logits.double().reshape(-1), labels.double().reshape(-1)

    def slope(a: float) -> float:
        return float(((torch.sigmoid(a * z) - y) * z).mean())

    low, high = 1.0 / high_t, 1.0 / low_t
    if slope(low) >= 0:
        return high_t
    if slope(high) <= 0:
        return low_t
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        if slope(middle) < 0:
            low = middle
        else:
            high = middle
    return 1.0 / (0.5 * (low + high))


def select_calibration(
    mean: Tensor,
    variance: Tensor,
    labels: Tensor,
    *,
    factors: Sequence[float] = DEFAULT_MEAN_FIELD_FACTORS,
    temperature: bool = True,
    bounds: tuple[float, float] = (0.05, 20.0),
) -> CalibrationChoice:
    """Pick the mean-field factor (and temperature) with the lowest validation NLL.

    Args:
        mean: `n` predictive means of the logits.
        variance: `n` predictive variances (zeros for heads without one: ``lambda`` then has no
            effect and the first factor is kept).
        labels: `n` 0/1 validation labels.
        factors: Mean-field factors ``lambda`` to try (non-negative).
        temperature: Also fit a temperature per factor; otherwise ``T = 1``.
        bounds: Temperature bounds.

    Returns:
        The :class:`CalibrationChoice` (ties go to the earlier factor).

    Raises:
        InputDataError: Bad shapes, labels, factors or an empty grid.
    """
    if mean.shape != variance.shape:
        raise InputDataError(
            f"mean {tuple(mean.shape)} and variance {tuple(variance.shape)} shapes differ"
        )
    if not factors:
        raise InputDataError("no mean-field factors to choose from")
    grid: dict[float, tuple[float, float]] = {}
    options: list[tuple[float, Calibration]] = []
    for factor in factors:
        base = Calibration(float(factor), 1.0)
        logits = base.logits(mean.double(), variance.double())
        t = fit_temperature(logits, labels, bounds=bounds) if temperature else 1.0
        nll = calibrated_nll(logits / t, labels)
        grid[float(factor)] = (t, nll)
        options.append((nll, Calibration(float(factor), t)))
    nll, calibration = min(options, key=lambda option: option[0])
    return CalibrationChoice(calibration, nll, grid)
