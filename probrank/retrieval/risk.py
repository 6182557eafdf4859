"""Ranking by the posterior of P(relevant): the probability ranking principle and risk-aware
criteria.

A second-stage model gives, for each candidate, a posterior over its relevance logit ``f``
(here its Gaussian marginal ``N(m, v)``); ``p = sigmoid(f)`` is its probability of relevance.
The criteria (:class:`RankingCriterion`, the one enum of the package: the cascade, the PyTerrier
transformer and :meth:`probrank.models.gpf_ranker.GPFRanker.rerank` take it) order candidates;
each is one entry of a table of score functions (:data:`CRITERION_SCORES`):

* ``probability``: the posterior mean of P(relevant), the model's calibrated probability. By
  the probability ranking principle (Robertson 1977) this ordering maximises the expected
  precision at every cut-off when the probabilities are calibrated.
* ``mean_sd``: ``E[p] - lambda * sd[p]`` over posterior draws of ``p`` (mean-variance
  ranking, Wang & Zhu 2009; Cohen et al. 2021): with ``lambda > 0`` an uncertain candidate is
  demoted below a certain one of the same mean.
* ``cvar``: the conditional value at risk of ``p`` at level ``alpha``, the mean of the lowest
  ``alpha`` share of its posterior draws (Cohen et al., SIGIR 2021, "Not all relevance
  scores are equal"); ``alpha = 1`` is the posterior mean, a small ``alpha`` ranks by the
  worst plausible relevance.
* ``mean``: the posterior mean ``m`` of the logit (no draws).
* ``lower``: ``m - lambda * sqrt(v)``, a lower bound of the logit (risk-averse, no draws).

Draws are seeded (:func:`probability_draws`), so the same seed gives the same ranking.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import torch
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = [
    "CRITERION_SCORES",
    "CriterionInputs",
    "RankingCriterion",
    "conditional_value_at_risk",
    "criterion_scores",
    "mean_minus_sd",
    "probability_draws",
]


class RankingCriterion(str, Enum):
    """How candidates are ordered from their posterior of P(relevant)."""

    PROBABILITY = "probability"
    """Posterior mean P(relevant) (the probability ranking principle)."""
    MEAN_SD = "mean_sd"
    """``E[p] - lambda * sd[p]`` over posterior draws (risk-averse for ``lambda > 0``)."""
    CVAR = "cvar"
    """CVaR at level ``alpha``, the mean of the lowest ``alpha`` share of the draws of ``p``."""
    MEAN = "mean"
    """The posterior mean of the logit."""
    LOWER = "lower"
    """Risk-averse, the logit's posterior mean minus ``lambda`` posterior standard deviations."""


def probability_draws(
    mean: Tensor, variance: Tensor, num_draws: int = 1000, *, seed: int = 0
) -> Tensor:
    """Draws of ``p = sigmoid(f)`` with ``f ~ N(mean, variance)`` independently per candidate.

    Args:
        mean: `n` posterior means of the logits.
        variance: `n` posterior variances (``>= 0``).
        num_draws: `S` draws.
        seed: Seeds the draws.

    Returns:
        `S x n` float64 probabilities.
    """
    mean, variance = mean.detach().double().reshape(-1), variance.detach().double().reshape(-1)
    if mean.shape != variance.shape:
        raise InputDataError(
            f"mean {tuple(mean.shape)} and variance {tuple(variance.shape)} differ"
        )
    if num_draws < 1:
        raise InputDataError(f"num_draws must be positive, got {num_draws}")
    if not bool(torch.isfinite(mean).all()) or not bool(torch.isfinite(variance).all()):
        raise InputDataError("posterior means and variances must be finite")
    generator = torch.Generator().manual_seed(int(seed))
    z = torch.randn(num_draws, mean.shape[0], generator=generator, dtype=torch.float64)
    return torch.sigmoid(mean + variance.clamp_min(0.0).sqrt() * z)


def _check_draws(draws: Tensor) -> Tensor:
    if draws.dim() != 2 or draws.shape[0] < 1:
        raise InputDataError(f"draws must be `S x n` with S >= 1, got shape {tuple(draws.shape)}")
    return draws.detach().double()


