"""Posterior predictive checks with test statistics and posterior predictive p-values.

For each posterior draw ``theta_s`` the likelihood ``p(y | theta_s)`` gives replicated data
``y_rep_s``; a test statistic (or discrepancy, which may depend on ``theta``) is computed on
the observed and the replicated data, and the posterior predictive p-value is
``P(T(y_rep, theta) >= T(y, theta) | y)`` (Gelman, Meng and Stern 1996), ties counted half.
Values near 0 or 1 say the model does not reproduce that aspect of the data.

:func:`predictive_check` works for any distribution with ``mean``, ``variance``, ``sample``
and ``log_prob``; :func:`ppc_binomial`, :func:`ppc_bernoulli` and
:func:`ppc_bradley_terry` build it for probrank's three likelihood families, and
:func:`ppc_from_inference_data` checks ``theta``-free statistics on the
``posterior_predictive`` and ``observed_data`` groups of any ArviZ data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import pyro.distributions as dist
import torch
from torch import Tensor
from torch.distributions import Distribution

from probrank._arviz import get_group
from probrank._options import parse_enum
from probrank.exceptions import InputDataError

__all__ = [
    "PPCResult",
    "Statistic",
    "posterior_predictive_pvalue",
    "ppc_bernoulli",
    "ppc_binomial",
    "ppc_bradley_terry",
    "ppc_from_inference_data",
    "predictive_check",
]


class Statistic(str, Enum):
    """Test statistics; those marked *discrepancy* depend on ``theta`` through the
    likelihood's mean ``E[y | theta]`` and variance ``Var[y | theta]``."""

    MEAN = "mean"
    """Mean of the observations."""
    VARIANCE = "variance"
    """Variance of the observations across items."""
    MAX = "max"
    """Largest observation."""
    MIN = "min"
    """Smallest observation."""
    ZEROS = "zeros"
    """Fraction of zero observations (excess zeros)."""
    DISPERSION = "dispersion"
    """Discrepancy. Pearson ``mean((y - E[y]) ^ 2 / Var[y])``, about 1 when the likelihood's
    variance is right; large under over-dispersion (e.g. beta-binomial data, binomial model)."""
    CALIBRATION = "calibration"
    """Discrepancy. Hosmer-Lemeshow ``sum_b (O_b - E_b) ^ 2 / V_b`` over 10 equal-count bins
    of ``E[y]`` (observed and expected totals and the variance per bin)."""
    GROUP_DISPERSION = "group_dispersion"
    """Discrepancy. Pearson statistic of group totals, ``sum_g (O_g - E_g) ^ 2 / V_g`` (needs
    ``groups``, e.g. the query of each label): extra between-query variation."""
    UPSETS = "upsets"
    """Discrepancy. Fraction of binary outcomes against the more probable one (for pairwise
    judgements: the preferred item had the lower utility)."""
    LOG_LIKELIHOOD = "log_likelihood"
    """Discrepancy. Mean negative log-likelihood ``-mean(log p(y | theta))``."""


@dataclass(frozen=True)
class PPCResult:
    """One posterior predictive check.

    Attributes:
        statistic: The statistic's name.
        observed: `S` values ``T(y, theta_s)`` (constant for ``theta``-free statistics).
        replicated: `S` values ``T(y_rep_s, theta_s)``.
        p_value: ``P(T(y_rep) > T(y)) + P(T(y_rep) = T(y)) / 2``.
    """

    statistic: str
    observed: np.ndarray
    replicated: np.ndarray
    p_value: float

    def passed(self, alpha: float = 0.05) -> bool:
        """Whether the p-value is inside ``(alpha / 2, 1 - alpha / 2)`` (two-sided)."""
        return alpha / 2 < self.p_value < 1 - alpha / 2


@dataclass(frozen=True)
class _Moments:
    mean: Tensor
    variance: Tensor
    log_prob: Callable[[Tensor], Tensor]
    groups: Tensor | None


def _pearson(y: Tensor, m: _Moments) -> Tensor:
    return (y - m.mean).square() / m.variance.clamp_min(1e-12)


def _calibration(y: Tensor, m: _Moments, bins: int = 10) -> Tensor:
    order = m.mean.argsort(-1)
    totals = []
    for chunk in order.tensor_split(min(bins, order.shape[-1]), dim=-1):
        observed = y.gather(-1, chunk).sum(-1)
        expected = m.mean.gather(-1, chunk).sum(-1)
        variance = m.variance.gather(-1, chunk).sum(-1).clamp_min(1e-12)
        totals.append((observed - expected).square() / variance)
    return torch.stack(totals, -1).sum(-1)


