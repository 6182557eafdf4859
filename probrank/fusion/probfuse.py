"""ProbFuse (Lillis, Toolan, Collier & Dunnion 2006, "ProbFuse: a probabilistic approach to
data fusion", SIGIR), as ranx implements it.

Training: each run's list of a training topic (length `n`, its top ``depth``) is cut into
``segments`` = `x` segments of ``ceil(n / x)`` documents (the last ones shorter or empty).
The probability that a document in segment `k` (1-based) is relevant is the fraction of
relevant documents in that segment, averaged over the `Q` training topics::

    P_k = (1 / Q) * sum_q  relevant_in_segment(q, k) / size(q, k)

(a topic whose list has no segment `k` adds 0; unjudged documents count as not relevant:
ranx's variant of Lillis et al.'s estimator, which also has a judged-only one).

Fusion: a document in segment `k` of a list of length `n` (segments of ``ceil(n / x)``
documents again) gets ``P_k / k`` from that run; the runs' contributions are summed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from probrank.fusion.trained import HitListFusion, check_positive

__all__ = ["DEFAULT_SEGMENTS", "ProbFuse"]

DEFAULT_SEGMENTS = 25
"""Default number of segments per list (ranx has no default: it grid-searches 1..100)."""


class ProbFuse(HitListFusion):
    """ProbFuse: per-segment probabilities of relevance, discounted by the segment number.

    Args:
        segments: `x`, segments per list.
        depth: Documents per list (training and fusion).
        relevance_level: Lowest grade counted as relevant.

    Example::

        fused = ProbFuse(segments=25).fit(train_runs, qrels).fuse(test_runs)
    """

    method = "probfuse"

    def __init__(
        self, segments: int = DEFAULT_SEGMENTS, *, depth: int | None = 100, relevance_level: int = 1
    ) -> None:
        super().__init__(depth=depth, relevance_level=relevance_level)
        self.segments = check_positive("segments", segments)

    def estimate(self, hits: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
        """`x` probabilities ``P_k`` from `Q` hit lists (see the module docstring)."""
        x = self.segments
        totals = np.zeros(x)
        for hit in hits:
            size = math.ceil(len(hit) / x)
            for k in range(x):
                segment = hit[k * size : (k + 1) * size]
                if len(segment):
                    totals[k] += math.fsum(segment) / len(segment)
        return totals / len(hits)

    def score_list(self, params: NDArray[np.float64], scores: Sequence[float]) -> list[float]:
        """``P_k / k`` for the document at each rank (segments of ``ceil(n / x)``)."""
        size = math.ceil(len(scores) / len(params))
        return [float(params[i // size]) / (i // size + 1) for i in range(len(scores))]
