"""The registry of fusion methods trained on judgements, and one factory for all of them.

``make_fuser(method, options)`` builds an unfitted
:class:`~probrank.fusion.trained.TrainedFusion` from a :class:`LearnedMethod` and one
:class:`FuserSettings` (each method takes the options that concern it), so that the command
line and the cross-validation (:mod:`probrank.fusion.crossval`) treat every method alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from probrank._options import parse_enum
from probrank.fusion.bayesfuse import BayesFuse
from probrank.fusion.mapfuse import MAPFuse
from probrank.fusion.normalize import Normalization
from probrank.fusion.optimize import DEFAULT_BUDGET, DEFAULT_GRID_STEPS, Optimiser
from probrank.fusion.posfuse import PosFuse
from probrank.fusion.probfuse import DEFAULT_SEGMENTS, ProbFuse
from probrank.fusion.rrf import DEFAULT_RRF_K
from probrank.fusion.segfuse import SegFuse
from probrank.fusion.slidefuse import DEFAULT_WINDOW, SlideFuse
from probrank.fusion.trained import TrainedFusion

__all__ = ["FuserSettings", "LearnedMethod", "make_fuser"]


class LearnedMethod(str, Enum):
    """A fusion method fitted on training topics' judgements."""

    PROBFUSE = "probfuse"
    """ProbFuse (Lillis et al. 2006): per-segment probability of relevance / segment number."""
    SEGFUSE = "segfuse"
    """SegFuse (Shokouhi 2007): per-segment probability times 1 + the normalised score."""
    SLIDEFUSE = "slidefuse"
    """SlideFuse (Lillis et al. 2008): per-rank probability averaged over a sliding window."""
    POSFUSE = "posfuse"
    """PosFuse (Lillis et al. 2010): per-rank probability of relevance."""
    BAYESFUSE = "bayesfuse"
    """BayesFuse (Aslam & Montague 2001): sum of per-rank log-odds of relevance."""
    MAPFUSE = "mapfuse"
    """MAPFuse (Lillis et al. 2010): the run's training MAP divided by the rank."""
    WSUM = "wsum"
    """Weighted CombSUM with weights that maximise training nDCG@10."""
    WMNZ = "wmnz"
    """Weighted CombMNZ (ranx's ``wmnz``) with weights that maximise training nDCG@10."""
    WRRF = "wrrf"
    """Weighted RRF with weights that maximise training nDCG@10."""


@dataclass(frozen=True)
class FuserSettings:
    """Options of :func:`make_fuser`; each method uses those that concern it.

    Attributes:
        depth: Documents per list (all methods).
        relevance_level: Lowest relevant grade in training (the probabilistic methods).
        norm: Score normalisation (SegFuse, ``wsum``, ``wmnz``).
        segments: ProbFuse's segments per list.
        window: SlideFuse's window half-width.
        optimiser: Weight search of ``wsum``, ``wmnz``, ``wrrf``.
        budget: Evaluations of Bayesian optimisation.
        grid_steps: Lattice steps per unit of the grid.
        rrf_k: RRF's ``k`` (``wrrf``).
        seed: Seeds Bayesian optimisation.
    """

    depth: int | None = 100
    relevance_level: int = 1
    norm: Normalization | str = Normalization.MINMAX
    segments: int = DEFAULT_SEGMENTS
    window: int = DEFAULT_WINDOW
    optimiser: Optimiser | str = Optimiser.BOTORCH
    budget: int = DEFAULT_BUDGET
    grid_steps: int = DEFAULT_GRID_STEPS
    rrf_k: float = DEFAULT_RRF_K
    seed: int = 0


def _probfuse(o: FuserSettings) -> TrainedFusion:
    return ProbFuse(o.segments, depth=o.depth, relevance_level=o.relevance_level)


def _segfuse(o: FuserSettings) -> TrainedFusion:
    return SegFuse(o.norm, depth=o.depth, relevance_level=o.relevance_level)


def _slidefuse(o: FuserSettings) -> TrainedFusion:
    return SlideFuse(o.window, depth=o.depth, relevance_level=o.relevance_level)


def _posfuse(o: FuserSettings) -> TrainedFusion:
    return PosFuse(depth=o.depth, relevance_level=o.relevance_level)


def _bayesfuse(o: FuserSettings) -> TrainedFusion:
    return BayesFuse(depth=o.depth, relevance_level=o.relevance_level)


def _mapfuse(o: FuserSettings) -> TrainedFusion:
    return MAPFuse(depth=o.depth, relevance_level=o.relevance_level)


def _weighted(rule: str) -> Callable[[FuserSettings], TrainedFusion]:
    def build(o: FuserSettings) -> TrainedFusion:
        from probrank.fusion.learned_weights import LearnedWeights  # imports torch

        return LearnedWeights(
            rule,
            optimiser=o.optimiser,
            budget=o.budget,
            grid_steps=o.grid_steps,
            norm=o.norm,
            depth=o.depth,
            rrf_k=o.rrf_k,
            seed=o.seed,
        )

    return build


_FACTORIES: dict[LearnedMethod, Callable[[FuserSettings], TrainedFusion]] = {
    LearnedMethod.PROBFUSE: _probfuse,
    LearnedMethod.SEGFUSE: _segfuse,
    LearnedMethod.SLIDEFUSE: _slidefuse,
    LearnedMethod.POSFUSE: _posfuse,
    LearnedMethod.BAYESFUSE: _bayesfuse,
    LearnedMethod.MAPFUSE: _mapfuse,
    LearnedMethod.WSUM: _weighted("wsum"),
    LearnedMethod.WMNZ: _weighted("wmnz"),
    LearnedMethod.WRRF: _weighted("wrrf"),
}


def make_fuser(method: LearnedMethod | str, options: FuserSettings | None = None) -> TrainedFusion:
    """An unfitted fuser of ``method`` built with ``options``.

    Raises:
        InputDataError: an unknown method or a bad option.
    """
    return _FACTORIES[parse_enum(LearnedMethod, method, "method")](options or FuserSettings())
