"""The posterior predictive of a list's observed share of relevant documents, and its coverage.

QLFusion's posterior over ``p_hat`` (draws of the Bayesian output layer) says how well the
*mean* proportion of a list is known; the share a judged list actually shows also varies by the
likelihood's own noise (binomial, or more with an over-dispersed likelihood). The posterior
predictive draws a count ``k ~ likelihood(logit(p_hat))`` for each posterior draw and divides
it by ``n``; its equal-tailed interval is what a held-out list's observed share should fall in
at the nominal rate, and :func:`interval_coverage` measures how often it does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.likelihoods.proportion import Likelihood

__all__ = [
    "COVERAGE_LEVELS",
    "LOO_DRAWS",
    "coverage_key",
    "interval_coverage",
    "members_loo",
    "pointwise_log_likelihood",
    "predictive_interval",
    "predictive_shares",
]

COVERAGE_LEVELS = (0.5, 0.9)
"""The interval masses whose held-out coverage QLFusion reports."""

_MIN_DRAWS = 2000
"""Predictive draws per list at least (likelihood draws are repeated per posterior draw)."""


def coverage_key(level: float) -> str:
    """The report key of a level: ``0.9 -> "coverage_90"``."""
    return f"coverage_{round(100 * level):d}"


def predictive_shares(
    draws: Tensor,
    likelihood: Likelihood,
    total_count: int,
    *,
    seed: int = 0,
    min_draws: int = _MIN_DRAWS,
) -> Tensor:
    """Posterior predictive draws of the observed share ``k / n`` of relevant documents.

    Args:
        draws: `S x ...` posterior draws of ``p_hat`` in ``[0, 1]``.
        likelihood: ``logits -> Distribution`` over the counts out of ``total_count`` (e.g.
            :func:`probrank.likelihoods.binomial_proportion`).
        total_count: ``n``, the list length the counts are out of.
        seed: Seeds the likelihood draws (the global torch generator is left as it was).
        min_draws: The likelihood is drawn ``ceil(min_draws / S)`` times per posterior draw.

    Returns:
        `(J * S) x ...` predictive shares in ``[0, 1]``, in ``draws``' dtype.

    Raises:
        InputDataError: no draws or a non-positive ``total_count``.
    """
    if draws.dim() < 1 or draws.shape[0] < 1:
        raise InputDataError("predictive_shares needs at least one posterior draw")
    if total_count < 1:
        raise InputDataError(f"total_count must be positive, got {total_count}")
    repeats = max(1, math.ceil(min_draws / draws.shape[0]))
    p = draws.detach().double().clamp(1e-9, 1 - 1e-9)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        counts = likelihood(torch.logit(p)).sample((repeats,))
    return (counts / total_count).clamp(0.0, 1.0).flatten(0, 1).to(draws.dtype)


def predictive_interval(shares: Tensor, level: float) -> tuple[Tensor, Tensor]:
    """The equal-tailed interval of mass ``level`` of predictive draws (`S x ...`).

    The lower end is the largest draw with at most ``(1 - level) / 2`` of the draws below it
    and the upper end its mirror (no interpolation between draws: the observed shares are
    counts over ``n``, so the interval ends are attainable shares).

    Returns:
        ``(lower, upper)``, each `...`.
    """
    if not 0.0 < level < 1.0:
        raise InputDataError(f"level must be in (0, 1), got {level}")
    alpha = torch.tensor((1.0 - level) / 2.0, dtype=torch.float64)
    values = shares.double()
    lower = torch.quantile(values, alpha, dim=0, interpolation="lower")
    upper = torch.quantile(values, 1.0 - alpha, dim=0, interpolation="higher")
    return lower.to(shares.dtype), upper.to(shares.dtype)


def interval_coverage(
    shares: Tensor,
    observed: Tensor,
    mask: Tensor | None = None,
    levels: Sequence[float] = COVERAGE_LEVELS,
) -> dict[str, float]:
    """How often the observed shares fall in their predictive intervals.

    Args:
        shares: `S x ...` predictive draws (:func:`predictive_shares`).
        observed: `...` observed shares ``k / n``.
        mask: `...` bool, False for padding (default: every list).
        levels: Interval masses.

    Returns:
        ``{coverage_key(level): share of lists covered}`` (NaN with no list).
    """
    keep = torch.ones_like(observed, dtype=torch.bool) if mask is None else mask.bool()
    out: dict[str, float] = {}
    tol = 1e-9  # counts / n computed in two dtypes
    for level in levels:
        lower, upper = predictive_interval(shares, level)
        inside = (observed.double() >= lower.double() - tol) & (
            observed.double() <= upper.double() + tol
        )
        out[coverage_key(level)] = float(inside[keep].double().mean()) if keep.any() else math.nan
    return out


_LOG_LIK_CHUNK = 50
"""Posterior draws per evaluation of the likelihood in :func:`pointwise_log_likelihood`."""

LOO_DRAWS = 1000
"""Posterior draws behind each PSIS-LOO estimate (the guide's draws are independent, so the
Pareto ``k`` diagnostic is what checks them)."""


def pointwise_log_likelihood(draws: Tensor, likelihood: Likelihood, counts: Tensor) -> Tensor:
    """``log p(k_i | p_hat_s)`` of every list under every posterior draw.

    Args:
        draws: `S x M x n` posterior draws of ``p_hat``.
        likelihood: ``logits -> Distribution`` over the counts, for logits `... x M x n`.
        counts: `M x n` observed relevant counts.

    Returns:
        `S x M x n` log-likelihoods (float64).
    """
    p = draws.detach().double().clamp(1e-9, 1 - 1e-9)
    k = counts.double()
    # in chunks of draws: a likelihood integrated on a grid (logit-normal) holds a grid per
    # value, 161 times the draws' memory
    chunks = [
        likelihood(torch.logit(part)).log_prob(k.expand(part.shape)).double()
        for part in p.split(_LOG_LIK_CHUNK)
    ]
    return torch.cat(chunks)


def members_loo(log_lik: Tensor, mask: Tensor) -> dict[str, float]:
    """PSIS-LOO of each member's lists (:func:`probrank.diagnostics.loo`), pooled.

    Each member (one fold's quantifier of one run) is its own model of its own lists; the
    report is per list, so that collections and likelihoods of different sizes compare:

    * ``elpd_loo_per_list``: summed ``elpd_loo`` over members / lists;
    * ``se_per_list``: the members' standard errors combined (independent members) / lists;
    * ``p_loo``: the mean effective number of parameters per member;
    * ``pareto_k_bad``: the share of lists with Pareto ``k > 0.7`` (their estimate is not
      reliable; 0 when every estimate is).

    Args:
        log_lik: `S x M x n` pointwise log-likelihoods (:func:`pointwise_log_likelihood`).
        mask: `M x n` bool, False on padding rows.
    """
    from probrank._arviz import build
    from probrank.diagnostics import loo

    elpd = variance = p_loo = bad = lists = 0.0
    members = log_lik.shape[1]
    for m in range(members):
        keep = mask[m].bool()
        values = log_lik[:, m, keep].numpy()[None]  # chain x draw x list
        # independent draws of the guide: relative efficiency 1 (what ArviZ takes for one
        # chain), so no posterior group and no convergence summary of it
        result = loo(build({"log_likelihood": {"k": values}}), reff=1.0)
        elpd += result.elpd_loo
        variance += result.se**2
        p_loo += result.p_loo
        bad += result.bad_k
        lists += result.num_observations
    return {
        "elpd_loo_per_list": elpd / lists,
        "se_per_list": math.sqrt(variance) / lists,
        "p_loo": p_loo / members,
        "pareto_k_bad": bad / lists,
    }