def mean_minus_sd(draws: Tensor, risk_aversion: float = 1.0) -> Tensor:
    """``mean - risk_aversion * sd`` of each candidate's draws.

    Args:
        draws: `S x n` posterior draws.
        risk_aversion: ``lambda >= 0`` (0: the posterior mean).

    Returns:
        `n` float64 scores (the standard deviation uses ``S - 1``; 0 for one draw).
    """
    draws = _check_draws(draws)
    if not risk_aversion >= 0:
        raise InputDataError(f"risk_aversion must be >= 0, got {risk_aversion!r}")
    sd = draws.std(0) if draws.shape[0] > 1 else torch.zeros(draws.shape[1], dtype=torch.float64)
    return draws.mean(0) - float(risk_aversion) * sd


def conditional_value_at_risk(draws: Tensor, alpha: float = 0.1) -> Tensor:
    """Lower-tail CVaR at level ``alpha`` of each candidate's draws.

    With the `S` draws sorted ascending ``x_(1) <= ... <= x_(S)`` and ``m = alpha S``, ``k =
    floor(m)``: ``CVaR = (x_(1) + ... + x_(k) + (m - k) x_(k+1)) / m``, the mean of the lowest
    ``alpha`` share of the empirical distribution (a fractional draw weighted by its share).

    Args:
        draws: `S x n` posterior draws.
        alpha: Level in ``(0, 1]`` (1: the mean).

    Returns:
        `n` float64 values.
    """
    draws = _check_draws(draws)
    if not 0.0 < float(alpha) <= 1.0:
        raise InputDataError(f"alpha must lie in (0, 1], got {alpha!r}")
    ordered = draws.sort(dim=0).values
    size = ordered.shape[0]
    m = float(alpha) * size
    k = min(math.floor(m + 1e-12), size)
    total = ordered[:k].sum(0)
    if k < size and m - k > 1e-12:
        total = total + (m - k) * ordered[k]
    return total / m


def criterion_scores(
    criterion: RankingCriterion | str,
    *,
    probability: Tensor,
    mean: Tensor,
    variance: Tensor,
    risk_aversion: float = 1.0,
    alpha: float = 0.1,
    num_draws: int = 1000,
    seed: int = 0,
) -> Tensor:
    """The scores a criterion ranks by.

    Args:
        criterion: :class:`RankingCriterion`.
        probability: `n` posterior mean P(relevant) (the model's calibrated probability).
        mean: `n` posterior means of the logits.
        variance: `n` posterior variances of the logits.
        risk_aversion: ``lambda`` of ``mean_sd`` and ``lower``.
        alpha: Level of ``cvar``.
        num_draws: Draws for the risk-aware criteria.
        seed: Seeds the draws.

    Returns:
        `n` float64 scores (higher ranks first).
    """
    from probrank._options import parse_enum

    chosen = parse_enum(RankingCriterion, criterion, "criterion")
    inputs = CriterionInputs(probability, mean, variance, risk_aversion, alpha, num_draws, seed)
    return CRITERION_SCORES[chosen](inputs)


@dataclass(frozen=True)
class CriterionInputs:
    """What a criterion's score function reads (see :func:`criterion_scores`)."""

    probability: Tensor
    mean: Tensor
    variance: Tensor
    risk_aversion: float
    alpha: float
    num_draws: int
    seed: int

    def draws(self) -> Tensor:
        """`S x n` seeded draws of ``p`` (:func:`probability_draws`)."""
        return probability_draws(self.mean, self.variance, self.num_draws, seed=self.seed)


def _lower(inputs: CriterionInputs) -> Tensor:
    if not inputs.risk_aversion >= 0:
        raise InputDataError(f"risk_aversion must be >= 0, got {inputs.risk_aversion!r}")
    sd = inputs.variance.detach().double().reshape(-1).clamp_min(0.0).sqrt()
    return inputs.mean.detach().double().reshape(-1) - float(inputs.risk_aversion) * sd


CRITERION_SCORES: dict[RankingCriterion, Callable[[CriterionInputs], Tensor]] = {
    RankingCriterion.PROBABILITY: lambda i: i.probability.detach().double().reshape(-1),
    RankingCriterion.MEAN_SD: lambda i: mean_minus_sd(i.draws(), i.risk_aversion),
    RankingCriterion.CVAR: lambda i: conditional_value_at_risk(i.draws(), i.alpha),
    RankingCriterion.MEAN: lambda i: i.mean.detach().double().reshape(-1),
    RankingCriterion.LOWER: _lower,
}
"""The `n` scores (float64, higher first) of each :class:`RankingCriterion`."""
