"""The interactive-ranking measures of the paper: matching accuracy and NDCG@k over grades.

A ranking is a sequence of candidate indices, best first; ``grades`` holds every candidate's
graded label (e.g. LiveQA-Med's 1-4). Both measures look only at the candidates of one question.

* Matching accuracy: 1.0 when the top-ranked candidate has the question's maximal grade, else
  0.0 (a tie for the maximal grade counts as a match).
* NDCG@k: gain ``max(grade - 1, 0)`` (grade 1, "incorrect", gains nothing; grades below 1 are
  treated as 1), discount ``1 / log2(rank + 1)`` for 1-based ranks; normalised by the DCG@k of
  the ideal order of all the question's grades. When no candidate has a positive gain the value
  is undefined: NaN with a :class:`~probrank.exceptions.NumericsWarning`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

from probrank.exceptions import InputDataError, NumericsWarning

__all__ = ["matching_accuracy", "ndcg_at_k", "ranking_curves"]


def _check(ranking: Sequence[int], grades: Sequence[float]) -> list[int]:
    n = len(grades)
    order = [int(i) for i in ranking]
    if not order:
        raise InputDataError("ranking is empty")
    if len(set(order)) != len(order):
        raise InputDataError(f"ranking repeats a candidate: {order}")
    bad = [i for i in order if not 0 <= i < n]
    if bad:
        raise InputDataError(f"ranking index {bad[0]} out of range for {n} grades")
    return order


def matching_accuracy(ranking: Sequence[int], grades: Sequence[float]) -> float:
    """1.0 if ``ranking[0]`` has the maximal grade among ``grades``, else 0.0.

    Args:
        ranking: Candidate indices, best first (at least the top one).
        grades: `n` grades of the question's candidates.
    """
    order = _check(ranking, grades)
    return 1.0 if float(grades[order[0]]) == max(float(g) for g in grades) else 0.0


def _dcg(gains: Sequence[float]) -> float:
    return math.fsum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at_k(ranking: Sequence[int], grades: Sequence[float], k: int = 5) -> float:
    """NDCG@k with gain ``max(grade - 1, 0)`` and a log2 discount.

    Args:
        ranking: Candidate indices, best first (the first ``k`` are used).
        grades: `n` grades of the question's candidates.
        k: Cut-off (>= 1).

    Returns:
        NDCG@k in ``[0, 1]``, or NaN (with a warning) when no candidate has a positive gain.
    """
    if k < 1:
        raise InputDataError(f"k must be >= 1, got {k}")
    order = _check(ranking, grades)
    gains = [max(float(g) - 1.0, 0.0) for g in grades]
    ideal = _dcg(sorted(gains, reverse=True)[:k])
    if ideal == 0.0:
        warnings.warn(
            "NDCG undefined: no candidate has a grade above 1", NumericsWarning, stacklevel=2
        )
        return math.nan
    return _dcg([gains[i] for i in order[:k]]) / ideal


def ranking_curves(
    rankings: Sequence[Sequence[int]], grades: Sequence[float], k: int = 5
) -> dict[str, list[float]]:
    """Both measures for each ranking of a sequence (e.g. one per interaction round).

    Returns:
        ``{"accuracy": [...], f"ndcg@{k}": [...]}``, one value per ranking.
    """
    return {
        "accuracy": [matching_accuracy(r, grades) for r in rankings],
        f"ndcg@{k}": [ndcg_at_k(r, grades, k) for r in rankings],
    }
