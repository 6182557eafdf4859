"""Rank fusion on :class:`~probrank.data.Run`: normalisations, CombSUM/MNZ/MAX, RRF, META and
weighted (QLFusion) fusion, all behind one verb, :func:`fuse`."""

from probrank.fusion.comb import Weights, comb_max, comb_mnz, comb_sum
from probrank.fusion.fuse import FusionMethod, fuse
from probrank.fusion.meta import (
    ScoreMixture,
    fit_score_mixture,
    fit_score_mixtures,
    meta_fusion,
    meta_scores,
)
from probrank.fusion.normalize import Normalization, normalize, normalize_scores
from probrank.fusion.rrf import DEFAULT_RRF_K, reciprocal_ranks, rrf

__all__ = [
    "DEFAULT_RRF_K",
    "FusionMethod",
    "Normalization",
    "ScoreMixture",
    "Weights",
    "comb_max",
    "comb_mnz",
    "comb_sum",
    "fit_score_mixture",
    "fit_score_mixtures",
    "fuse",
    "meta_fusion",
    "meta_scores",
    "normalize",
    "normalize_scores",
    "reciprocal_ranks",
    "rrf",
]
