"""SegFuse (Shokouhi 2007, "Segmentation of search engine results for effective data-fusion",
ECIR), as ranx implements it.

Segments grow exponentially down the list. ranx (and so probrank) puts the segment
boundaries at ranks ``10 * 2**(k - 1) - 5`` for `k = 1..10`: segments of ranks ``1-5``,
``6-15``, ``16-35``, ``36-75``, ... (sizes 5, 10, 20, 40, ...; :data:`SEGMENT_BOUNDS`). Read
as segment *sizes*, the same formula would give segments of 5, 15, 35, ... documents; probrank
keeps ranx's boundaries so that its numbers equal ranx's.

Training: the probability that a document in segment `k` is relevant is the number of
relevant documents in that segment divided by the segment's size (a list that stops early
counts the missing ranks as not relevant), averaged over the training topics. Fusion: a
document in segment `k` with normalised score `s` (per list, :class:`Normalization`, min-max by
default) gets ``P_k * (s + 1)`` from that run (0 beyond rank 5115, the last boundary); the
runs' contributions are summed.

Normalisation differs from ranx's on degenerate lists only: probrank's min-max maps a list of
equal scores to 1.0, ranx's to 0.0 (see :class:`~probrank.fusion.normalize.Normalization`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from probrank._options import parse_enum
from probrank.fusion.normalize import Normalization, normalize_scores
from probrank.fusion.trained import HitListFusion

__all__ = ["SEGMENT_BOUNDS", "SegFuse"]

SEGMENT_BOUNDS: tuple[int, ...] = (0, *(10 * 2 ** (k - 1) - 5 for k in range(1, 11)))
"""0-based rank boundaries: segment `k` holds ranks ``SEGMENT_BOUNDS[k - 1]`` up to (not
including) ``SEGMENT_BOUNDS[k]``: 0, 5, 15, 35, 75, ..., 5115."""


class SegFuse(HitListFusion):
    """SegFuse: per-segment probabilities of relevance times ``1 +`` the normalised score.

    Args:
        norm: Score normalisation of each list (default min-max).
        depth: Documents per list (training and fusion).
        relevance_level: Lowest grade counted as relevant.
    """

    method = "segfuse"

    def __init__(
        self,
        norm: Normalization | str = Normalization.MINMAX,
        *,
        depth: int | None = 100,
        relevance_level: int = 1,
    ) -> None:
        super().__init__(depth=depth, relevance_level=relevance_level)
        self.norm = parse_enum(Normalization, norm, "norm")

    def estimate(self, hits: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
        """One probability per segment (10 segments; see the module docstring)."""
        bounds = SEGMENT_BOUNDS
        totals = np.zeros(len(bounds) - 1)
        for hit in hits:
            for k in range(len(bounds) - 1):
                start, end = bounds[k], bounds[k + 1]
                totals[k] += math.fsum(hit[start:end]) / (end - start)
        return totals / len(hits)

    def score_list(self, params: NDArray[np.float64], scores: Sequence[float]) -> list[float]:
        """``P_k * (s + 1)`` per document (0 beyond the last segment)."""
        normalised = normalize_scores(scores, self.norm)
        out = []
        for i, s in enumerate(normalised):
            k = bisect.bisect_right(SEGMENT_BOUNDS, i) - 1
            out.append(float(params[k]) * (s + 1.0) if k < len(params) else 0.0)
        return out
