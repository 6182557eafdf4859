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
from typing import TYPE_CHECKING

import numpy as np

from probrank.evaluation.trec_eval.formulas import FORMULAS, MIN_GEO_MEAN, Formula
from probrank.evaluation.trec_eval.names import Aggregate, MeasureSpec
from probrank.evaluation.trec_eval.ranking import JudgedTopic, RankedTopic
from probrank.evaluation.trec_eval.rows import ranked_chunks
from probrank.evaluation.trec_eval.vectorised import row_values
from probrank.exceptions import InputDataError

if TYPE_CHECKING:
    from probrank.data.trec_columns import ColumnBatch, RunColumns
    from probrank.evaluation.trec_eval.batch import QrelsIndex

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
        self._missing_rows: dict[str, dict[str, float]] = {}
        self._index: QrelsIndex | None = None

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
        return self.per_query_many([run], [run_name])[0]

    def per_query_many(
        self, runs: Sequence[Mapping[str, Mapping[str, float]]], names: Sequence[str]
    ) -> list[TopicValues]:
        """Per-topic values of each run (as :meth:`per_query`), every ranking of every run
        evaluated at once (:mod:`~probrank.evaluation.trec_eval.vectorised`).

        Args:
            runs: ``query_id -> {doc_id: score}`` mappings.
            names: The runs' names (for messages).

        Raises:
            InputDataError: a run that shares no topic with the qrels (and ``-c`` is off).
        """
        codes: list[np.ndarray] = []
        pieces: list[np.ndarray] = []
        for run in runs:
            present: list[int] = []
            for code, qid in enumerate(self._order):
                scores = run.get(qid)
                if scores:  # an in-memory run may hold an empty topic: absent
                    pieces.append(RankedTopic.rank(self.judged(qid), scores, self.depth).rels)
                    present.append(code)
            codes.append(np.asarray(present, dtype=np.int64))
        num_ret = np.fromiter(map(len, pieces), np.int64, len(pieces))
        flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        return self.tables(codes, flat, num_ret, names)

    def tables(
        self,
        codes: Sequence[np.ndarray],
        flat: np.ndarray,
        num_ret: np.ndarray,
        names: Sequence[str],
    ) -> list[TopicValues]:
        """Per-topic values of runs given as rankings of relevance values.

        Args:
            codes: For each run, the `num_topics` int64 indices (ascending) into the qrels
                topics in trec_eval's order of the topics it ranks.
            flat: `sum(num_ret)` int64 relevance values of every ranking, run after run and
                topic after topic, best first (see :class:`RankedTopic`).
            num_ret: `sum(num_topics)` int64 ranking lengths.
            names: The runs' names (for messages).

        Raises:
            InputDataError: a run that shares no topic with the qrels (and ``-c`` is off).
        """
        judged = [self.judged(self._order[c]) for run in codes for c in run.tolist()]
        names_ = [name for name, *_ in self._formulas]
        matrix = np.zeros((len(self._formulas), num_ret.size))
        for rows, chunk in ranked_chunks(flat, num_ret, judged):
            for m, (_, _, spec, level) in enumerate(self._formulas):
                matrix[m, rows] = row_values(chunk, spec, level)
        # each ranking's values, as a tuple (empty tuples when no measure has a formula)
        per_ranking: list[tuple[float, ...]] = (
            list(zip(*matrix.tolist(), strict=True)) if self._formulas else [()] * num_ret.size
        )
        tables: list[TopicValues] = []
        start = 0
        for run_codes, run_name in zip(codes, names, strict=True):
            present = run_codes.tolist()
            values: TopicValues = {}
            if self.all_queries:
                where = dict(zip(present, range(start, start + len(present)), strict=True))
                for code, qid in enumerate(self._order):
                    row = where.get(code)
                    if row is None:
                        values[qid] = dict(self._missing(qid))
                    else:
                        values[qid] = dict(zip(names_, per_ranking[row], strict=True))
            else:
                order = self._order
                for row, code in enumerate(present, start):
                    values[order[code]] = dict(zip(names_, per_ranking[row], strict=True))
            start += len(present)
            if not values:
                raise InputDataError(
                    f"run {run_name!r} and the qrels share no query (trec_eval would stop too)"
                )
            tables.append(values)
        return tables

    def per_query_columns(self, runs: Sequence[RunColumns]) -> list[TopicValues]:
        """Per-topic values of runs read as columns
        (:func:`~probrank.data.trec_columns.read_run_columns`), ranked all at once
        (:func:`~probrank.evaluation.trec_eval.batch.rank_columns`).

        Raises:
            InputDataError: a run that shares no topic with the qrels (and ``-c`` is off).
        """
        from probrank.data.trec_columns import ColumnBatch

        return self.per_query_batch(ColumnBatch.of(list(runs)))

    def per_query_batch(self, batch: ColumnBatch) -> list[TopicValues]:
        """Per-topic values of the runs of a batch read together
        (:func:`~probrank.data.trec_columns.read_batch`), ranked all at once.

        Raises:
            InputDataError: a run that shares no topic with the qrels (and ``-c`` is off).
        """
        from probrank.evaluation.trec_eval.batch import QrelsIndex, rank_columns

        if self._index is None:
            self._index = QrelsIndex(self._order, {q: self.judged(q) for q in self._order})
        codes, flat, num_ret = rank_columns(self._index, batch, self.depth)
        return self.tables(codes, flat, num_ret, [run.name for run in batch.runs])

    def _missing(self, qid: str) -> dict[str, float]:
        """``-c``'s values of a qrels topic the run lacks (the same for every run)."""
        row = self._missing_rows.get(qid)
        if row is None:
            topic = RankedTopic.missing(self.judged(qid))
            row = {name: f(topic, spec, level) for name, f, spec, level in self._formulas}
            row.update(dict.fromkeys(self._zeroed, 0.0))
            self._missing_rows[qid] = row
        return row

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
