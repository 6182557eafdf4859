"""Simulation-based calibration (Talts et al. 2018) of any inference algorithm.

SBC checks that an inference algorithm returns the posterior it claims. Draw
``theta ~ p(theta)``, data ``y ~ p(y | theta)``, fit, and count how many of ``L`` posterior
draws fall below ``theta``: when the draws come from the exact posterior, this rank is
uniform on ``0 .. L`` (averaged over the prior, the posterior *is* the prior). Departures have
known shapes:

* a U-shaped histogram (ranks pile up at 0 and ``L``): the posterior is too narrow,
  **under-dispersed** (mean-field SVI, MC dropout); its central intervals cover less than they
  claim;
* a hump in the middle: the posterior is too wide, **over-dispersed**; intervals cover more;
* a slope: the posterior is biased (ranks near ``L``: the truth sits above the draws).

MCMC draws are autocorrelated, which itself bends the histogram; Talts et al. thin them to about
``L`` nearly independent draws before ranking (:func:`thin`).

One-call use::

    from probrank.diagnostics.sbc import run_sbc
    result = run_sbc(simulate, fit, num_simulations=200, num_ranks=19, seed=0)
    result.summary()   # per parameter: chi-square p-value, coverage, dispersion

``simulate(generator) -> (theta, data)`` returns the true `P` parameters; ``fit(data, seed)``
returns `S x P` posterior draws (`chains x draws x P` also accepted).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import torch
from scipy import stats
from torch import Tensor

from probrank._progress import progress_bar
from probrank.exceptions import InputDataError

__all__ = [
    "DISPERSION_Z",
    "Dispersion",
    "ParameterCalibration",
    "SBCResult",
    "coverage",
    "dispersion",
    "quantile_position",
    "rank_statistic",
    "run_sbc",
    "sbc_from_draws",
    "thin",
    "uniformity_test",
]

#: Z-score beyond which :func:`dispersion` calls a departure from uniform ranks.
DISPERSION_Z = 3.0


class Dispersion(str, Enum):
    """What the rank histogram says about the posterior's width and location."""

    CALIBRATED = "calibrated"
    """Rank mean and variance consistent with uniform ranks."""
    UNDER = "under-dispersed"
    """Too narrow: ranks pile up at both ends (intervals cover less than claimed)."""
    OVER = "over-dispersed"
    """Too wide: ranks gather in the middle (intervals cover more than claimed)."""
    BIASED_LOW = "biased low"
    """Posterior below the truth: ranks pile up near ``L``."""
    BIASED_HIGH = "biased high"
    """Posterior above the truth: ranks pile up near 0."""


def _as_draws(draws: Tensor | np.ndarray, num_parameters: int | None = None) -> np.ndarray:
    """`S x P` (or `chains x draws x P`, or `S` for one parameter) -> `S x P` float64."""
    array = np.asarray(draws.detach().cpu() if isinstance(draws, Tensor) else draws, np.float64)
    if array.ndim == 1:
        array = array[:, None]
    elif array.ndim == 3:
        array = array.reshape(-1, array.shape[-1])
    elif array.ndim != 2:
        raise InputDataError(f"draws must be S x P or chains x draws x P, got {array.shape}")
    if num_parameters is not None and array.shape[1] != num_parameters:
        raise InputDataError(
            f"draws hold {array.shape[1]} parameters, the true values {num_parameters}"
        )
    if array.shape[0] < 1 or not np.isfinite(array).all():
        raise InputDataError("draws must be non-empty and finite")
    return array


