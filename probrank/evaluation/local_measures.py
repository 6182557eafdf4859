"""The three measures probrank computes itself instead of through an ir-measures backend.

* ``NumRel``: a count over the qrels. ir-measures' pytrec_eval provider can only pass relevance
  level 1 to it, but trec_eval's ``-l`` changes it.
* ``RBP`` (rank-biased precision, Moffat and Zobel 2008): pytrec_eval has no ``rbp``, and the
  only ir-measures backend that has it (trectools) averages tied scores instead of using
  trec_eval's order, refuses ``rel``, and, evaluated with several ``p`` in one call, uses the
  last ``p`` for all of them (a late-binding closure). The sum below follows trec_eval 10's
  ``rbp``: documents in trec_eval order, gain = grade / the query's highest grade (graded, and
  unaffected by ``-l``); with ``rel=L`` in the name, gain = 1 for grade >= L, else 0.
  trec_eval's own ``rbp`` line is ``RBP(p=0.9)``.
* ``Judged@k``: ir-measures' ``judged`` provider breaks score ties by docno ascending and counts
  every qrels line as judged; trec_eval breaks ties by docno descending and treats a negative
  grade as "not in the pool" (unjudged). Here ``Judged@k`` = 1 - trec_eval's ``unj_k``: the
  fraction of the top min(k, retrieved) documents (trec_eval order) with a grade >= 0.
"""

from __future__ import annotations

from collections.abc import Callable

from ir_measures import Measure
from ir_measures.providers.base import NOT_PROVIDED

from probrank.data.trec import trec_order

__all__ = ["LOCAL_MEASURES", "judged_at_k", "num_rel", "rank_biased_precision"]


def num_rel(judged: dict[str, int], scores: dict[str, float] | None, measure: Measure) -> float:
    """Documents with grade >= ``rel`` (default 1) in one query's judgements."""
    level = measure["rel"] if "rel" in measure.params else 1
    return float(sum(1 for g in judged.values() if g >= level))


def rank_biased_precision(
    judged: dict[str, int], scores: dict[str, float] | None, measure: Measure
) -> float:
    """RBP = (1 - p) sum_i gain_i p^(i - 1) over one query's ranking (0 for no ranking)."""
    if not scores:
        return 0.0
    p = float(measure["p"])
    rel = measure.params.get("rel", NOT_PROVIDED)
    cutoff = measure.params.get("cutoff", NOT_PROVIDED)
    ranking = trec_order(scores)
    if cutoff is not NOT_PROVIDED:
        ranking = ranking[: int(cutoff)]
    if rel is NOT_PROVIDED:
        top = max((g for g in judged.values()), default=0)
        if top <= 0:
            return 0.0

        def gain(grade: int) -> float:
            return max(grade, 0) / top

    else:

        def gain(grade: int) -> float:
            return 1.0 if grade >= rel else 0.0

    total = 0.0
    weight = 1.0 - p
    for doc, _ in ranking:
        grade = judged.get(doc)
        if grade is not None:
            total += weight * gain(grade)
        weight *= p
    return total


def judged_at_k(judged: dict[str, int], scores: dict[str, float] | None, measure: Measure) -> float:
    """Fraction of the top k documents judged with a non-negative grade (0 for no ranking)."""
    if not scores:
        return 0.0
    cutoff = measure.params.get("cutoff", NOT_PROVIDED)
    ranking = trec_order(scores)
    if cutoff is not NOT_PROVIDED:
        ranking = ranking[: int(cutoff)]
    return sum(1 for doc, _ in ranking if judged.get(doc, -1) >= 0) / len(ranking)


LOCAL_MEASURES: dict[str, Callable[[dict[str, int], dict[str, float] | None, Measure], float]] = {
    "NumRel": num_rel,
    "RBP": rank_biased_precision,
    "Judged": judged_at_k,
}
"""Measure NAME -> ``fn(judgements, scores or None, measure) -> value`` for one query."""

# Measures whose value does not follow trec_eval's -l (trec_eval's rbp ignores it).
IGNORE_RELEVANCE_LEVEL = frozenset({"RBP"})
