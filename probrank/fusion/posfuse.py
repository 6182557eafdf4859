"""PosFuse (Lillis, Zhang, Toolan, Collier, Leonard & Dunnion 2010, "Estimating probabilities
for effective data fusion", SIGIR), as ranx implements it.

Training: for each rank `i`, the probability that a run's document at rank `i` is relevant is
the fraction of the training topics whose list reaches rank `i` that have a relevant
document there::

    P_i = sum_q rel(q, i) / #{q : the list of q has at least i documents}

for `i` up to the longest training list. Fusion: a document at rank `i` gets ``P_i`` from
that run (0 beyond the longest training list); the runs' contributions are summed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from probrank.fusion.trained import HitListFusion

__all__ = ["PosFuse", "rank_probabilities"]


def rank_probabilities(hits: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
    """``P_i`` for ranks `1..L` from `Q` hit lists (the longest of length `L`).

    Returns:
        `L` probabilities (empty when every list is empty).
    """
    longest = max((len(h) for h in hits), default=0)
    relevant = np.zeros(longest)
    reached = np.zeros(longest)
    for hit in hits:
        relevant[: len(hit)] += hit
        reached[: len(hit)] += 1.0
    return np.divide(relevant, reached, out=np.zeros(longest), where=reached > 0)


class PosFuse(HitListFusion):
    """PosFuse: the probability of relevance of each rank, summed over runs.

    Args:
        depth: Documents per list (training and fusion).
        relevance_level: Lowest grade counted as relevant.
    """

    method = "posfuse"

    def estimate(self, hits: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
        """``P_i`` per rank (see :func:`rank_probabilities`)."""
        return rank_probabilities(hits)

    def score_list(self, params: NDArray[np.float64], scores: Sequence[float]) -> list[float]:
        """``P_i`` for the document at rank `i`; 0 beyond the trained ranks."""
        known = len(params)
        return [float(params[i]) if i < known else 0.0 for i in range(len(scores))]
