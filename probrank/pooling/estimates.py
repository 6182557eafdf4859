"""Estimates of every run's MAP and nDCG@10 from partial judgements, with 90% intervals and the
probability that one run beats another.

:func:`point_estimates` is the classical reading of partial qrels (an unjudged document is not
relevant; the interval is the point). The ``bayesian`` strategy's estimates
(:func:`probrank.pooling.strategies.bayesian.bayesian_estimates`) and active sampling's
(:mod:`probrank.pooling.strategies.active`) return the same :class:`PoolEstimates`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from probrank.pooling.measures import ideal_dcg, run_measures
from probrank.pooling.pool import Judgements

__all__ = ["INTERVAL", "MEASURES", "PoolEstimates", "point_estimates"]

INTERVAL = 0.9
"""Mass of the reported intervals."""

MEASURES = ("map", "ndcg_cut_10")
"""The measures estimated, by their trec_eval names."""


@dataclass(frozen=True)
class PoolEstimates:
    """Estimated measures of runs.

    Attributes:
        run_names: The runs, `num_runs`.
        mean: ``{measure: means}``, each `num_runs`.
        lower: ``{measure: 5% quantiles}``, each `num_runs`.
        upper: ``{measure: 95% quantiles}``, each `num_runs`.
        beats: ``P(MAP of run i > MAP of run j)``, `num_runs x num_runs`, or None for point
            estimates.
        draws: ``{measure: draws}``, each `s x num_runs`, when the estimate is a posterior.
    """

    run_names: tuple[str, ...]
    mean: dict[str, np.ndarray]
    lower: dict[str, np.ndarray]
    upper: dict[str, np.ndarray]
    beats: np.ndarray | None = None
    draws: dict[str, np.ndarray] | None = None

    @classmethod
    def from_draws(cls, run_names: tuple[str, ...], draws: dict[str, np.ndarray]) -> PoolEstimates:
        """Summaries of posterior draws (each `s x num_runs`): means, 90% equal-tailed
        intervals and pairwise ``P(A > B)`` of MAP (ties count one half)."""
        tail = (1.0 - INTERVAL) / 2.0
        maps = draws["map"]
        beats = (maps[:, :, None] > maps[:, None, :]).mean(axis=0) + 0.5 * (
            maps[:, :, None] == maps[:, None, :]
        ).mean(axis=0)
        np.fill_diagonal(beats, 0.5)
        return cls(
            run_names=run_names,
            mean={m: d.mean(axis=0) for m, d in draws.items()},
            lower={m: np.quantile(d, tail, axis=0) for m, d in draws.items()},
            upper={m: np.quantile(d, 1.0 - tail, axis=0) for m, d in draws.items()},
            beats=beats,
            draws=draws,
        )

    @classmethod
    def from_points(
        cls, run_names: tuple[str, ...], values: dict[str, np.ndarray]
    ) -> PoolEstimates:
        """Point estimates (the interval is the point)."""
        return cls(run_names=run_names, mean=values, lower=values, upper=values)

    def to_json(self) -> dict[str, Any]:
        """``{"RUN": {"map": {"mean", "lower", "upper"}, "ndcg_cut_10": {...}}}``."""
        return {
            name: {
                m: {
                    "mean": float(self.mean[m][r]),
                    "lower": float(self.lower[m][r]),
                    "upper": float(self.upper[m][r]),
                }
                for m in self.mean
            }
            for r, name in enumerate(self.run_names)
        }

    def pairwise_json(self) -> dict[str, dict[str, float]]:
        """``{"A": {"B": P(MAP of A > MAP of B)}}`` (empty for point estimates)."""
        if self.beats is None:
            return {}
        return {
            a: {b: float(self.beats[i, j]) for j, b in enumerate(self.run_names) if j != i}
            for i, a in enumerate(self.run_names)
        }


def point_estimates(judgements: Judgements, *, level: int = 1) -> PoolEstimates:
    """The runs' measures on the partial qrels, unjudged documents counted not relevant (what
    trec_eval gives on the judgements made, restricted to the pool).

    Args:
        judgements: The judgements so far.
        level: Grades >= ``level`` are relevant.
    """
    pool = judgements.pool
    grades = np.maximum(judgements.grades, 0).astype(np.float64)
    ideal = ideal_dcg(pool, grades[None, :])
    maps, ndcgs = run_measures(pool, grades, level=level, ideal=ideal)
    return PoolEstimates.from_points(pool.run_names, {"map": maps, "ndcg_cut_10": ndcgs})
