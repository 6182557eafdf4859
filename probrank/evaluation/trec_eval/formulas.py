"""trec_eval 10.0's per-topic measures, one function each, in double precision.

Each function takes one topic's :class:`~probrank.evaluation.trec_eval.ranking.RankedTopic`,
the parsed :class:`~probrank.evaluation.trec_eval.names.MeasureSpec` and the relevance level
(trec_eval's ``-l``, or the name's ``rel=``) and returns the value trec_eval computes for that
topic (file ``m_<name>.c`` of trec_eval 10.0). The same operations run in the same order as in
the C loops: sums are accumulated term by term in rank order (``np.add.accumulate``, or a
Python loop for short arrays, adds sequentially; ``np.sum`` would add pairwise and could differ
in the last bit), each term is formed as the C expression forms it, and logarithms come from
the C library through :mod:`math`. The values therefore equal trec_eval's to the last bit, not
only to the printed digits (the tests check both against the trec_eval binary).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from probrank.evaluation.trec_eval.names import MeasureSpec
from probrank.evaluation.trec_eval.ranking import NOT_IN_POOL, UNJUDGED, RankedTopic

__all__ = ["FORMULAS", "INFAP_EPSILON", "MIN_GEO_MEAN", "lround"]

MIN_GEO_MEAN = 0.00001
"""trec_eval's floor under a value before its logarithm is taken (``gm_map``)."""
INFAP_EPSILON = 0.00001
"""trec_eval's smoothing constant of infAP."""

Formula = Callable[[RankedTopic, MeasureSpec, int], float]

_LOG2 = np.empty(0, dtype=np.float64)
_SHORT = 24  # below this length a Python loop sums faster than numpy (same additions)


def _log2_ranks(n: int) -> np.ndarray:
    """`n` float64: ``log2(i + 2)`` for ranks ``i = 0 .. n - 1``, from the C library."""
    global _LOG2
    if _LOG2.size < n:
        size = max(n, 2 * _LOG2.size, 1024)
        _LOG2 = np.asarray([math.log2(i + 2) for i in range(size)], dtype=np.float64)
    return _LOG2[:n]


def _sequential_sum(terms: np.ndarray) -> float:
    """Left-to-right sum of `n` float64 ``terms`` (C's ``sum += term`` loop)."""
    if terms.size <= _SHORT:
        total = 0.0
        for term in terms.tolist():
            total += term
        return total
    return float(np.add.accumulate(terms)[-1])


def lround(x: float) -> int:
    """C's ``lround`` for ``x >= 0``: round half away from zero."""
    floor = math.floor(x)
    return int(floor) + (1 if x - floor >= 0.5 else 0)


