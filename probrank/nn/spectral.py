"""Spectral normalisation with a bound: W -> W * min(1, c / ||W||_2) (SNGP, eq. 1).

``torch.nn.utils.parametrizations.spectral_norm`` always rescales to norm 1; SNGP only shrinks
weights whose largest singular value exceeds ``c``. The largest singular value is estimated by
power iteration (one step per training forward pass, persistent vectors ``u`` and ``v``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from probrank.exceptions import InputDataError

__all__ = ["BoundedSpectralNorm", "spectral_normalize"]


class BoundedSpectralNorm(nn.Module):
    """Parametrisation ``W -> W / max(1, sigma(W) / bound)``.

    Args:
        weight: The `out x in` (or `out x ...`) weight the parametrisation is built for.
        bound: The bound ``c > 0`` on the largest singular value.
        n_power_iterations: Power-iteration steps per forward pass in training mode.
        eps: Stabiliser of the vector normalisation.
        generator: Random source of the initial vectors.
    """

    def __init__(
        self,
        weight: Tensor,
        bound: float = 1.0,
        n_power_iterations: int = 1,
        eps: float = 1e-12,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if not bound > 0:
            raise InputDataError(f"spectral bound must be positive, got {bound}")
        if n_power_iterations < 1:
            raise InputDataError(f"n_power_iterations must be >= 1, got {n_power_iterations}")
        self.bound = float(bound)
        self.n_power_iterations = n_power_iterations
        self.eps = eps
        matrix = weight.detach().flatten(1)
        self.u: Tensor
        self.v: Tensor
        u = torch.randn(matrix.shape[0], generator=generator, dtype=matrix.dtype)
        v = torch.randn(matrix.shape[1], generator=generator, dtype=matrix.dtype)
        self.register_buffer("u", nn.functional.normalize(u, dim=0, eps=eps).to(matrix.device))
        self.register_buffer("v", nn.functional.normalize(v, dim=0, eps=eps).to(matrix.device))
        self._iterate(matrix, 15)

    @torch.no_grad()
    def _iterate(self, matrix: Tensor, steps: int) -> None:
        u, v = self.u, self.v
        for _ in range(steps):
            v = nn.functional.normalize(matrix.T @ u, dim=0, eps=self.eps)
            u = nn.functional.normalize(matrix @ v, dim=0, eps=self.eps)
        self.u.copy_(u)
        self.v.copy_(v)

    def sigma(self, weight: Tensor) -> Tensor:
        """The power-iteration estimate ``u^T W v`` of the largest singular value (scalar)."""
        return self.u @ weight.flatten(1) @ self.v

    def forward(self, weight: Tensor) -> Tensor:
        if self.training:
            self._iterate(weight.detach().flatten(1), self.n_power_iterations)
        factor = torch.clamp(self.sigma(weight) / self.bound, min=1.0)
        return weight / factor


def spectral_normalize(
    module: nn.Module,
    bound: float = 1.0,
    *,
    name: str = "weight",
    n_power_iterations: int = 1,
    generator: torch.Generator | None = None,
) -> nn.Module:
    """Register a :class:`BoundedSpectralNorm` on ``module.<name>`` (in place) and return it.

    Args:
        module: A layer with a weight (e.g. ``nn.Linear``).
        bound: The bound ``c`` on the largest singular value.
        name: Name of the weight.
        n_power_iterations: Power-iteration steps per training forward pass.
        generator: Random source of the initial power-iteration vectors.

    Returns:
        ``module``, whose ``module.<name>`` now has spectral norm at most about ``bound``.
    """
    weight = getattr(module, name)
    parametrize.register_parametrization(
        module,
        name,
        BoundedSpectralNorm(weight, bound, n_power_iterations, generator=generator),
    )
    return module
