"""QLFusion's over-dispersed likelihoods of the relevant counts: a per-list random effect on
the logit (:class:`LogitNormalBinomial`) and a beta-binomial whose concentration is learned
(:class:`LatentConcentration`).

Written here because Pyro has neither: its ``BetaBinomial`` takes a fixed concentration, and a
Normal random effect per list integrated out of a binomial is not a Pyro distribution.

The hierarchical one:

``k | u ~ Binomial(n, sigmoid(logit + u))``, ``u ~ Normal(0, scale)`` one per list: lists of
the same run scatter around the quantifier's prediction by more than binomial noise, as the
beta-binomial allows, but on the logit scale (a list's own difficulty). The random effect is
integrated out on a fine grid, so the likelihood is a plain distribution over
``k`` that SVI, the posterior predictive and PSIS-LOO use like the binomial; ``scale -> 0``
gives the binomial back.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pyro.distributions as dist
import torch
from torch import Tensor
from torch.distributions import constraints

from probrank.exceptions import InputDataError
from probrank.likelihoods.proportion import Likelihood, beta_binomial_proportion

__all__ = [
    "LatentConcentration",
    "LogitNormalBinomial",
    "latent_beta_binomial",
    "logit_normal_proportion",
]

_HALF_WIDTH = 8.0


class LogitNormalBinomial(dist.TorchDistribution):
    """``k ~ Binomial(n, sigmoid(logits + u))`` with ``u ~ N(0, scale)`` integrated out.

    Args:
        logits: `...` the lists' predicted logits.
        scale: Standard deviation of the per-list random effect (positive).
        total_count: `...` ``n`` (broadcast to ``logits``).
        nodes: Points of the integral's uniform grid over +-8 standard deviations.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"logits": constraints.real}
    has_enumerate_support = False

    def __init__(
        self,
        logits: Tensor,
        scale: float,
        total_count: Tensor,
        nodes: int = 161,
        validate_args: bool | None = None,
    ) -> None:
        self.logits = logits
        self.scale = float(scale)
        self.total_count = torch.as_tensor(total_count, dtype=logits.dtype).expand(logits.shape)
        self.nodes = nodes
        # a uniform grid over +-8 sd (Gauss-Hermite nodes are too sparse for the binomial's
        # peak, which is narrower than the random effect for lists of 100)
        x = np.linspace(-_HALF_WIDTH, _HALF_WIDTH, nodes)
        log_w = -0.5 * x**2
        # numpy 2.5's stubs (Python 3.12+) reject reduce of an ndarray; the call is fine
        log_w -= np.logaddexp.reduce(log_w)  # type: ignore[call-overload,unused-ignore]
        self._offsets = torch.as_tensor(x * self.scale, dtype=logits.dtype)
        self._log_weights = torch.as_tensor(log_w, dtype=logits.dtype)
        super().__init__(logits.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.integer_interval(0, self.total_count)

    def expand(
        self, batch_shape: torch.Size | list[int] | tuple[int, ...], _instance: object = None
    ) -> LogitNormalBinomial:
        shape = torch.Size(batch_shape)
        return LogitNormalBinomial(
            self.logits.expand(shape), self.scale, self.total_count.expand(shape), self.nodes
        )

    def log_prob(self, value: Tensor) -> Tensor:
        """``log sum_j w_j Binomial(value; n, sigmoid(logits + scale x_j))``, `...`."""
        shifted = self.logits.unsqueeze(-1) + self._offsets
        binomial = dist.Binomial(self.total_count.unsqueeze(-1), logits=shifted)
        return torch.logsumexp(binomial.log_prob(value.unsqueeze(-1)) + self._log_weights, -1)

    def sample(self, sample_shape: torch.Size | list[int] | tuple[int, ...] = ()) -> Tensor:
        with torch.no_grad():
            shape = self._extended_shape(torch.Size(sample_shape))
            u = torch.randn(shape, dtype=self.logits.dtype) * self.scale
            return dist.Binomial(self.total_count.expand(shape), logits=self.logits + u).sample()

    @property
    def mean(self) -> Tensor:
        """``n E[sigmoid(logits + u)]`` by the same quadrature."""
        p = torch.sigmoid(self.logits.unsqueeze(-1) + self._offsets)
        return self.total_count * (p * self._log_weights.exp()).sum(-1)


def logit_normal_proportion(total_count: int | Tensor, scale: float = 1.0) -> Likelihood:
    """The hierarchical likelihood: a ``Normal(0, scale)`` random effect per list on the logit.

    Args:
        total_count: ``n``.
        scale: Standard deviation of the random effect (``> 0``; about 0.5 to 1 lets lists
            of one run differ by a factor of 2 to 3 in their odds of relevance; the grid of
            the integral is exact to about 1e-8 up to 2).

    Returns:
        A callable mapping logits `... x m` to :class:`LogitNormalBinomial`.

    Raises:
        InputDataError: a ``scale`` that is not a positive number.
    """
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
        raise InputDataError(f"scale must be a positive number, got {scale!r}")
    if not isinstance(total_count, Tensor) and total_count < 1:
        raise InputDataError(f"total_count must be a positive integer, got {total_count}")

    def likelihood(logits: Tensor) -> dist.TorchDistribution:
        count = torch.as_tensor(total_count, dtype=logits.dtype, device=logits.device)
        return LogitNormalBinomial(logits, scale, count)

    return likelihood


class LatentConcentration:
    """A beta-binomial of the counts whose concentration is learned: ``c ~ LogNormal(log
    prior_median, prior_sd)``, one per quantifier (one run), fitted by MAP with the network.

    ``k ~ BetaBinomial(c p_hat, c (1 - p_hat), n)``: lists of one run are over-dispersed by
    the factor ``(n + c) / (1 + c)`` that the run's own lists support, rather than a fixed one
    (no single fixed ``c`` suits every collection: the QLFusion card). :class:`QLFusionNet
    <probrank.models.qlfusion.network.QLFusionNet>` recognises this object and holds
    ``log c`` as a parameter of each member, adds the prior's log density to the ELBO once per
    step (not scaled with the mini-batch), and builds the likelihood with the fitted ``c``
    through :meth:`with_concentration`. Called without ``c`` (as a plain
    :data:`~probrank.likelihoods.proportion.Likelihood`) it uses the prior median.

    Args:
        total_count: ``n``.
        prior_median: Median of the concentration's LogNormal prior (``> 0``).
        prior_sd: Standard deviation of ``log c`` under the prior (``> 0``).
    """

    def __init__(self, total_count: int, prior_median: float = 10.0, prior_sd: float = 1.0):
        for name, value in (("prior_median", prior_median), ("prior_sd", prior_sd)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise InputDataError(f"{name} must be a positive number, got {value!r}")
        if total_count < 1:
            raise InputDataError(f"total_count must be a positive integer, got {total_count}")
        self.total_count = int(total_count)
        self.prior_median = float(prior_median)
        self.prior_sd = float(prior_sd)

    @property
    def initial_log_concentration(self) -> float:
        """``log`` of the prior median: where each member's ``log c`` starts."""
        return float(np.log(self.prior_median))

    def prior_log_prob(self, log_concentration: Tensor) -> Tensor:
        """Log density of the LogNormal prior at ``c = exp(log_concentration)``, summed.

        The density is over ``c`` (the MAP point of ``c``, not of ``log c``); `...` in, a
        scalar out.
        """
        prior = dist.LogNormal(
            torch.tensor(self.initial_log_concentration, dtype=log_concentration.dtype),
            torch.tensor(self.prior_sd, dtype=log_concentration.dtype),
        )
        return prior.log_prob(log_concentration.exp()).sum()

    def with_concentration(self, concentration: Tensor) -> Likelihood:
        """The likelihood for concentrations `M x 1` (broadcast against logits `... x M x n`)."""
        return beta_binomial_proportion(self.total_count, concentration)

    def mean_proportion(self, logits: Tensor) -> Tensor:
        """The expected share ``sigmoid(logits)`` (a beta-binomial's mean over ``n``, whatever
        the concentration)."""
        return torch.sigmoid(logits)

    def __call__(self, logits: Tensor) -> dist.TorchDistribution:
        """The likelihood at the prior median (before fitting)."""
        c = torch.tensor(self.prior_median, dtype=logits.dtype)
        return self.with_concentration(c)(logits)


def latent_beta_binomial(
    total_count: int, prior_median: float = 10.0, prior_sd: float = 1.0
) -> LatentConcentration:
    """The beta-binomial with a learned concentration (:class:`LatentConcentration`)."""
    return LatentConcentration(total_count, prior_median, prior_sd)
