"""One verb for unsupervised rank fusion: cut, normalise, combine.

``fuse(runs, method)`` cuts each run at ``depth`` (trec_eval order), normalises each query's
list (score-based methods), and combines. A topic missing from some runs is fused from the runs
that have it; empty lists are skipped; a topic no run retrieves anything for is absent from the
output. The result does not depend on the order of ``runs``: per-document combinations are
order-free (exactly rounded sums, max, counts) and ties are left to trec_eval's docno order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from probrank._options import parse_enum
from probrank.data.trec import Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import (
    Weights,
    check_runs,
    collect_lists,
    combine,
    combmax_rule,
    combmnz_rule,
    combsum_rule,
)
from probrank.fusion.meta import meta_fusion
from probrank.fusion.normalize import Normalization, check_depth, normalize_lists
from probrank.fusion.rrf import DEFAULT_RRF_K, rrf
from probrank.fusion.weighted import combine_wmnz, weighted_rrf

__all__ = ["NEEDS_WEIGHTS", "FusionMethod", "fuse"]


class FusionMethod(str, Enum):
    """The fusion rule :func:`fuse` applies."""

    COMBSUM = "combsum"
    """Sum of the normalised scores (Fox & Shaw 1994); per-run weights if ``weights`` given."""
    COMBMNZ = "combmnz"
    """CombSUM times the number of runs that retrieved the document (Fox & Shaw 1994)."""
    COMBMAX = "combmax"
    """Highest normalised score (Fox & Shaw 1994)."""
    RRF = "rrf"
    """Reciprocal rank fusion, ``sum 1 / (k + rank)`` (Cormack et al. 2009); ignores ``norm``."""
    META = "meta"
    """Sum of posterior probabilities of relevance under a per-list Gaussian + exponential
    score mixture fitted by EM (Manmatha et al. 2001); ignores ``norm``."""
    WEIGHTED = "weighted"
    """Weighted CombSUM, ``sum_i w_i(q) s_i(d)``: QLFusion's rule with ``w_i(q)`` the predicted
    proportion of relevant documents in run ``i``'s top list for query ``q``. Needs
    ``weights``."""
    WEIGHTED_MNZ = "weighted_mnz"
    """Weighted CombMNZ as ranx's ``wmnz`` (Wu & Crestani 2002): the sum of the normalised
    scores times the sum of the weights of the runs that retrieved the document. Needs
    ``weights``."""
    WEIGHTED_RRF = "weighted_rrf"
    """Weighted RRF, ``sum_i w_i / (k + rank_i)``; ignores ``norm``. Needs ``weights``."""


@dataclass(frozen=True)
class _Request:
    runs: list[Run]
    weights: Weights | None
    norm: Normalization
    depth: int | None
    rrf_k: float
    seed: int
    name: str

    def combine(self, rule: Callable[[list[float]], float]) -> Run:
        """Normalise every run's lists, collect each document's scores, reduce by ``rule``."""
        lists = [normalize_lists(run.as_dict(), self.norm, self.depth) for run in self.runs]
        names = [run.name for run in self.runs]
        return combine(collect_lists(names, lists, self.weights), rule, self.name)


def _combsum(r: _Request) -> Run:
    return r.combine(combsum_rule)


def _weighted(r: _Request) -> Run:
    if r.weights is None:
        raise InputDataError("method 'weighted' needs weights ({run name: {query: weight}})")
    return r.combine(combsum_rule)


def _combmnz(r: _Request) -> Run:
    return r.combine(combmnz_rule)


def _combmax(r: _Request) -> Run:
    return r.combine(combmax_rule)


def _wmnz(r: _Request) -> Run:
    lists = [normalize_lists(run.as_dict(), r.norm, r.depth) for run in r.runs]
    return combine_wmnz([run.name for run in r.runs], lists, _needs_weights(r), r.name)


def _wrrf(r: _Request) -> Run:
    return weighted_rrf(r.runs, _needs_weights(r), r.rrf_k, depth=r.depth, name=r.name)


def _needs_weights(r: _Request) -> Weights:
    if r.weights is None:
        raise InputDataError("this method needs weights ({run name: weight})")
    return r.weights


def _rrf(r: _Request) -> Run:
    return rrf(r.runs, r.rrf_k, depth=r.depth, name=r.name)


def _meta(r: _Request) -> Run:
    return meta_fusion(r.runs, depth=r.depth, seed=r.seed, name=r.name)


_FUSERS: dict[FusionMethod, Callable[[_Request], Run]] = {
    FusionMethod.COMBSUM: _combsum,
    FusionMethod.COMBMNZ: _combmnz,
    FusionMethod.COMBMAX: _combmax,
    FusionMethod.RRF: _rrf,
    FusionMethod.META: _meta,
    FusionMethod.WEIGHTED: _weighted,
    FusionMethod.WEIGHTED_MNZ: _wmnz,
    FusionMethod.WEIGHTED_RRF: _wrrf,
}
_TAKES_WEIGHTS = {
    FusionMethod.COMBSUM,
    FusionMethod.WEIGHTED,
    FusionMethod.WEIGHTED_MNZ,
    FusionMethod.WEIGHTED_RRF,
}
NEEDS_WEIGHTS = frozenset(
    {FusionMethod.WEIGHTED, FusionMethod.WEIGHTED_MNZ, FusionMethod.WEIGHTED_RRF}
)
"""The rules that cannot run without ``weights``."""


def fuse(
    runs: Sequence[Run],
    method: FusionMethod | str = FusionMethod.COMBSUM,
    *,
    norm: Normalization | str = Normalization.MINMAX,
    depth: int | None = 100,
    weights: Weights | None = None,
    rrf_k: float = DEFAULT_RRF_K,
    seed: int = 0,
    name: str = "fused",
) -> Run:
    """Fuse runs: cut each at ``depth``, normalise per query, combine.

    Args:
        runs: The runs to fuse (raw scores); not modified. Their order does not matter.
        method: A :class:`FusionMethod` or its value: ``"combsum"``, ``"combmnz"``,
            ``"combmax"``, ``"rrf"``, ``"meta"``, ``"weighted"``, ``"weighted_mnz"``,
            ``"weighted_rrf"``.
        norm: A :class:`~probrank.fusion.normalize.Normalization` or its value, for the
            score-based methods (CombSUM, CombMNZ, CombMAX, weighted, weighted_mnz); RRF,
            weighted_rrf and
            META ignore it.
        depth: Use each list's top ``depth`` documents in trec_eval order; ``None``: all.
        weights: For ``"combsum"`` (optional) and ``"weighted"``, ``"weighted_mnz"``,
            ``"weighted_rrf"``
            (required): ``{run.name: w}`` or ``{run.name: {query_id: w}}``; see
            :mod:`probrank.fusion.weighted` for how each rule uses them. Other methods refuse
            weights.
        rrf_k: RRF's constant ``k``.
        seed: Seed for META's random EM restarts (unused by the default single start).
        name: The fused run's name (and tag).

    Returns:
        The fused run.

    Raises:
        InputDataError: no runs, an unknown method or normalisation, a bad ``depth``,
            weights for a method that takes none, or missing weights.
    """
    fusion = parse_enum(FusionMethod, method, "method")
    normalization = parse_enum(Normalization, norm, "norm")
    depth = check_depth(depth)
    check_runs(runs)
    if weights is not None and fusion not in _TAKES_WEIGHTS:
        raise InputDataError(f"method {fusion.value!r} takes no weights")
    request = _Request(list(runs), weights, normalization, depth, float(rrf_k), seed, name)
    return _FUSERS[fusion](request)
