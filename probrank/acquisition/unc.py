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

from collections.abc import Iterable

import torch
from torch import Tensor

from probrank.acquisition.pairs import (
    best_open_pair,
    joint_gaussian,
    normalize_asked,
    unasked_matrix,
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


class UncertaintySampling:
    """Ask about the two most uncertain candidates whose pair is still open."""

    def __call__(
        self,
        posterior: object,
        asked: Iterable[tuple[int, int]] = (),
        generator: torch.Generator | None = None,
    ) -> tuple[int, int]:
        """Select the pair.

        Args:
            posterior: Joint posterior over `n` candidates (only its mean is used).
            asked: Unordered pairs asked already.
            generator: Unused (the rule is deterministic).

        Raises:
            ExhaustedPairsError: Every pair has been asked.
        """
        gaussian = joint_gaussian(posterior)
        n = gaussian.num_candidates
        open_pairs = unasked_matrix(n, normalize_asked(asked, n))
        distance = uncertainty(gaussian.mean)
        return best_open_pair(-(distance.unsqueeze(-1) + distance.unsqueeze(-2)), open_pairs)

    def __repr__(self) -> str:
        return "UncertaintySampling()"
