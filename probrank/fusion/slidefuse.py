"""SlideFuse (Lillis, Toolan, Collier & Dunnion 2008, "Extending probabilistic data fusion using
sliding windows", ECIR), as ranx implements it.

Training: the per-rank probabilities ``P_i`` of PosFuse
(:func:`~probrank.fusion.posfuse.rank_probabilities`). Fusion: the document at rank `p`
(0-based) of a list of `n` documents gets the mean of ``P`` over the window of ranks
``a = max(p - w, 0)`` to ``b = min(p + w, n - 1)``::

    score(p) = sum_{j = a..b, j < L} P_j / (b - a + 1)

(ranks beyond the longest training list `L` add 0 but still count in the window's size, as
in ranx); the runs' contributions are summed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from probrank.exceptions import InputDataError
from probrank.fusion.posfuse import rank_probabilities
from probrank.fusion.trained import HitListFusion

__all__ = ["DEFAULT_WINDOW", "SlideFuse"]

DEFAULT_WINDOW = 5
"""Default half-width `w` of the window (ranx has no default: it grid-searches 1..100)."""


class SlideFuse(HitListFusion):
    """SlideFuse: PosFuse's probabilities smoothed over a window of ``2 w + 1`` ranks.

    Args:
        window: `w`, ranks on each side of a document in its window (0: PosFuse).
        depth: Documents per list (training and fusion).
        relevance_level: Lowest grade counted as relevant.
    """

    method = "slidefuse"

    def __init__(
        self, window: int = DEFAULT_WINDOW, *, depth: int | None = 100, relevance_level: int = 1
    ) -> None:
        super().__init__(depth=depth, relevance_level=relevance_level)
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise InputDataError(f"window must be an integer >= 0, got {window!r}")
        self.window = window

    def estimate(self, hits: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
        """``P_i`` per rank (see :func:`~probrank.fusion.posfuse.rank_probabilities`)."""
        return rank_probabilities(hits)

    def score_list(self, params: NDArray[np.float64], scores: Sequence[float]) -> list[float]:
        """The window mean of ``P`` around each rank (see the module docstring)."""
        n, w = len(scores), self.window
        out = []
        for p in range(n):
            a, b = max(p - w, 0), min(p + w, n - 1)
            out.append(math.fsum(params[a : b + 1]) / (b - a + 1))
        return out
