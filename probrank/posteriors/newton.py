"""The Laplace approximation every closed-form candidate posterior shares.

A Gaussian prior ``f ~ N(m, K)`` over `n` points and a likelihood on `c` linear functionals
``z = D f`` (`c x n`)::

    log p(obs | f) = sum_j log L(z_j),   L = logistic (Bradley-Terry) or Phi (probit)

A judgement "a preferred to b" at scale ``s`` is the row ``(e_a - e_b) / s`` of ``D``; a binary
relevance label ``y`` of a logit is the row ``(2 y - 1) e_i``. Newton's method finds the mode
``f_hat = m + K a`` (damped by step halving until the log posterior increases; it is concave
for both links) and the Laplace covariance is ``(K^-1 + D^T Lambda D)^-1``. Everything goes
through the `c x c` matrix ``B = I + S D K D^T S`` (``S = Lambda^1/2``, eigenvalues >= 1), so
``K`` is never inverted and need not be full rank (a low-rank random-feature or sample
covariance is fine). The predictive at other points is the Gaussian-process conditional::

    mean_* = m_* + K_*n a
    cov_*  = K_** - (L_B^-1 S D K_n*)^T (L_B^-1 S D K_n*)

so conditioning on new judgements costs a Newton solve in `c` dimensions, never a refit.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from enum import Enum

import torch
from torch import Tensor

from probrank.exceptions import ConvergenceWarning

__all__ = ["LaplaceFit", "Link", "difference_rows", "laplace_fit", "log_likelihood_terms"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class Link(str, Enum):
    """The likelihood ``L`` of a functional ``z``: ``P(a preferred to b) = L((f_a - f_b) / s)``."""

    LOGISTIC = "logistic"
    """Bradley-Terry, ``L(z) = 1 / (1 + exp(-z))``."""
    PROBIT = "probit"
    """Thurstone, ``L(z) = Phi(z)``, the standard normal CDF."""


def log_likelihood_terms(z: Tensor, link: Link) -> tuple[Tensor, Tensor, Tensor]:
    """``log L(z)``, its first derivative and the negated second derivative (each `c`)."""
    if link is Link.LOGISTIC:
        log_lik = torch.nn.functional.logsigmoid(z)
        grad = torch.sigmoid(-z)
        return log_lik, grad, torch.sigmoid(z) * grad
    log_lik = torch.special.log_ndtr(z)
    grad = torch.exp(-0.5 * z * z - _LOG_SQRT_2PI - log_lik)
    return log_lik, grad, grad * (z + grad)


def difference_rows(pairs: list[tuple[int, int]], n: int, scale: float = 1.0) -> Tensor:
    """`c x n` float64 rows ``(e_winner - e_loser) / scale`` of ``(winner, loser)`` pairs."""
    d = torch.zeros(len(pairs), n, dtype=torch.float64)
    if pairs:
        index = torch.tensor(pairs, dtype=torch.long)
        rows = torch.arange(len(pairs))
        d[rows, index[:, 0]] = 1.0 / scale
        d[rows, index[:, 1]] = -1.0 / scale
    return d


@dataclass(frozen=True)
class LaplaceFit:
    """A Laplace posterior over `n` points (see the module doc).

    Attributes:
        prior_mean: `n` prior means ``m``.
        prior_covariance: `n x n` prior covariance ``K``.
        rows: `c x n` functionals ``D``.
        mode: `n` MAP ``f_hat``.
        weights: `n` ``a`` with ``f_hat = m + K a``.
        sqrt_lambda: `c` ``S`` at the mode.
        chol: `c x c` lower Cholesky factor of ``B`` at the mode.
    """

    prior_mean: Tensor
    prior_covariance: Tensor
    rows: Tensor
    mode: Tensor
    weights: Tensor
    sqrt_lambda: Tensor
    chol: Tensor

    def _reduce(self, cross: Tensor) -> Tensor:
        """``L_B^-1 S D K_n*`` for `... x n x q` ``K_n*``: `... x c x q`."""
        sdk = self.sqrt_lambda.unsqueeze(-1) * (self.rows @ cross)
        return torch.linalg.solve_triangular(self.chol, sdk, upper=False)

    def covariance(self) -> Tensor:
        """`n x n` Laplace covariance ``K - K D^T S B^-1 S D K`` (symmetrised)."""
        v = self._reduce(self.prior_covariance)
        covariance = self.prior_covariance - v.T @ v
        return 0.5 * (covariance + covariance.T)

    def predictive(
        self, prior_mean: Tensor, cross_covariance: Tensor, prior_covariance: Tensor
    ) -> tuple[Tensor, Tensor]:
        """The posterior at other points (the GP conditional; no ``K^-1``).

        Args:
            prior_mean: `batch_shape x q` prior means ``m_*``.
            cross_covariance: `batch_shape x q x n` prior covariances ``K_*n``.
            prior_covariance: `batch_shape x q x q` prior covariance ``K_**``.

        Returns:
            ``(mean, covariance)``: `batch_shape x q` and `batch_shape x q x q` (float64).
        """
        cross = cross_covariance.to(torch.float64)
        mean = prior_mean.to(torch.float64) + (cross @ self.weights.unsqueeze(-1)).squeeze(-1)
        v = self._reduce(cross.transpose(-1, -2))
        covariance = prior_covariance.to(torch.float64) - v.transpose(-1, -2) @ v
        return mean, 0.5 * (covariance + covariance.transpose(-1, -2))


def _objective(a: Tensor, m: Tensor, k: Tensor, d: Tensor, link: Link) -> tuple[Tensor, Tensor]:
    centred = k @ a
    log_lik, _, _ = log_likelihood_terms(d @ (m + centred), link)
    return log_lik.sum() - 0.5 * a @ centred, centred


def _curvature(d: Tensor, k: Tensor, f: Tensor, link: Link) -> tuple[Tensor, Tensor, Tensor]:
    """Gradient ``D^T L'(D f)``, ``S`` and ``chol(I + S D K D^T S)`` at ``f``."""
    _, grad, neg_hess = log_likelihood_terms(d @ f, link)
    sqrt_lambda = neg_hess.clamp(min=0.0).sqrt()
    sdk = sqrt_lambda.unsqueeze(-1) * (d @ k)
    b = torch.eye(d.shape[0], dtype=torch.float64) + sdk @ (d.T * sqrt_lambda)
    return d.T @ grad, sqrt_lambda, torch.linalg.cholesky(b)