def thin(draws: Tensor | np.ndarray, num_draws: int) -> np.ndarray:
    """Keep ``num_draws`` evenly spaced draws of each chain (Talts et al.'s thinning).

    Args:
        draws: `S x P` draws, or `chains x draws x P` (each chain thinned on its own, the kept
            draws spread over the chains as evenly as possible).
        num_draws: `L`, the draws kept in all.

    Returns:
        `L x P` draws (float64).

    Raises:
        InputDataError: fewer draws than ``num_draws``, or ``num_draws < 1``.
    """
    array = np.asarray(draws.detach().cpu() if isinstance(draws, Tensor) else draws, np.float64)
    if array.ndim == 2:
        array = array[None]
    if array.ndim == 1:
        array = array[None, :, None]
    if array.ndim != 3:
        raise InputDataError(f"draws must be S x P or chains x draws x P, got {array.shape}")
    chains, per_chain = array.shape[0], array.shape[1]
    if num_draws < 1 or chains * per_chain < num_draws:
        raise InputDataError(f"cannot keep {num_draws} of {chains * per_chain} draws")
    counts = [num_draws // chains + (c < num_draws % chains) for c in range(chains)]
    if max(counts) > per_chain:
        raise InputDataError(f"cannot keep {max(counts)} of {per_chain} draws in one chain")
    kept = [
        array[c, np.linspace(0, per_chain - 1, k).round().astype(int)]
        for c, k in enumerate(counts)
        if k
    ]
    return np.concatenate(kept)


def rank_statistic(
    truth: Tensor | np.ndarray | Sequence[float],
    draws: Tensor | np.ndarray,
    generator: np.random.Generator | None = None,
) -> np.ndarray:
    """Number of draws below the true value, per parameter: uniform on ``0 .. L`` when exact.

    Ties (discrete parameters, or draws equal to the truth) are broken uniformly at random,
    as Talts et al. prescribe, so a discrete parameter's ranks stay uniform.

    Args:
        truth: `P` true (prior-drawn) values.
        draws: `L x P` posterior draws (already thinned; `chains x draws x P` is flattened).
        generator: NumPy generator for tie-breaking (a fixed seed when None).

    Returns:
        `P` integer ranks in ``0 .. L``.
    """
    theta = np.asarray(truth.detach().cpu() if isinstance(truth, Tensor) else truth, np.float64)
    theta = theta.reshape(-1)
    array = _as_draws(draws, theta.shape[0])
    below = (array < theta).sum(0)
    ties = (array == theta).sum(0)
    rng = generator if generator is not None else np.random.default_rng(0)
    extra = np.array([rng.integers(0, t + 1) if t else 0 for t in ties])
    return (below + extra).astype(np.int64)


def quantile_position(
    truth: Tensor | np.ndarray | Sequence[float], draws: Tensor | np.ndarray
) -> np.ndarray:
    """Fraction of all draws below the truth (ties count one half), per parameter: `P`."""
    theta = np.asarray(truth.detach().cpu() if isinstance(truth, Tensor) else truth, np.float64)
    theta = theta.reshape(-1)
    array = _as_draws(draws, theta.shape[0])
    return ((array < theta).sum(0) + 0.5 * (array == theta).sum(0)) / array.shape[0]


def _check_ranks(ranks: np.ndarray | Sequence[int], num_ranks: int) -> np.ndarray:
    array = np.asarray(ranks, dtype=np.int64).reshape(-1)
    if num_ranks < 1 or array.size < 1 or np.min(array) < 0 or np.max(array) > num_ranks:
        raise InputDataError(f"ranks must lie in 0 .. {num_ranks} and be non-empty")
    return array


def uniformity_test(
    ranks: np.ndarray | Sequence[int], num_ranks: int, bins: int | None = None
) -> tuple[float, float, int]:
    """Pearson chi-square test of uniform ranks over equal-width bins (``scipy.stats``).

    Args:
        ranks: `N` ranks in ``0 .. L``.
        num_ranks: `L` (so ``L + 1`` possible ranks).
        bins: Bins `B`, a divisor of ``L + 1`` (default: the largest divisor with at least 5
            expected ranks per bin, at most 20).

    Returns:
        ``(statistic, p_value, bins)``.

    Raises:
        InputDataError: ranks outside ``0 .. L`` or ``bins`` not dividing ``L + 1``.
    """
    array = _check_ranks(ranks, num_ranks)
    values = num_ranks + 1
    if bins is None:
        candidates = [b for b in range(2, min(values, 20) + 1) if values % b == 0]
        enough = [b for b in candidates if array.size / b >= 5]
        bins = max(enough) if enough else (min(candidates) if candidates else values)
    if bins < 2 or values % bins:
        raise InputDataError(f"bins must be >= 2 and divide L + 1 = {values}, got {bins}")
    counts = np.bincount(array * bins // values, minlength=bins)
    result = stats.chisquare(counts)
    return float(result.statistic), float(result.pvalue), int(bins)


def coverage(positions: np.ndarray | Sequence[float], level: float) -> float:
    """Share of simulations whose truth lies in the central ``level`` posterior interval.

    Args:
        positions: `N` quantile positions of the truth among the draws
            (:func:`quantile_position`).
        level: Interval mass in (0, 1).

    Returns:
        The empirical coverage (``level`` when calibrated).
    """
    if not 0 < level < 1:
        raise InputDataError(f"level must be in (0, 1), got {level}")
    u = np.asarray(positions, dtype=np.float64)
    return float(np.mean(np.abs(u - 0.5) <= level / 2 + 1e-12))


def dispersion(
    ranks: np.ndarray | Sequence[int], num_ranks: int
) -> tuple[Dispersion, float, float]:
    """Direction of miscalibration from the rank histogram's mean and variance.

    With ``u = (rank + 1/2) / (L + 1)``, uniform ranks give mean 1/2 and variance
    ``(1 - 1/(L+1)^2) / 12``; the z-scores use the standard errors of a sample mean and
    variance of uniforms (``Var(s^2) = (1/80 - 1/144) / N`` for continuous ones). A variance
    above its uniform value means ranks at the extremes (under-dispersed posterior); a mean
    away from 1/2 means bias. A z-score beyond :data:`DISPERSION_Z` is called; location first.

    Args:
        ranks: `N` ranks in ``0 .. L``.
        num_ranks: `L`.

    Returns:
        ``(direction, z_mean, z_variance)``.
    """
    array = _check_ranks(ranks, num_ranks)
    n, values = array.size, num_ranks + 1
    u = (array + 0.5) / values
    expected_var = (1 - 1 / values**2) / 12
    z_mean = float((u.mean() - 0.5) / math.sqrt(expected_var / n))
    z_var = float((u.var() - expected_var) / math.sqrt((1 / 80 - 1 / 144) / n))
    if abs(z_mean) > DISPERSION_Z:
        return (Dispersion.BIASED_LOW if z_mean > 0 else Dispersion.BIASED_HIGH), z_mean, z_var
    if z_var > DISPERSION_Z:
        return Dispersion.UNDER, z_mean, z_var
    if z_var < -DISPERSION_Z:
        return Dispersion.OVER, z_mean, z_var
    return Dispersion.CALIBRATED, z_mean, z_var


@dataclass(frozen=True)
class ParameterCalibration:
    """SBC summary of one parameter.

    Attributes:
        name: Parameter name.
        chi2: Chi-square statistic over rank bins.
        p_value: Its p-value (uniform ranks: uniform on (0, 1)).
        bins: Bins of the test.
        coverage_50: Share of truths inside the central 50% interval.
        coverage_90: Share inside the central 90% interval.
        dispersion: :class:`Dispersion` direction.
        z_mean: Z-score of the rank mean.
        z_variance: Z-score of the rank variance.
    """

    name: str
    chi2: float
    p_value: float
    bins: int
    coverage_50: float
    coverage_90: float
    dispersion: Dispersion
    z_mean: float
    z_variance: float


@dataclass
class SBCResult:
    """Ranks of `N` simulations for `P` parameters.

    Attributes:
        names: `P` parameter names.
        ranks: `N x P` ranks in ``0 .. L``.
        positions: `N x P` quantile positions among all (unthinned) draws.
        num_ranks: `L`.
        failures: Simulations whose fit raised (skipped), as ``(index, message)``.
        info: Free-form facts about the fits (e.g. NUTS divergences), copied into
            :meth:`summary`.
    """

    names: list[str]
    ranks: np.ndarray
    positions: np.ndarray
    num_ranks: int
    failures: list[tuple[int, str]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def pit(self, seed: int = 0) -> np.ndarray:
        """Probability-integral-transform values of the ranks: `N x P` in ``(0, 1)``.

        ``(rank + u) / (L + 1)`` with ``u ~ Uniform(0, 1)`` (seeded): a discrete uniform rank
        spread over its cell, so a calibrated posterior gives exactly uniform values, the input
        of ArviZ's PIT-ECDF plots (:func:`~probrank.diagnostics.plot_sbc`).
        """
        jitter = np.random.default_rng(seed).uniform(size=self.ranks.shape)
        return (self.ranks + jitter) / (self.num_ranks + 1)

    def parameters(self, bins: int | None = None) -> list[ParameterCalibration]:
        """Per-parameter chi-square test, coverage and dispersion."""
        out = []
        for j, name in enumerate(self.names):
            chi2, p, used = uniformity_test(self.ranks[:, j], self.num_ranks, bins)
            direction, z_mean, z_var = dispersion(self.ranks[:, j], self.num_ranks)
            out.append(
                ParameterCalibration(
                    name=name,
                    chi2=chi2,
                    p_value=p,
                    bins=used,
                    coverage_50=coverage(self.positions[:, j], 0.5),
                    coverage_90=coverage(self.positions[:, j], 0.9),
                    dispersion=direction,
                    z_mean=z_mean,
                    z_variance=z_var,
                )
            )
        return out

    def summary(self, bins: int | None = None) -> dict[str, Any]:
        """One row: the smallest Bonferroni-adjusted p-value over parameters (``p_value``,
        the row passes when it exceeds 0.01), the largest chi-square, the mean coverages and
        the most common non-calibrated direction (``calibrated`` if none)."""
        params = self.parameters(bins)
        p_min = min(p.p_value for p in params)
        directions = Counter(p.dispersion for p in params)
        directions.pop(Dispersion.CALIBRATED, None)
        direction = directions.most_common(1)[0][0] if directions else Dispersion.CALIBRATED
        return {
            "simulations": int(self.ranks.shape[0]),
            "num_ranks": self.num_ranks,
            "bins": params[0].bins,
            "p_value": min(1.0, p_min * len(params)),
            "chi2_max": max(p.chi2 for p in params),
            "coverage_50": float(np.mean([p.coverage_50 for p in params])),
            "coverage_90": float(np.mean([p.coverage_90 for p in params])),
            "dispersion": direction.value,
            "failures": len(self.failures),
            **self.info,
            "parameters": [
                {
                    "name": p.name,
                    "chi2": p.chi2,
                    "p_value": p.p_value,
                    "coverage_50": p.coverage_50,
                    "coverage_90": p.coverage_90,
                    "dispersion": p.dispersion.value,
                    "z_mean": p.z_mean,
                    "z_variance": p.z_variance,
                }
                for p in params
            ],
        }


Simulate = Callable[[torch.Generator], tuple[Tensor, Any]]
Fit = Callable[[Any, int], Tensor]


def run_sbc(
    simulate: Simulate,
    fit: Fit,
    *,
    num_simulations: int,
    num_ranks: int,
    seed: int = 0,
    names: Sequence[str] | None = None,
    progress: bool = False,
    description: str = "sbc",
    max_failures: int = 0,
) -> SBCResult:
    """Run SBC: simulate, fit, thin to ``L`` draws and rank, ``num_simulations`` times.

    Args:
        simulate: ``generator -> (theta, data)``: `P` true parameters drawn from the prior
            and data drawn from the likelihood given them.
        fit: ``(data, seed) -> draws``: `S x P` (or `chains x draws x P`) posterior draws of
            the same parameters, ``S >= L``.
        num_simulations: `N`.
        num_ranks: `L`: the draws kept after thinning (ranks lie in ``0 .. L``).
        seed: Seeds the simulations (a torch generator), the fits (``seed + i``) and the
            tie-breaking.
        names: `P` parameter names (default ``theta[0]`` ...).
        progress: Show a progress bar.
        description: The progress bar's label.
        max_failures: How many fits may raise before the error propagates (skipped
            simulations are recorded in :attr:`SBCResult.failures`; skipping biases SBC, so
            report them).

    Returns:
        An :class:`SBCResult`.
    """
    if num_simulations < 1 or num_ranks < 1:
        raise InputDataError(
            f"need num_simulations >= 1 and num_ranks >= 1, got {num_simulations}, {num_ranks}"
        )
    generator = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    ranks, positions, failures = [], [], []
    for i in progress_bar(range(num_simulations), desc=description, disable=not progress):
        theta, data = simulate(generator)
        try:
            draws = fit(data, seed + i)
        except Exception as error:  # a failed fit is reported, not hidden
            failures.append((i, f"{type(error).__name__}: {error}"))
            if len(failures) > max_failures:
                raise
            continue
        truth = np.asarray(theta.detach().cpu(), np.float64).reshape(-1)
        ranks.append(rank_statistic(truth, thin(draws, num_ranks), rng))
        positions.append(quantile_position(truth, draws))
    if not ranks:
        raise InputDataError("every fit failed")
    count = ranks[0].shape[0]
    labels = list(names) if names is not None else [f"theta[{j}]" for j in range(count)]
    if len(labels) != count:
        raise InputDataError(f"got {len(labels)} names for {count} parameters")
    return SBCResult(labels, np.stack(ranks), np.stack(positions), num_ranks, failures)


def sbc_from_draws(
    truth: Tensor | np.ndarray,
    draws: Tensor | np.ndarray,
    *,
    num_ranks: int,
    names: Sequence[str] | None = None,
    seed: int = 0,
) -> SBCResult:
    """SBC ranks of `N` simulations fitted together (e.g. one vectorised model with a plate
    over simulations, whose posterior factorises so each one's marginal is its own posterior).

    Args:
        truth: `N x P` true parameters.
        draws: `S x N x P` posterior draws, or `chains x S x N x P`.
        num_ranks: `L`, draws kept per simulation after thinning.
        names: `P` parameter names.
        seed: Seeds the tie-breaking.

    Returns:
        An :class:`SBCResult`.
    """
    theta = np.asarray(truth.detach().cpu() if isinstance(truth, Tensor) else truth, np.float64)
    array = np.asarray(draws.detach().cpu() if isinstance(draws, Tensor) else draws, np.float64)
    if array.ndim == 3:
        array = array[None]
    if theta.ndim != 2 or array.ndim != 4 or array.shape[2:] != theta.shape:
        raise InputDataError(
            f"need truth N x P and draws [chains x] S x N x P, got {theta.shape}, {array.shape}"
        )
    rng = np.random.default_rng(seed)
    ranks = [
        rank_statistic(theta[i], thin(array[:, :, i], num_ranks), rng)
        for i in range(theta.shape[0])
    ]
    positions = [quantile_position(theta[i], array[:, :, i]) for i in range(theta.shape[0])]
    count = theta.shape[1]
    labels = list(names) if names is not None else [f"theta[{j}]" for j in range(count)]
    if len(labels) != count:
        raise InputDataError(f"got {len(labels)} names for {count} parameters")
    return SBCResult(labels, np.stack(ranks), np.stack(positions), num_ranks)
