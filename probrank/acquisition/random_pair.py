"""Random pair selection: a uniformly random unasked pair (the paper's "random" baseline)."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from probrank.acquisition.pairs import (
    joint_gaussian,
    normalize_asked,
    strict_upper,
    unasked_matrix,
)

__all__ = ["RandomPair"]


class RandomPair:
    """Draw one unasked unordered pair uniformly; returns ``(i, j)`` with ``i < j``."""

    def __call__(
        self,
        posterior: object,
        asked: Iterable[tuple[int, int]] = (),
        generator: torch.Generator | None = None,
    ) -> tuple[int, int]:
        """Select the pair.

        Args:
            posterior: Joint posterior over `n` candidates (only `n` is used).
            asked: Unordered pairs asked already.
            generator: Source of the draw (the global RNG when None).

        Raises:
            ExhaustedPairsError: Every pair has been asked.
        """
        n = joint_gaussian(posterior).num_candidates
        open_pairs = unasked_matrix(n, normalize_asked(asked, n)) & strict_upper(n)
        candidates = open_pairs.nonzero()
        pick = int(torch.randint(candidates.shape[0], (1,), generator=generator).item())
        return int(candidates[pick, 0]), int(candidates[pick, 1])

    def __repr__(self) -> str:
        return "RandomPair()"
