"""Random pair selection: a uniformly random unasked pair (the paper's "random" baseline)."""

from __future__ import annotations

import torch
from torch import Tensor

from probrank.acquisition.pairs import (
    JointGaussian,
    OpenPairStrategy,
    strict_upper,
)

__all__ = ["RandomPair"]


class RandomPair(OpenPairStrategy):
    """Draw one unasked unordered pair uniformly; returns ``(i, j)`` with ``i < j``."""

    def choose(
        self, gaussian: JointGaussian, open_pairs: Tensor, generator: torch.Generator | None
    ) -> tuple[int, int]:
        """A uniform draw among the open pairs (only `n` of the posterior is used)."""
        candidates = (open_pairs & strict_upper(gaussian.num_candidates)).nonzero()
        pick = int(torch.randint(candidates.shape[0], (1,), generator=generator).item())
        return int(candidates[pick, 0]), int(candidates[pick, 1])