def num_q(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``num_q``: 1 per evaluated topic."""
    return 1.0


def num_ret(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``num_ret``: documents ranked (after ``-M``)."""
    return float(topic.num_ret)


def num_rel(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``num_rel``: judged documents with grade >= level."""
    return float(topic.judged.num_rel(level))


def num_rel_ret(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``num_rel_ret``: relevant documents ranked."""
    return float(topic.num_rel_ret(level))


def average_precision(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``map`` and ``map_cut_k``: ``sum(rel_so_far / rank)`` over the relevant ranks (within
    the cut-off), divided by all relevant documents. Also ``gm_map``'s per-topic value."""
    relevant = topic.relevant(level)
    if spec.cutoff is not None:
        relevant = relevant[: spec.cutoff]
    ranks = relevant.nonzero()[0]
    if not ranks.size:
        return 0.0
    terms = topic.cumulative(level)[ranks] / (ranks + 1.0)
    return _sequential_sum(terms) / topic.judged.num_rel(level)


def r_precision(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``Rprec``: relevant documents in the top R over R (R = all relevant)."""
    relevant = topic.judged.num_rel(level)
    if min(topic.num_ret, relevant) == 0:
        return 0.0
    return topic.relevant_within(level, relevant) / relevant


def bpref(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``bpref``: each retrieved relevant document scores ``1 - min(n, R) / min(N, R)``, ``n``
    the judged non-relevant documents above it, ``N`` all judged non-relevant, ``R`` all
    relevant; the sum is divided by R."""
    relevant = topic.judged.num_rel(level)
    judged = topic.rels[topic.rels >= 0]  # judged documents only, in rank order
    is_rel = judged >= max(level, 0)
    if not is_rel.any():
        return 0.0
    nonrel_above = np.cumsum(~is_rel)[is_rel]
    denominator = float(min(topic.judged.num_nonrel(level), relevant))
    with np.errstate(divide="ignore", invalid="ignore"):
        fractions = 1.0 - np.minimum(nonrel_above, relevant) / denominator
    terms = np.where(nonrel_above > 0, fractions, 1.0)
    return _sequential_sum(terms) / relevant


def inferred_ap(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``infAP`` (Yilmaz and Aslam 2006) with trec_eval's epsilon smoothing."""
    rels = topic.rels
    is_rel = rels >= max(level, 0)
    ranks = is_rel.nonzero()[0]
    if not ranks.size:
        return 0.0
    judged_nonrel = (rels >= 0) & ~is_rel
    rel_before = (np.cumsum(is_rel) - 1)[ranks]  # rel_so_far - 1 at a relevant rank
    nonrel = np.cumsum(judged_nonrel)[ranks]
    unjudged = np.cumsum(rels == UNJUDGED)[ranks]
    j = ranks.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_before + nonrel + unjudged) / j) * (
            (rel_before + INFAP_EPSILON) / ((rel_before + nonrel) + 2 * INFAP_EPSILON)
        )
    terms = np.where(ranks == 0, 1.0, terms)
    return _sequential_sum(terms) / topic.judged.num_rel(level)


def reciprocal_rank(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``recip_rank``: 1 / rank of the first relevant document (within ``@k`` if given)."""
    relevant = topic.relevant(level)
    if spec.cutoff is not None:
        relevant = relevant[: spec.cutoff]
    first = int(np.argmax(relevant)) if relevant.size else 0
    return 1.0 / (first + 1.0) if relevant.size and relevant[first] else 0.0


def interpolated_precision(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``iprec_at_recall``: the highest precision at or below the rank where the recall level
    is reached. trec_eval 10 turns the level into a number of relevant documents with
    ``lround(level * num_rel)`` (trec_eval 9, and pytrec_eval, truncated ``level * num_rel +
    0.9``); the precision at rank i is ``rel_so_far / i``."""
    recall = spec.recall if spec.recall is not None else 0.0
    cut = lround(recall * topic.judged.num_rel(level))
    rel_ret = topic.num_rel_ret(level)
    if cut > rel_ret or rel_ret == 0:
        return 0.0
    counts = topic.cumulative(level)
    # 0-based rank of the max(cut, 1)-th relevant document
    start = int(np.searchsorted(counts, max(cut, 1)))
    tail = counts[start:] / np.arange(start + 1.0, counts.size + 1.0)
    return float(tail.max())


def precision(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``P_k``: relevant documents in the top k over k."""
    k = int(spec.cutoff or 0)
    return topic.relevant_within(level, k) / k


def recall(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``recall_k``: relevant documents in the top k over all relevant."""
    relevant = topic.judged.num_rel(level)
    if relevant == 0:
        return 0.0
    return topic.relevant_within(level, int(spec.cutoff or 0)) / relevant


def success(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``success_k``: 1 if a relevant document is in the top k."""
    return 1.0 if topic.relevant_within(level, int(spec.cutoff or 0)) else 0.0


def ndcg(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``ndcg`` and ``ndcg_cut_k``: DCG with gain = grade and discount ``log2(rank + 1)``
    over the ideal DCG of all judged grades, both cut at k when given. Ignores ``-l``."""
    ideal_dcg = topic.judged.ideal_dcg(spec.cutoff, _ideal_dcg)
    if ideal_dcg <= 0.0:
        return 0.0
    rels = topic.rels if spec.cutoff is None else topic.rels[: spec.cutoff]
    positive = (rels > 0).nonzero()[0]
    if not positive.size:
        return 0.0
    terms = rels[positive].astype(np.float64) / _log2_ranks(int(positive[-1]) + 1)[positive]
    return _sequential_sum(terms) / ideal_dcg


def _ideal_dcg(gains: np.ndarray) -> float:
    """DCG of `n` float64 ideal gains (highest first)."""
    return _sequential_sum(gains / _log2_ranks(gains.size))


def rank_biased_precision(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``rbp``: ``(1 - p) sum_i gain_i p^i`` with gain = grade / the topic's highest grade
    when that exceeds 1, else grade; ``RBP(rel=L)``: gain 1 for grade >= L. ``p^i`` is formed
    by repeated multiplication, as in C. (trec_eval 10 starts its min/max scan of the gains
    from uninitialised variables; the value here is the one it computes when they start at 0,
    the only well-defined reading, and the one the binary prints on every test run.)"""
    rels = topic.rels
    if spec.rel is not None:
        gains = (rels >= spec.rel).astype(np.float64)
    else:
        top = topic.judged.top
        if top <= 0:
            return 0.0
        gains = np.maximum(rels, 0).astype(np.float64)
        if top > 1:
            gains = gains / float(top)
    nonzero = gains.nonzero()[0]
    if not nonzero.size:
        return 0.0
    weights = np.full(int(nonzero[-1]) + 1, spec.p)
    weights[0] = 1.0
    weights = np.cumprod(weights)
    return (1.0 - spec.p) * _sequential_sum(gains[nonzero] * weights[nonzero])


def set_precision(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``set_P``: relevant retrieved over retrieved."""
    return topic.num_rel_ret(level) / topic.num_ret if topic.num_ret else 0.0


def set_recall(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``set_recall``: relevant retrieved over relevant."""
    relevant = topic.judged.num_rel(level)
    return topic.num_rel_ret(level) / relevant if relevant else 0.0


def set_f(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``set_F``: ``(beta + 1) P R / (beta P + R)``."""
    rel_ret = topic.num_rel_ret(level)
    if not rel_ret:
        return 0.0
    p = rel_ret / topic.num_ret
    r = rel_ret / topic.judged.num_rel(level)
    x = spec.beta
    return (x + 1.0) * p * r / (x * p + r)


def set_average_precision(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``set_map``: ``rel_ret^2 / (num_ret * num_rel)``."""
    relevant = topic.judged.num_rel(level)
    if not (topic.num_ret and relevant):
        return 0.0
    rel_ret = float(topic.num_rel_ret(level))
    return (rel_ret * rel_ret) / (float(topic.num_ret) * float(relevant))


def judged(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``Judged@k``: documents in the top k with a grade >= 0, over k."""
    k = int(spec.cutoff or 0)
    return int(np.count_nonzero(topic.rels[:k] >= 0)) / k


def unjudged(topic: RankedTopic, spec: MeasureSpec, level: int) -> float:
    """``unj_k``: documents in the top k not in the pool or not judged, over k."""
    k = int(spec.cutoff or 0)
    top = topic.rels[:k]
    return int(np.count_nonzero((top == NOT_IN_POOL) | (top == UNJUDGED))) / k


FORMULAS: dict[str, Formula] = {
    "NumQ": num_q,
    "NumRet": num_ret,
    "NumRel": num_rel,
    "NumRelRet": num_rel_ret,
    "AP": average_precision,
    "GMAP": average_precision,  # the geometric mean is taken over topics
    "Rprec": r_precision,
    "Bpref": bpref,
    "infAP": inferred_ap,
    "RR": reciprocal_rank,
    "IPrec": interpolated_precision,
    "P": precision,
    "R": recall,
    "Success": success,
    "nDCG": ndcg,
    "SetP": set_precision,
    "SetR": set_recall,
    "SetF": set_f,
    "SetAP": set_average_precision,
    "RBP": rank_biased_precision,
    "Judged": judged,
    "Unjudged": unjudged,
}
"""Family name -> per-topic formula."""
