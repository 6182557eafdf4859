"""MAPFuse (Lillis, Zhang, Toolan, Collier, Leonard & Dunnion 2010, "Estimating probabilities
for effective data fusion", SIGIR), as ranx implements it.

Training: each run's mean average precision on the training topics, computed by
:func:`probrank.evaluation.evaluate` (trec_eval's ``map``) on the run cut at ``depth``, every
training topic counted (trec_eval ``-c``: a run that lacks a topic scores 0 there). Fusion: the
document at rank `r` (1-based) gets ``MAP / r`` from that run; the runs' contributions are
summed.

ranx computes MAP with its own ``evaluate(qrels, run, "map")``: the same definition, over the
qrels' topics, but with its own order of tied scores; on runs without ties the two agree.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from probrank.data.trec import Qrels, Run
from probrank.fusion.trained import PositionalFusion

__all__ = ["MAPFuse"]


class MAPFuse(PositionalFusion):
    """MAPFuse: each run's MAP divided by the rank.

    Args:
        depth: Documents per list (training and fusion).
        relevance_level: Lowest grade counted as relevant (trec_eval ``-l``).

    The learned parameter of a run
    (:attr:`~probrank.fusion.trained.PositionalFusion.params`) is a one-element array, its MAP.
    """

    method = "mapfuse"

    def _fit(self, runs: list[Run], qrels: Qrels, topics: list[str]) -> None:
        from probrank.evaluation.measures import Evaluator

        judged = qrels.as_dict()
        training = Qrels({q: judged[q] for q in topics}, name=qrels.name)
        evaluator = Evaluator(
            training, ["AP"], relevance_level=self.relevance_level, all_queries=True
        )
        self._params = {}
        for run in runs:
            cut = run.restrict(topics)
            if self.depth is not None:
                cut = cut.truncate(self.depth)
            value = evaluator(cut)["AP"] if len(cut) else 0.0
            self._params[run.name] = np.array([value])

    def score_list(self, params: NDArray[np.float64], scores: Sequence[float]) -> list[float]:
        """``MAP / r`` for the document at rank `r`."""
        value = float(params[0])
        return [value / rank for rank in range(1, len(scores) + 1)]
