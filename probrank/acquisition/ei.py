"""Expected-improvement pair selection, the paper's eq. 1.

The current best candidate ``x*`` is the one with the highest posterior mean. Its opponent is
the candidate ``x`` with the maximal expected improvement over it::

    EI(x) = E[max(f(x) - f(x*), 0)],  f(x) - f(x*) ~ N(mu_x - mu_*, v),
    v = S_xx + S_** - 2 S_x*

with ``S`` the joint posterior covariance, so a candidate that is strongly correlated with the
incumbent (and hence unlikely to overtake it) scores low even if its own variance is large.
The closed form is ``sqrt(v) * h((mu_x - mu_*) / sqrt(v))`` with ``h(u) = phi(u) + u Phi(u)``
(:mod:`probrank.acquisition.positive_part`); selection compares ``log EI`` so that candidates
whose EI underflows to 0 stay ordered.

Asked pairs: ``x*`` is the best-by-mean candidate among those that still have an unasked
partner (with nothing asked, this is eq. 1 exactly), and ``x`` ranges over ``x*``'s unasked
partners. Ties go to the lower index; if every partner has ``EI == 0`` exactly (zero variance
and a lower mean), the one with the highest mean is taken. The pair is returned as
``(x*, x)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from probrank.acquisition.pairs import (
    JointGaussian,
    OpenPairStrategy,
    joint_gaussian,
)
from probrank.acquisition.positive_part import expected_positive_part, log_expected_positive_part

__all__ = ["ExpectedImprovementPair", "expected_improvement"]


def _difference_moments(gaussian: JointGaussian, best: int) -> tuple[Tensor, Tensor]:
    cov = gaussian.covariance
    mu = gaussian.mean - gaussian.mean[best]
    variance = torch.diagonal(cov) + cov[best, best] - 2.0 * cov[:, best]
    return mu, variance.clamp(min=0.0).sqrt()


def expected_improvement(posterior: object, best: int | None = None) -> tuple[int, Tensor]:
    """Expected improvement of every candidate over the incumbent (eq. 1).

    Args:
        posterior: Joint posterior over `n` candidates (see
            :func:`probrank.acquisition.pairs.joint_gaussian`).
        best: The incumbent ``x*``; default the candidate with the highest posterior mean
            (first on ties).

    Returns:
        ``(best, ei)`` with ``ei`` the `n` values ``E[max(f(x) - f(x*), 0)]`` (float64; 0 at
        ``x*`` itself).
    """
    gaussian = joint_gaussian(posterior)
    if best is None:
        best = int(torch.argmax(gaussian.mean).item())
    mu, sigma = _difference_moments(gaussian, best)
    ei = expected_positive_part(mu, sigma)
    ei[best] = 0.0
    return best, ei


class ExpectedImprovementPair(OpenPairStrategy):
    """Ask about the incumbent (best posterior mean) against its maximal-EI challenger."""

    def choose(
        self, gaussian: JointGaussian, open_pairs: Tensor, generator: torch.Generator | None
    ) -> tuple[int, int]:
        """``(x*, x)``: the best-by-mean candidate with an open pair, its maximal-EI partner."""
        keyed_mean = gaussian.mean.masked_fill(~open_pairs.any(dim=1), float("-inf"))
        best = int(torch.argmax(keyed_mean).item())
        mu, sigma = _difference_moments(gaussian, best)
        partners = open_pairs[best]
        scores = log_expected_positive_part(mu, sigma).masked_fill(~partners, float("-inf"))
        if not bool((scores > float("-inf")).any()):
            scores = mu.masked_fill(~partners, float("-inf"))
        challenger = int(torch.argmax(scores).item())
        return best, challenger
