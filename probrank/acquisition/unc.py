"""Uncertainty sampling (UNC), the paper's non-Bayesian baseline.

Each candidate's probability of being a good answer is read from its utility through a
logistic link, ``p(a) = sigmoid(f_a)``, with ``f_a`` the posterior *mean* (the posterior
variance is ignored: this is the baseline a point-estimate ranker can run). A candidate is
uncertain when ``p(a)`` is close to 0.5. The rule chosen here: ask about the unasked pair
``(a, b)`` that minimises ``|p(a) - 0.5| + |p(b) - 0.5|``; with nothing asked this is exactly
the two candidates whose ``p`` is closest to 0.5. Ties go to the first pair in row-major order;
the pair is returned as ``(i, j)`` with ``i < j``.

The rule depends on the scale of the utilities (``f = 0`` is the point of maximal
uncertainty), as in the paper.
"""

from __future__ import annotations

import torch
from torch import Tensor

from probrank.acquisition.pairs import (
    JointGaussian,
    OpenPairStrategy,
    best_open_pair,
)

__all__ = ["UncertaintySampling", "uncertainty"]


def uncertainty(mean: Tensor) -> Tensor:
    """``|sigmoid(mean) - 0.5|`` per candidate: 0 is maximally uncertain.

    Args:
        mean: `n` utilities (posterior means).

    Returns:
        `n` distances from 0.5, in ``[0, 0.5]``.
    """
    return (torch.sigmoid(mean) - 0.5).abs()


class UncertaintySampling(OpenPairStrategy):
    """Ask about the two most uncertain candidates whose pair is still open."""

    def choose(
        self, gaussian: JointGaussian, open_pairs: Tensor, generator: torch.Generator | None
    ) -> tuple[int, int]:
        """The open pair minimising ``|p(a) - 0.5| + |p(b) - 0.5|`` (only the mean is used)."""
        distance = uncertainty(gaussian.mean)
        return best_open_pair(-(distance.unsqueeze(-1) + distance.unsqueeze(-2)), open_pairs)
