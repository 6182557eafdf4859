"""Rank fusion on :class:`~probrank.data.Run`: normalisations, CombSUM/MNZ/MAX, RRF, META and
weighted (QLFusion, wmnz, weighted RRF) fusion, all behind one verb, :func:`fuse`; and fusion
trained on judgements (ProbFuse, SegFuse, SlideFuse, PosFuse, BayesFuse, MAPFuse, learned
weights by grid search or BoTorch), each with ``fit(runs, qrels)`` and ``fuse(runs)``, listed in
:class:`LearnedMethod`."""

import importlib
from typing import TYPE_CHECKING, Any

from probrank.fusion.bayesfuse import BayesFuse
from probrank.fusion.comb import Weights, comb_max, comb_mnz, comb_sum
from probrank.fusion.crossval import CrossValidatedFusion, cross_validated_fusion
from probrank.fusion.fuse import NEEDS_WEIGHTS, FusionMethod, fuse
from probrank.fusion.learned import FuserSettings, LearnedMethod, make_fuser
from probrank.fusion.mapfuse import MAPFuse
from probrank.fusion.meta import (
    ScoreMixture,
    fit_score_mixture,
    fit_score_mixtures,
    meta_fusion,
    meta_scores,
)
from probrank.fusion.normalize import Normalization, normalize, normalize_scores
from probrank.fusion.optimize import Optimiser, WeightSearch, optimise_weights
from probrank.fusion.posfuse import PosFuse
from probrank.fusion.probfuse import ProbFuse
from probrank.fusion.rrf import DEFAULT_RRF_K, reciprocal_ranks, rrf
from probrank.fusion.segfuse import SegFuse
from probrank.fusion.slidefuse import SlideFuse
from probrank.fusion.trained import TrainedFusion
from probrank.fusion.weighted import weighted_rrf, wmnz

if TYPE_CHECKING:
    from probrank.fusion.learned_weights import LearnedWeights
    from probrank.fusion.objective import FusionObjective, WeightedRule

_LAZY = {  # these import torch; probrank.fusion itself does not
    "FusionObjective": "probrank.fusion.objective",
    "WeightedRule": "probrank.fusion.objective",
    "LearnedWeights": "probrank.fusion.learned_weights",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_RRF_K",
    "NEEDS_WEIGHTS",
    "BayesFuse",
    "CrossValidatedFusion",
    "FuserSettings",
    "FusionMethod",
    "FusionObjective",
    "LearnedMethod",
    "LearnedWeights",
    "MAPFuse",
    "Normalization",
    "Optimiser",
    "PosFuse",
    "ProbFuse",
    "ScoreMixture",
    "SegFuse",
    "SlideFuse",
    "TrainedFusion",
    "WeightSearch",
    "WeightedRule",
    "Weights",
    "comb_max",
    "comb_mnz",
    "comb_sum",
    "cross_validated_fusion",
    "fit_score_mixture",
    "fit_score_mixtures",
    "fuse",
    "make_fuser",
    "meta_fusion",
    "meta_scores",
    "normalize",
    "normalize_scores",
    "optimise_weights",
    "reciprocal_ranks",
    "rrf",
    "weighted_rrf",
    "wmnz",
]
