"""BayesFuse (Aslam & Montague 2001, "Models for metasearch", SIGIR), as ranx implements it.

Training: the ranks are grouped into bands at the cut-offs ``0, 5, 10, 15, 20, 30, 100, 200,
500, 1000`` (:data:`CUTOFFS`); for each band the precision of a run's lists (relevant
documents in the band divided by the band's width, a short list counting its missing ranks
as not relevant) is averaged over the training topics into ``p``, and every rank in the band
gets the log-odds ``log(p / (1 - p))``; ``p = 0`` is replaced by 0.001 and ``1 - p = 0`` by
0.001, so the log-odds stay finite.

Fusion: a document's score is the sum, over all runs, of its log-odds in each run, where a
run that did not retrieve it (or ranks it beyond the last cut-off) contributes
``log(0.001 / 0.999)`` (:data:`MISSING_LOG_ODDS`), as in ranx. Aslam & Montague sum the
log-likelihood ratios ``log P(rank | rel) / P(rank | nonrel)``; ranx's per-rank posterior
log-odds differ from those by one constant per run (its prior log-odds), which changes the
ranking only between documents that different sets of runs retrieved.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from probrank.data.trec import Run
from probrank.fusion.comb import collect_lists, combine
from probrank.fusion.trained import HitListFusion

__all__ = ["CUTOFFS", "MISSING_LOG_ODDS", "BayesFuse"]

CUTOFFS: tuple[int, ...] = (0, 5, 10, 15, 20, 30, 100, 200, 500, 1000)
"""Band boundaries (0-based ranks): band `j` holds ranks ``CUTOFFS[j]`` to ``CUTOFFS[j+1] - 1``."""
_FLOOR = 0.001
MISSING_LOG_ODDS = math.log(_FLOOR / (1.0 - _FLOOR))
"""The log-odds of a document a run did not retrieve, ``log(0.001 / 0.999)``."""


class BayesFuse(HitListFusion):
    """BayesFuse: the sum over runs of per-rank log-odds of relevance.

    Args:
        depth: Documents per list (training and fusion); ranks beyond 1000 score as missing.
        relevance_level: Lowest grade counted as relevant.
    """

    method = "bayesfuse"

    def estimate(self, hits: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
        """Log-odds for ranks ``0 .. 999`` (constant within each band)."""
        odds = np.zeros(CUTOFFS[-1])
        for start, end in itertools.pairwise(CUTOFFS):
            p = math.fsum(math.fsum(h[start:end]) / (end - start) for h in hits) / len(hits)
            if p == 0.0:
                p = _FLOOR
            q = 1.0 - p
            if q == 0.0:
                q = _FLOOR
            odds[start:end] = math.log(p / q)
        return odds

    def score_list(self, params: NDArray[np.float64], scores: Sequence[float]) -> list[float]:
        """The log-odds of each rank (:data:`MISSING_LOG_ODDS` beyond the trained ranks)."""
        known = len(params)
        return [float(params[i]) if i < known else MISSING_LOG_ODDS for i in range(len(scores))]

    def _fuse(self, runs: list[Run], name: str) -> Run:
        lists = [self._scored_lists(run) for run in runs]
        count = len(runs)

        def rule(values: list[float]) -> float:
            return math.fsum([*values, *([MISSING_LOG_ODDS] * (count - len(values)))])

        return combine(collect_lists([r.name for r in runs], lists), rule, name)
