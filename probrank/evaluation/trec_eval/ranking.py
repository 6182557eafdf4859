"""One topic as trec_eval 10 sees it: its judgements, and its ranking as relevance values.

This is trec_eval's ``te_form_res_rels``: the retrieved documents are sorted by score
(descending, compared as C doubles) with ties broken by docno in descending ``strcmp`` order
(Python compares ``str`` by code point, which is the order of their UTF-8 bytes), cut at ``-M``
depth, and each is given

* its grade, when the qrels judge it with a grade >= 0;
* :data:`UNJUDGED` (-2), when the qrels list it with a negative grade (in the pool, not judged);
* :data:`NOT_IN_POOL` (-1), when the qrels do not list it.

The sort is done with numpy (a stable sort on the negated scores, then each group of tied
scores re-sorted by docno), which is the same total order as trec_eval's ``qsort`` comparator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from itertools import repeat

import numpy as np

__all__ = ["BOGUS_DOCNO", "NOT_IN_POOL", "UNJUDGED", "JudgedTopic", "RankedTopic", "rank_order"]

NOT_IN_POOL = -1
"""Relevance value of a retrieved document the qrels do not list."""
UNJUDGED = -2
"""Relevance value of a retrieved document the qrels list with a negative grade."""
BOGUS_DOCNO = "ceci_nest_pas_un_docno"
"""The one document (score 1.0) that trec_eval 10 ``-c`` ranks for a topic the run lacks."""


class JudgedTopic:
    """One topic's judgements, prepared once for any number of runs.

    A topic whose grades are all negative (nothing judged) or all 0 is valid: it has no
    relevant document. (trec_eval 10 crashes on the first.)

    Args:
        judged: ``doc_id -> grade`` (integers; negative: in the pool but not judged).

    Attributes:
        grades: ``doc_id -> relevance value`` (negative grades mapped to :data:`UNJUDGED`).
        levels: ``grade -> number of documents`` for the grades >= 0.
        positive: Documents with a grade > 0 (trec_eval's ``-c`` ``num_rel`` total).
        top: The highest grade >= 0, or -1 when there is none.
    """

    __slots__ = ("_ideal", "_ideal_dcg", "_num_rel", "grades", "levels", "positive", "top")

    def __init__(self, judged: Mapping[str, int]):
        counts = Counter(judged.values())
        if any(g < 0 for g in counts):
            self.grades: Mapping[str, int] = {
                doc: (g if g >= 0 else UNJUDGED) for doc, g in judged.items()
            }
        else:
            self.grades = judged  # shared, read only
        self.levels = {g: n for g, n in counts.items() if g >= 0}
        self.positive = sum(n for g, n in self.levels.items() if g > 0)
        self.top = max(self.levels, default=-1)
        self._num_rel: dict[int, int] = {}
        self._ideal: np.ndarray | None = None
        self._ideal_dcg: dict[int | None, float] = {}

    def num_rel(self, level: int) -> int:
        """Judged documents with grade >= ``level`` (and >= 0)."""
        value = self._num_rel.get(level)
        if value is None:
            low = max(level, 0)
            value = self._num_rel[level] = sum(n for g, n in self.levels.items() if g >= low)
        return value

    def num_nonrel(self, level: int) -> int:
        """Judged documents with 0 <= grade < ``level``."""
        return sum(n for g, n in self.levels.items() if g < level)

    def ideal_dcg(self, cutoff: int | None, dcg: Callable[[np.ndarray], float]) -> float:
        """``dcg`` of the ideal gains cut at ``cutoff`` (cached per cut-off)."""
        value = self._ideal_dcg.get(cutoff)
        if value is None:
            gains = self.ideal_gains()
            value = self._ideal_dcg[cutoff] = dcg(gains if cutoff is None else gains[:cutoff])
        return value

    def ideal_gains(self) -> np.ndarray:
        """`num_positive` float64: the grades > 0 of all judged documents, highest first."""
        if self._ideal is None:
            gains: list[float] = []
            for grade in sorted((g for g in self.levels if g > 0), reverse=True):
                gains += [float(grade)] * self.levels[grade]
            self._ideal = np.asarray(gains, dtype=np.float64)
        return self._ideal


def rank_order(scores: Mapping[str, float]) -> tuple[list[str], np.ndarray]:
    """The documents of one topic and their trec_eval order.

    Args:
        scores: ``doc_id -> score`` (floats: C doubles).

    Returns:
        ``(docs, order)``: the documents in the mapping's order and `num_docs` int64 indices
        into them, best first (score descending, ties by docno descending).
    """
    docs = list(scores)
    values = np.fromiter(scores.values(), np.float64, len(docs))
    order = np.argsort(-values, kind="stable")
    ranked = values[order]
    ties = (ranked[1:] == ranked[:-1]).nonzero()[0]
    if ties.size:
        order = _break_ties(order, ties, docs)
    return docs, order


def _break_ties(order: np.ndarray, ties: np.ndarray, docs: list[str]) -> np.ndarray:
    """Re-sort each run of equal scores by docno, descending."""
    fixed = order.tolist()
    ends = (np.diff(ties) != 1).nonzero()[0]
    starts = np.concatenate(([0], ends + 1))
    stops = np.concatenate((ends, [ties.size - 1]))
    for first, last in zip(ties[starts].tolist(), (ties[stops] + 2).tolist(), strict=True):
        fixed[first:last] = sorted(fixed[first:last], key=docs.__getitem__, reverse=True)
    return np.asarray(fixed, dtype=np.int64)


class RankedTopic:
    """Relevance values of one topic's retrieved documents in trec_eval order.

    Args:
        judged: The topic's judgements.
        rels: `num_ret` int64 relevance values, best-ranked first.

    Attributes:
        judged: The topic's judgements.
        rels: `num_ret` int64 relevance values, best-ranked first.
        num_ret: The number of documents ranked.
    """

    __slots__ = ("_cumulative", "_relevant", "judged", "num_ret", "rels")

    def __init__(self, judged: JudgedTopic, rels: np.ndarray):
        self.judged = judged
        self.rels = rels
        self.num_ret = int(rels.shape[0])
        self._relevant: dict[int, np.ndarray] = {}
        self._cumulative: dict[int, np.ndarray] = {}

    @classmethod
    def rank(
        cls, judged: JudgedTopic, scores: Mapping[str, float], depth: int | None = None
    ) -> RankedTopic:
        """Order ``scores`` as trec_eval does and look up each document's relevance.

        Args:
            judged: The topic's judgements.
            scores: ``doc_id -> score``.
            depth: trec_eval's ``-M``: keep the top ``depth`` documents.
        """
        docs, order = rank_order(scores)
        if depth is not None and depth < order.size:
            order = order[:depth]
        rels = np.fromiter(map(judged.grades.get, docs, repeat(NOT_IN_POOL)), np.int64, len(docs))
        return cls(judged, rels[order])

    @classmethod
    def missing(cls, judged: JudgedTopic) -> RankedTopic:
        """trec_eval 10 ``-c``'s ranking of a topic the run lacks: :data:`BOGUS_DOCNO` alone."""
        return cls.rank(judged, {BOGUS_DOCNO: 1.0})

    def relevant(self, level: int) -> np.ndarray:
        """`num_ret` bool: judged with a grade >= ``level`` (cached per level)."""
        mask = self._relevant.get(level)
        if mask is None:
            mask = self._relevant[level] = self.rels >= max(level, 0)
        return mask

    def cumulative(self, level: int) -> np.ndarray:
        """`num_ret` int64: relevant documents within the top ``i + 1`` (cached per level)."""
        counts = self._cumulative.get(level)
        if counts is None:
            counts = self._cumulative[level] = self.relevant(level).cumsum(dtype=np.int64)
        return counts

    def num_rel_ret(self, level: int) -> int:
        """Relevant documents retrieved."""
        return int(self.cumulative(level)[-1]) if self.num_ret else 0

    def relevant_within(self, level: int, k: int) -> int:
        """Relevant documents among the top ``min(k, num_ret)``."""
        if not self.num_ret or k <= 0:
            return 0
        return int(self.cumulative(level)[min(k, self.num_ret) - 1])
