"""Weighted CombSUM, CombMNZ and RRF with per-run weights learned on training topics.

:class:`LearnedWeights` searches the weight simplex for the weights that maximise the mean
nDCG@10 (trec_eval's ``ndcg_cut_10``) of the fused training topics, by a grid (as ranx's
``optimize_fusion``) or by Bayesian optimisation with BoTorch (:mod:`probrank.fusion.optimize`),
then fuses any topics with them::

    model = LearnedWeights("wsum", optimiser="botorch", budget=40).fit(runs, qrels)
    model.weights            # {run name: weight}, summing to 1
    fused = model.fuse(runs)
"""

from __future__ import annotations

from probrank._options import parse_enum
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.fuse import FusionMethod, fuse
from probrank.fusion.normalize import Normalization
from probrank.fusion.objective import DEFAULT_MEASURE, FusionObjective, WeightedRule, parse_cutoff
from probrank.fusion.optimize import (
    DEFAULT_BUDGET,
    DEFAULT_GRID_STEPS,
    Optimiser,
    WeightSearch,
    optimise_weights,
)
from probrank.fusion.rrf import DEFAULT_RRF_K
from probrank.fusion.trained import TrainedFusion

__all__ = ["LearnedWeights"]

_RULES: dict[WeightedRule, FusionMethod] = {
    WeightedRule.WSUM: FusionMethod.WEIGHTED,
    WeightedRule.WMNZ: FusionMethod.WEIGHTED_MNZ,
    WeightedRule.WRRF: FusionMethod.WEIGHTED_RRF,
}


class LearnedWeights(TrainedFusion):
    """A weighted fusion rule whose per-run weights maximise nDCG@k on training topics.

    Args:
        rule: A :class:`~probrank.fusion.objective.WeightedRule` or its value (``"wsum"``,
            ``"wmnz"``, ``"wrrf"``).
        optimiser: An :class:`~probrank.fusion.optimize.Optimiser` or its value.
        budget: Objective evaluations for ``"botorch"``.
        grid_steps: Lattice steps per unit for ``"grid"`` (10: weights in steps of 0.1).
        norm: Score normalisation (``wsum``, ``wmnz``).
        depth: Documents per list.
        rrf_k: RRF's ``k`` (``wrrf``).
        measure: The objective, ``"nDCG@k"``.
        seed: Seeds Bayesian optimisation.

    Attributes:
        search: After :meth:`~probrank.fusion.TrainedFusion.fit`, the
            :class:`~probrank.fusion.optimize.WeightSearch` (every weight vector tried and its
            training nDCG@k).
    """

    def __init__(
        self,
        rule: WeightedRule | str = WeightedRule.WSUM,
        *,
        optimiser: Optimiser | str = Optimiser.BOTORCH,
        budget: int = DEFAULT_BUDGET,
        grid_steps: int = DEFAULT_GRID_STEPS,
        norm: Normalization | str = Normalization.MINMAX,
        depth: int | None = 100,
        rrf_k: float = DEFAULT_RRF_K,
        measure: str = DEFAULT_MEASURE,
        seed: int = 0,
    ) -> None:
        super().__init__(depth=depth)
        self.rule = parse_enum(WeightedRule, rule, "rule")
        self.method = self.rule.value
        self.optimiser = parse_enum(Optimiser, optimiser, "optimiser")
        for label, value in (("budget", budget), ("grid_steps", grid_steps)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputDataError(f"{label} must be a positive integer, got {value!r}")
        self.budget, self.grid_steps = budget, grid_steps
        self.norm = parse_enum(Normalization, norm, "norm")
        self.rrf_k = float(rrf_k)
        parse_cutoff(measure)
        self.measure = measure
        self.seed = seed
        self.search: WeightSearch | None = None
        self._weights: dict[str, float] = {}

    @property
    def weights(self) -> dict[str, float]:
        """The learned weights ``{run name: weight}`` (non-negative, summing to 1)."""
        self._require_fitted()
        return dict(self._weights)

    def _fit(self, runs: list[Run], qrels: Qrels, topics: list[str]) -> None:
        objective = FusionObjective(
            runs,
            qrels,
            self.rule,
            topics=topics,
            norm=self.norm,
            depth=self.depth,
            rrf_k=self.rrf_k,
            measure=self.measure,
        )
        self.search = optimise_weights(
            objective,
            len(runs),
            self.optimiser,
            budget=self.budget,
            steps=self.grid_steps,
            seed=self.seed,
        )
        self._weights = {run.name: w for run, w in zip(runs, self.search.weights, strict=True)}

    def _fuse(self, runs: list[Run], name: str) -> Run:
        return fuse(
            runs,
            _RULES[self.rule],
            norm=self.norm,
            depth=self.depth,
            weights=self._weights,
            rrf_k=self.rrf_k,
            name=name,
        )
