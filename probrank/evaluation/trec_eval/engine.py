"""trec_eval 10.0's evaluation loop: which topics are evaluated and how they are averaged.

* Topics are evaluated in the order of their query ids (``strcmp``), as trec_eval does.
* A run topic the qrels lack is ignored.
* A qrels topic the run lacks is left out, as trec_eval 9 does; with ``-c``
  (``all_queries``) it is evaluated as trec_eval 10 does it: as a ranking of one document,
  ``ceci_nest_pas_un_docno`` (which no qrels judge), after which ``num_ret`` and ``unj_k`` are
  set to 0. (Without ``-c``, trec_eval 10.0 stops with "result qid ... not found in qrels"
  when the qrels hold a topic the run lacks, a regression from 9.x that probrank does not
  copy: it evaluates the topics both have.)
* ``all`` values: counts are summed; ``num_rel`` with ``-c`` counts the grades > 0 of every
  qrels topic whatever ``-l`` is; ``gm_map`` is ``exp`` of the mean of ``log(max(AP, 1e-5))``;
  every other measure is the sum over topics, added in topic order, divided by the number of
  topics.
* A topic whose judgements are all non-relevant (grades 0 or negative) is evaluated like any
  other; its relevant-document measures are 0. (trec_eval 10 crashes on a topic whose grades
  are all negative.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from probrank.evaluation.trec_eval.formulas import FORMULAS, MIN_GEO_MEAN, Formula
from probrank.evaluation.trec_eval.names import Aggregate, MeasureSpec
from probrank.evaluation.trec_eval.ranking import JudgedTopic, RankedTopic
from probrank.exceptions import InputDataError

__all__ = ["TopicValues", "TrecEvalEngine", "check_options"]

TopicValues = dict[str, dict[str, float]]
"""``{query_id: {measure name: value}}``."""

_ZEROED_FOR_MISSING = frozenset({"NumRet", "Unjudged"})


def check_options(relevance_level: object, depth: object) -> None:
    """Validate trec_eval's ``-l`` and ``-M``.

    Raises:
        InputDataError: a level that is not an integer >= 0, or a depth that is not a
            positive integer.
    """
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int):
        raise InputDataError(f"relevance level must be an integer >= 0, got {relevance_level!r}")
    if relevance_level < 0:
        raise InputDataError(f"relevance level must be an integer >= 0, got {relevance_level}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise InputDataError(f"depth must be a positive integer, got {depth!r}")


class TrecEvalEngine:
    """Measures prepared once for one set of judgements, applied to any number of runs.

    Args:
        qrels: ``query_id -> {doc_id: grade}``.
        measures: Parsed measures.
        relevance_level: trec_eval's ``-l`` (a measure's ``rel=`` overrides it).
        all_queries: trec_eval's ``-c``.
        depth: trec_eval's ``-M``.

    Raises:
        InputDataError: a bad level or depth, or no measure.
    """

    def __init__(
        self,
        qrels: Mapping[str, Mapping[str, int]],
        measures: Sequence[MeasureSpec],
        *,
        relevance_level: int = 1,
        all_queries: bool = False,
        depth: int | None = None,
    ):
        check_options(relevance_level, depth)
        if not measures:
            raise InputDataError("no measure given")
        self.measures = list(measures)
        self.relevance_level = relevance_level
        self.all_queries = bool(all_queries)
        self.depth = depth
        self._qrels = qrels
        self._order = sorted(qrels)
        self._judged: dict[str, JudgedTopic] = {}
        self._formulas: list[tuple[str, Formula, MeasureSpec, int]] = [
            (m.name, FORMULAS[m.family], m, m.level(relevance_level)) for m in self.measures
        ]
        self._zeroed = [m.name for m in self.measures if m.family in _ZEROED_FOR_MISSING]

    def judged(self, qid: str) -> JudgedTopic:
        """The prepared judgements of one qrels topic (built on first use)."""
        topic = self._judged.get(qid)
        if topic is None:
            topic = self._judged[qid] = JudgedTopic(self._qrels[qid])
        return topic

    def per_query(
        self, run: Mapping[str, Mapping[str, float]], run_name: str = "run"
    ) -> TopicValues:
        """Per-topic values of ``run``, topics in trec_eval's order.

        Raises:
            InputDataError: no topic to evaluate (the run and the qrels share none and
                ``-c`` is off).
        """
        values: TopicValues = {}
        formulas = self._formulas
        for qid in self._order:
            scores = run.get(qid)
            if scores:
                topic = RankedTopic.rank(self.judged(qid), scores, self.depth)
                values[qid] = {name: f(topic, spec, level) for name, f, spec, level in formulas}
            elif self.all_queries:  # absent (an in-memory run may also hold an empty topic)
                topic = RankedTopic.missing(self.judged(qid))
                row = {name: f(topic, spec, level) for name, f, spec, level in formulas}
                row.update(dict.fromkeys(self._zeroed, 0.0))
                values[qid] = row
        if not values:
            raise InputDataError(
                f"run {run_name!r} and the qrels share no query (trec_eval would stop too)"
            )
        return values

    def aggregate(self, values: TopicValues) -> dict[str, float]:
        """trec_eval's ``all`` line from per-topic values (as :meth:`per_query` returns them)."""
        totals: dict[str, float] = {}
        count = len(values)
        rows = list(values.values())
        for spec in self.measures:
            kind = spec.info.aggregate
            name = spec.name
            if kind is Aggregate.NUM_REL and self.all_queries:
                totals[name] = float(sum(self.judged(q).positive for q in self._order))
                continue
            total = 0.0
            if kind is Aggregate.GEOMETRIC:
                for row in rows:
                    total += math.log(max(row[name], MIN_GEO_MEAN))
                totals[name] = math.exp(total / count) if count else 0.0
                continue
            for row in rows:
                total += row[name]
            totals[name] = total / count if kind is Aggregate.MEAN and count else total
        return totals