def _group_dispersion(y: Tensor, m: _Moments) -> Tensor:
    if m.groups is None:
        raise InputDataError("the group_dispersion statistic needs groups")
    count = int(m.groups.max()) + 1
    shape = (*y.shape[:-1], count)

    def total(values: Tensor) -> Tensor:
        return values.new_zeros(shape).index_add_(-1, m.groups, values)  # type: ignore[arg-type]

    variance = total(m.variance).clamp_min(1e-12)
    return ((total(y) - total(m.mean)).square() / variance).sum(-1)


_STATISTICS: dict[Statistic, Callable[[Tensor, _Moments], Tensor]] = {
    Statistic.MEAN: lambda y, m: y.mean(-1),
    Statistic.VARIANCE: lambda y, m: y.var(-1),
    Statistic.MAX: lambda y, m: y.amax(-1),
    Statistic.MIN: lambda y, m: y.amin(-1),
    Statistic.ZEROS: lambda y, m: (y == 0).to(y.dtype).mean(-1),
    Statistic.DISPERSION: lambda y, m: _pearson(y, m).mean(-1),
    Statistic.CALIBRATION: _calibration,
    Statistic.GROUP_DISPERSION: _group_dispersion,
    Statistic.UPSETS: lambda y, m: (y - (m.mean > 0.5).to(y.dtype)).abs().mean(-1),
    Statistic.LOG_LIKELIHOOD: lambda y, m: -m.log_prob(y).mean(-1),
}


def posterior_predictive_pvalue(observed: np.ndarray, replicated: np.ndarray) -> float:
    """``P(T_rep > T_obs) + P(T_rep = T_obs) / 2`` over paired `S` draws."""
    observed, replicated = np.asarray(observed), np.asarray(replicated)
    return float(np.mean(replicated > observed) + 0.5 * np.mean(replicated == observed))


def predictive_check(
    observed: Tensor,
    likelihood: Distribution,
    statistic: Statistic | str | Callable[[Tensor], Tensor] = Statistic.DISPERSION,
    *,
    groups: Tensor | None = None,
    seed: int = 0,
) -> PPCResult:
    """Posterior predictive check of ``observed`` under per-draw likelihoods.

    Args:
        observed: `n` observations.
        likelihood: ``p(y | theta_s)`` with batch shape `S x n` (one row per posterior draw).
        statistic: A :class:`Statistic` (or its value), or a callable ``y (S x n) -> S`` of
            the data alone.
        groups: `n` group indices in ``[0, G)`` for ``group_dispersion``.
        seed: Seeds the replicated data.

    Returns:
        A :class:`PPCResult`.

    Raises:
        InputDataError: shapes disagree or a statistic needs ``groups``.
    """
    batch = tuple(likelihood.batch_shape)
    if len(batch) != 2 or observed.shape != batch[1:]:
        raise InputDataError(
            f"need `n` observations and an `S x n` likelihood, got {tuple(observed.shape)} and "
            f"batch shape {batch}"
        )
    if groups is not None and groups.shape != observed.shape:
        raise InputDataError(f"groups must be `n`, got {tuple(groups.shape)}")
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        replicated = likelihood.sample()
    y = observed.to(replicated.dtype).expand_as(replicated)
    moments = _Moments(likelihood.mean, likelihood.variance, likelihood.log_prob,
                       None if groups is None else groups.long())  # fmt: skip
    if callable(statistic) and not isinstance(statistic, str):
        name = getattr(statistic, "__name__", "statistic")
        t_obs, t_rep = statistic(y), statistic(replicated)
    else:
        kind = parse_enum(Statistic, statistic, "statistic")
        name = kind.value
        with torch.no_grad():
            t_obs = _STATISTICS[kind](y, moments)
            t_rep = _STATISTICS[kind](replicated, moments)
    obs_np = t_obs.detach().double().cpu().numpy()
    rep_np = t_rep.detach().double().cpu().numpy()
    return PPCResult(name, obs_np, rep_np, posterior_predictive_pvalue(obs_np, rep_np))


def ppc_binomial(
    counts: Tensor,
    total_count: int | Tensor,
    probs: Tensor,
    statistic: Statistic | str | Callable[[Tensor], Tensor] = Statistic.DISPERSION,
    *,
    seed: int = 0,
) -> PPCResult:
    """Check counts against a binomial likelihood ``k_i ~ Binomial(n_i, p_si)``.

    Args:
        counts: `n` observed counts (e.g. relevant documents in each list's top ``n``).
        total_count: ``n`` (int or `n` tensor).
        probs: `S x n` posterior draws of the success probabilities.
        statistic: Default ``dispersion`` (detects over-dispersion).
        seed: Seeds the replicated counts.
    """
    count = torch.as_tensor(total_count, dtype=probs.dtype).expand_as(probs)
    return predictive_check(counts, dist.Binomial(count, probs=probs), statistic, seed=seed)


