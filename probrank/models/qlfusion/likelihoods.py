"""A hierarchical likelihood of the relevant counts: a per-list random effect on the logit.

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
from probrank.likelihoods.proportion import Likelihood

__all__ = ["LogitNormalBinomial", "logit_normal_proportion"]

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
        log_w -= np.logaddexp.reduce(log_w)
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
