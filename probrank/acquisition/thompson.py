"""Thompson sampling for pairs: two joint posterior draws, the argmax of each.

Two utility vectors ``f1, f2`` are drawn from the joint posterior (``mean + root @ z`` with
``z`` standard normal from the given generator; ``root`` is the low-rank root of a
``RootLinearOperator`` covariance, else the symmetric square root from an eigendecomposition,
which tolerates singular covariances). The first candidate is the argmax of ``f1`` among the
candidates that still have an unasked partner; the second is the argmax of ``f2`` among that
candidate's unasked partners, so the two are always distinct and the pair is never one asked
before. The pair is returned in that order. Ties go to the lower index.
"""

from __future__ import annotations

import torch
from torch import Tensor

from probrank.acquisition.pairs import (
    JointGaussian,
    OpenPairStrategy,
    joint_gaussian,
)

__all__ = ["ThompsonPair", "joint_draws"]


def _root(gaussian: JointGaussian) -> Tensor:
    if gaussian.root is not None:
        return gaussian.root
    eigenvalues, eigenvectors = torch.linalg.eigh(gaussian.covariance)
    return eigenvectors * eigenvalues.clamp(min=0.0).sqrt()


def joint_draws(
    posterior: object, num_draws: int, generator: torch.Generator | None = None
) -> Tensor:
    """Draws of all candidate utilities from one joint posterior.

    Args:
        posterior: Joint posterior over `n` candidates.
        num_draws: Number of draws `S`.
        generator: CPU generator for the standard normals (the global RNG when None).

    Returns:
        `S x n` float64 draws.
    """
    return _draws(joint_gaussian(posterior), num_draws, generator)


def _draws(gaussian: JointGaussian, num_draws: int, generator: torch.Generator | None) -> Tensor:
    root = _root(gaussian)
    z = torch.randn(num_draws, root.shape[-1], generator=generator, dtype=torch.float64)
    return gaussian.mean + z @ root.T


class ThompsonPair(OpenPairStrategy):
    """Ask about the winners of two independent joint posterior draws."""

    def choose(
        self, gaussian: JointGaussian, open_pairs: Tensor, generator: torch.Generator | None
    ) -> tuple[int, int]:
        """The argmax of one draw among candidates with an open pair, then the argmax of a
        second draw among that candidate's open partners."""
        draws = _draws(gaussian, 2, generator)
        first_draw = draws[0].masked_fill(~open_pairs.any(dim=1), float("-inf"))
        first = int(torch.argmax(first_draw).item())
        second = int(torch.argmax(draws[1].masked_fill(~open_pairs[first], float("-inf"))).item())
        return first, second