def laplace_fit(
    prior_mean: Tensor,
    prior_covariance: Tensor,
    rows: Tensor,
    link: Link = Link.LOGISTIC,
    *,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> LaplaceFit:
    """The Laplace posterior of ``N(m, K)`` and the likelihood on ``D f`` (float64).

    Args:
        prior_mean: `n` means ``m``.
        prior_covariance: `n x n` positive semi-definite ``K``.
        rows: `c x n` functionals ``D`` (``c = 0``: the prior).
        link: :class:`Link`.
        max_iter: Newton iterations.
        tol: Stop when the largest change of ``f`` in a step is below ``tol``.

    Returns:
        :class:`LaplaceFit`. Warns :class:`~probrank.exceptions.ConvergenceWarning` when
        Newton does not converge in ``max_iter`` steps.
    """
    m = prior_mean.to(torch.float64)
    k = prior_covariance.to(torch.float64)
    d = rows.to(torch.float64)
    a = torch.zeros_like(m)
    objective, centred = _objective(a, m, k, d, link)
    converged = d.shape[0] == 0
    for _ in range(0 if converged else max_iter):
        grad, sqrt_lambda, chol = _curvature(d, k, m + centred, link)
        # Newton target: f_new - m = (K^-1 + W)^-1 (W (f - m) + grad) = K a_new
        b = d.T @ (sqrt_lambda**2 * (d @ centred)) + grad
        rhs = sqrt_lambda * (d @ (k @ b))
        correction = torch.cholesky_solve(rhs.unsqueeze(-1), chol).squeeze(-1)
        a_new = b - d.T @ (sqrt_lambda * correction)
        step, moved = 1.0, False
        for _ in range(40):  # damped Newton: halve the step until the objective increases
            candidate = a + step * (a_new - a)
            new_objective, new_centred = _objective(candidate, m, k, d, link)
            if new_objective >= objective - 1e-12 * abs(float(objective)):
                moved = True
                break
            step *= 0.5
        if not moved:  # no ascent left at machine precision: we are at the mode
            converged = True
            break
        change = float((new_centred - centred).abs().max())
        a, objective, centred = candidate, new_objective, new_centred
        if change < tol:
            converged = True
            break
    if not converged:
        warnings.warn(
            f"Laplace Newton iterations did not converge in {max_iter} steps "
            f"({d.shape[0]} observations)",
            ConvergenceWarning,
            stacklevel=3,
        )
    mode = m + centred
    _, sqrt_lambda, chol = _curvature(d, k, mode, link)
    return LaplaceFit(m, k, d, mode, a, sqrt_lambda, chol)
