"""SWAG: a Gaussian over network weights from the SGD trajectory (Maddox et al., 2019).

Snapshots ``theta_1 .. theta_T`` of a parameter vector (e.g. the last layers of a network,
taken once per epoch of constant-learning-rate SGD) give::

    theta_SWA = mean of the snapshots
    Sigma_diag = diag(mean of theta^2 - theta_SWA^2)              (clamped at 0)
    Sigma_low  = D D^T / (K - 1),  D = [theta_i - theta_SWA] of the last K snapshots
    theta ~ N(theta_SWA, scale * (Sigma_diag + Sigma_low)),  scale = 1/2 in the paper

so a draw is ``theta_SWA + sqrt(scale) * sqrt(Sigma_diag) * z1 + sqrt(scale / (K - 1)) D z2``.
The paper's ``D`` holds deviations from the *running* mean at each snapshot; here they are
taken from the final mean, which makes ``Sigma_low`` exactly the sample covariance of the last
``K`` snapshots (and ``Sigma_diag`` the biased sample variance of all of them).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils import parameters_to_vector

from probrank.exceptions import InputDataError

__all__ = ["SWAGCollector", "SWAGPosterior", "assign_vector", "parameter_vector"]


def parameter_vector(parameters: Iterable[nn.Parameter | Tensor]) -> Tensor:
    """The parameters flattened into one float64 vector (a detached copy)."""
    return parameters_to_vector([p.detach() for p in parameters]).to(torch.float64).clone()


def assign_vector(vector: Tensor, parameters: Iterable[nn.Parameter | Tensor]) -> None:
    """Copy a flat vector's values into ``parameters`` (in place, no gradient).

    Unlike ``torch.nn.utils.vector_to_parameters`` the parameters never become views of
    ``vector``, so later training cannot write into it.
    """
    params = list(parameters)
    size = sum(p.numel() for p in params)
    if vector.shape != (size,):
        raise InputDataError(f"vector has shape {tuple(vector.shape)}, the parameters {size}")
    start = 0
    with torch.no_grad():
        for p in params:
            p.copy_(vector[start : start + p.numel()].reshape(p.shape))
            start += p.numel()


@dataclass(frozen=True)
class SWAGPosterior:
    """A SWAG Gaussian over a `P`-vector of weights.

    Attributes:
        mean: `P` SWA mean.
        variance: `P` diagonal variances.
        deviations: `K x P` rows ``theta_i - mean`` of the last ``K`` snapshots.
        num_snapshots: Snapshots averaged into ``mean`` and ``variance``.
        scale: Covariance scale (1/2 in the paper).
    """

    mean: Tensor
    variance: Tensor
    deviations: Tensor
    num_snapshots: int
    scale: float = 0.5

    @property
    def rank(self) -> int:
        """``K``, the number of low-rank deviation rows."""
        return int(self.deviations.shape[0])

    def covariance(self) -> Tensor:
        """`P x P` dense ``scale * (diag(variance) + D^T D / (K - 1))``."""
        low = self.deviations.T @ self.deviations / max(self.rank - 1, 1)
        return self.scale * (torch.diag(self.variance) + low)

    def sample(self, num_samples: int, generator: torch.Generator | None = None) -> Tensor:
        """`S x P` weight draws.

        Args:
            num_samples: ``S >= 1``.
            generator: CPU generator of the standard normals (the global RNG when None).
        """
        if num_samples < 1:
            raise InputDataError(f"num_samples must be at least 1, got {num_samples}")
        p = self.mean.shape[0]
        z1 = torch.randn(num_samples, p, generator=generator, dtype=torch.float64)
        draws = self.mean + (self.scale * self.variance).sqrt() * z1
        if self.rank > 1:
            z2 = torch.randn(num_samples, self.rank, generator=generator, dtype=torch.float64)
            draws = draws + (self.scale / (self.rank - 1)) ** 0.5 * z2 @ self.deviations
        return draws


class SWAGCollector:
    """Accumulates SWAG moments from snapshots of a parameter vector.

    Args:
        max_rank: ``K``, how many of the latest snapshots form the low-rank part (>= 2).
        scale: Covariance scale of the resulting posterior.
    """

    def __init__(self, max_rank: int = 20, scale: float = 0.5) -> None:
        if max_rank < 2:
            raise InputDataError(f"max_rank must be at least 2, got {max_rank}")
        if not scale > 0:
            raise InputDataError(f"scale must be positive, got {scale}")
        self.max_rank = int(max_rank)
        self.scale = float(scale)
        self.num_snapshots = 0
        self._first: Tensor | None = None
        self._second: Tensor | None = None
        self._recent: deque[Tensor] = deque(maxlen=self.max_rank)

    def collect(self, snapshot: Tensor | Iterable[nn.Parameter | Tensor]) -> None:
        """Add one snapshot: a `P` vector or an iterable of parameters (flattened)."""
        vector = (
            snapshot.detach().to(torch.float64).reshape(-1).clone()
            if isinstance(snapshot, Tensor)
            else parameter_vector(snapshot)
        )
        if self._first is None or self._second is None:
            self._first = torch.zeros_like(vector)
            self._second = torch.zeros_like(vector)
        if vector.shape != self._first.shape:
            raise InputDataError(
                f"snapshot has {vector.shape[0]} values, earlier ones {self._first.shape[0]}"
            )
        k = self.num_snapshots
        self._first = (k * self._first + vector) / (k + 1)
        self._second = (k * self._second + vector * vector) / (k + 1)
        self._recent.append(vector)
        self.num_snapshots = k + 1

    def posterior(self) -> SWAGPosterior:
        """The SWAG Gaussian of the snapshots so far.

        Raises:
            InputDataError: Fewer than 2 snapshots.
        """
        if self.num_snapshots < 2 or self._first is None or self._second is None:
            raise InputDataError(f"SWAG needs at least 2 snapshots, got {self.num_snapshots}")
        mean = self._first.clone()
        variance = (self._second - mean * mean).clamp(min=0.0)
        deviations = torch.stack(list(self._recent)) - mean
        return SWAGPosterior(
            mean=mean,
            variance=variance,
            deviations=deviations,
            num_snapshots=self.num_snapshots,
            scale=self.scale,
        )