def ppc_bernoulli(
    labels: Tensor,
    probs: Tensor,
    statistic: Statistic | str | Callable[[Tensor], Tensor] = Statistic.CALIBRATION,
    *,
    groups: Tensor | None = None,
    seed: int = 0,
) -> PPCResult:
    """Check binary relevance labels against ``y_i ~ Bernoulli(p_si)``.

    Args:
        labels: `n` 0/1 labels.
        probs: `S x n` posterior draws of P(relevant).
        statistic: Default ``calibration`` (Hosmer-Lemeshow); ``group_dispersion`` with
            ``groups`` detects between-query variation the model misses.
        groups: `n` group (query) indices.
        seed: Seeds the replicated labels.
    """
    return predictive_check(
        labels, dist.Bernoulli(probs=probs), statistic, groups=groups, seed=seed
    )


def ppc_bradley_terry(
    pairs: Tensor,
    utilities: Tensor,
    outcomes: Tensor | None = None,
    statistic: Statistic | str | Callable[[Tensor], Tensor] = Statistic.UPSETS,
    *,
    temperature: float = 1.0,
    seed: int = 0,
) -> PPCResult:
    """Check pairwise judgements against Bradley-Terry, ``P(i over j) = sigmoid((u_i - u_j) / t)``.

    Args:
        pairs: `m x 2` candidate indices ``(i, j)`` of each judgement.
        utilities: `S x n` posterior draws of the candidates' utilities.
        outcomes: `m` 1 where ``i`` was preferred, 0 where ``j`` was; default all 1 (pairs
            given as ``(winner, loser)``).
        statistic: Default ``upsets`` (judgements against the utility order).
        temperature: The likelihood's ``t``.
        seed: Seeds the replicated judgements.
    """
    if pairs.dim() != 2 or pairs.shape[-1] != 2 or utilities.dim() != 2:
        raise InputDataError(
            f"pairs must be `m x 2` and utilities `S x n`, got {tuple(pairs.shape)}, "
            f"{tuple(utilities.shape)}"
        )
    if not temperature > 0:
        raise InputDataError(f"temperature must be positive, got {temperature}")
    index = pairs.long()
    if int(index.min()) < 0 or int(index.max()) >= utilities.shape[-1]:
        raise InputDataError("pair indices out of range of the utilities")
    diff = (utilities[:, index[:, 0]] - utilities[:, index[:, 1]]) / temperature
    y = torch.ones(index.shape[0], dtype=utilities.dtype) if outcomes is None else outcomes
    return predictive_check(y, dist.Bernoulli(logits=diff), statistic, seed=seed)


def ppc_from_inference_data(
    data: Any,
    var_name: str,
    statistic: Statistic | str | Callable[[Tensor], Tensor] = Statistic.MEAN,
) -> PPCResult:
    """A ``theta``-free check on ArviZ data's ``posterior_predictive`` and ``observed_data``.

    Args:
        data: ArviZ data with both groups (e.g. from :func:`~probrank.diagnostics.from_pyro`).
        var_name: The observed variable.
        statistic: ``mean``, ``variance``, ``max``, ``min``, ``zeros`` or a callable
            ``y (S x n) -> S``; the observed variable is flattened to `n` values.

    Returns:
        A :class:`PPCResult`.
    """
    replicated = get_group(data, "posterior_predictive")[var_name].values
    observed = get_group(data, "observed_data")[var_name].values
    rep = torch.as_tensor(replicated.reshape(-1, observed.size), dtype=torch.float64)
    obs = torch.as_tensor(observed.reshape(-1), dtype=torch.float64)
    if callable(statistic) and not isinstance(statistic, str):
        t_obs, t_rep = statistic(obs.expand_as(rep)), statistic(rep)
        name = getattr(statistic, "__name__", "statistic")
    else:
        kind = parse_enum(Statistic, statistic, "statistic")
        free = {Statistic.MEAN, Statistic.VARIANCE, Statistic.MAX, Statistic.MIN, Statistic.ZEROS}
        if kind not in free:
            raise InputDataError(
                f"{kind.value!r} needs the likelihood; use predictive_check or ppc_* instead"
            )
        name = kind.value
        unused = _Moments(rep, rep, lambda y: y, None)
        t_obs = _STATISTICS[kind](obs.expand_as(rep), unused)
        t_rep = _STATISTICS[kind](rep, unused)
    obs_np, rep_np = t_obs.numpy(), t_rep.numpy()
    return PPCResult(name, obs_np, rep_np, posterior_predictive_pvalue(obs_np, rep_np))
