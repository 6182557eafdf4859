"""``E[max(Z, 0)]`` for a Gaussian ``Z``, the closed form behind EI and EUBO.

For ``Z ~ N(mu, sigma^2)`` with ``sigma > 0`` and ``u = mu / sigma``::

    E[max(Z, 0)] = sigma * h(u),   h(u) = phi(u) + u * Phi(u)

and ``max(mu, 0)`` when ``sigma == 0``. Evaluated as written, ``h(u)`` cancels for ``u < -1``
(1% error at ``u = -30``) and underflows below about -38 in float64, where every candidate
would tie at 0. Below ``u = -1`` both functions here use
``log h(u) = log phi(u) + log1p(u * Phi(u) / phi(u))`` with the Mills ratio
``Phi(u) / phi(u) = sqrt(pi / 2) * erfcx(-u / sqrt(2))``, and the asymptotic
``h(u) ~ phi(u) / u^2 * (1 - 3 / u^2)`` below ``u = -1e4``; :func:`log_expected_positive_part`
keeps candidates ordered where ``E[max(Z, 0)]`` itself underflows.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["expected_positive_part", "log_expected_positive_part"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)


def _h(u: Tensor) -> Tensor:
    phi = torch.exp(-0.5 * u * u - _LOG_SQRT_2PI)
    return phi + u * torch.special.ndtr(u)


def expected_positive_part(mu: Tensor, sigma: Tensor) -> Tensor:
    """``E[max(Z, 0)]`` for ``Z ~ N(mu, sigma^2)``, elementwise.

    Args:
        mu: `...` means.
        sigma: `...` standard deviations (>= 0; broadcast against ``mu``).

    Returns:
        `...` expected positive parts (``max(mu, 0)`` where ``sigma == 0``).
    """
    mu, sigma = torch.broadcast_tensors(mu, sigma)
    positive = sigma > 0
    safe_sigma = torch.where(positive, sigma, torch.ones_like(sigma))
    u = mu / safe_sigma
    # phi(u) + u Phi(u) cancels for u < -1 (1% error at u = -30): go through log h there
    h = torch.where(u > -1.0, _h(torch.where(u > -1.0, u, torch.zeros_like(u))), _log_h(u).exp())
    return torch.where(positive, safe_sigma * h, mu.clamp(min=0.0))


def _log_h(u: Tensor) -> Tensor:
    log_phi = -0.5 * u * u - _LOG_SQRT_2PI
    direct = torch.log(_h(torch.where(u > -1.0, u, torch.zeros_like(u))))
    mid_u = torch.where((u <= -1.0) & (u > -1e4), u, -torch.ones_like(u))
    mills = _SQRT_HALF_PI * torch.special.erfcx(-mid_u / math.sqrt(2.0))
    middle = -0.5 * mid_u * mid_u - _LOG_SQRT_2PI + torch.log1p(mid_u * mills)
    far_u = torch.where(u <= -1e4, u, -1e4 * torch.ones_like(u))
    far = log_phi - 2.0 * torch.log(-far_u) + torch.log1p(-3.0 / (far_u * far_u))
    return torch.where(u > -1.0, direct, torch.where(u > -1e4, middle, far))


def log_expected_positive_part(mu: Tensor, sigma: Tensor) -> Tensor:
    """``log E[max(Z, 0)]`` for ``Z ~ N(mu, sigma^2)``, accurate far into the lower tail.

    Args:
        mu: `...` means.
        sigma: `...` standard deviations (>= 0; broadcast against ``mu``).

    Returns:
        `...` values; ``log(mu)`` where ``sigma == 0 < mu`` and ``-inf`` where
        ``sigma == 0`` and ``mu <= 0``.
    """
    mu, sigma = torch.broadcast_tensors(mu, sigma)
    positive = sigma > 0
    safe_sigma = torch.where(positive, sigma, torch.ones_like(sigma))
    value = torch.log(safe_sigma) + _log_h(mu / safe_sigma)
    degenerate = torch.where(
        mu > 0, torch.log(mu.clamp(min=torch.finfo(mu.dtype).tiny)), torch.full_like(mu, -math.inf)
    )
    return torch.where(positive, value, degenerate)
