"""Evaluation of TREC runs, identical to trec_eval 10.0 in double precision.

Measures are named in ir-measures syntax (``AP``, ``nDCG@10``, ``P(rel=2)@10``,
``RBP(p=0.8)``) or with trec_eval's own names (``map``, ``ndcg_cut_10``, ``P_10``); see
:mod:`probrank.evaluation.trec_eval.names` and ``probrank eval --help`` for the list. Every name
is validated before anything is evaluated.

trec_eval's options map to keyword arguments:

* ``-l LEVEL`` -> ``relevance_level``: measures that take ``rel`` use it unless the name sets it
  (``nDCG`` and ``RBP`` use graded gains and ignore it, as in trec_eval).
* ``-c`` -> ``all_queries``: average over every query of the qrels, a query the run lacks being
  scored as trec_eval 10 scores it. Without it, such a query is left out (trec_eval 10.0 stops
  with an error instead; 9.x left it out).
* ``-M DEPTH`` -> ``depth``: each query's ranking is cut at ``depth`` in trec_eval order.

Documents are ordered as trec_eval orders them: by score as a C double, descending, ties by
docno, descending. The values are those of the trec_eval 10.0 binary, bit for bit (see
:mod:`probrank.evaluation.trec_eval`; the tests compare them with the binary built from
source). Qrels and runs are given as :class:`Qrels` / :class:`Run`, as plain mappings, or as
file paths. This module imports neither torch nor pandas (``evaluate_per_query`` imports pandas
when called).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from probrank.data.trec import OnDuplicate, Qrels, Run
from probrank.evaluation.trec_eval import (
    MeasureSpec,
    TopicValues,
    TrecEvalEngine,
    parse_measure_names,
)
from probrank.evaluation.trec_eval.engine import check_options
from probrank.evaluation.trec_eval.files import RunLike, RunValues

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_MEASURES",
    "Evaluator",
    "QrelsLike",
    "RunLike",
    "RunValues",
    "evaluate",
    "evaluate_many",
    "evaluate_per_query",
    "parse_measures",
    "per_query_values",
]

DEFAULT_MEASURES: tuple[str, ...] = (
    "NumRet",
    "NumRel",
    "NumRelRet",
    "AP",
    "Rprec",
    "Bpref",
    "RR",
    "P@5",
    "P@10",
    "P@100",
    "R@100",
    "nDCG@10",
)
"""trec_eval's headline measures plus nDCG@10 and R@100."""


def parse_measures(names: Iterable[str] | str) -> list[MeasureSpec]:
    """Parse and validate measure names (either spelling).

    Raises:
        InputDataError: no name, an unknown name, or a bad cut-off or parameter.
    """
    return parse_measure_names(names)


QrelsLike = Qrels | Mapping[str, Mapping[str, int]] | str | os.PathLike[str]
"""Judgements: a :class:`Qrels`, a mapping ``query_id -> {doc_id: grade}`` or a file path."""


def _as_qrels(qrels: QrelsLike) -> Qrels:
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, Mapping):
        return Qrels(qrels)
    return Qrels.read(qrels)


def _as_run(run: RunLike) -> Run:
    if isinstance(run, Run):
        return run
    if isinstance(run, Mapping):
        return Run(run)
    return Run.read(run)


class Evaluator:
    """Measures prepared once for one set of judgements, then applied to any number of runs.

    Args:
        qrels: Judgements (a :class:`Qrels`, a mapping or a path).
        measures: Measure names.
        relevance_level: trec_eval ``-l`` (default 1).
        all_queries: trec_eval ``-c``.
        depth: trec_eval ``-M``.

    Raises:
        InputDataError: a bad measure name, level or depth (before anything is evaluated).
    """

    def __init__(
        self,
        qrels: QrelsLike,
        measures: Sequence[str] | str = DEFAULT_MEASURES,
        *,
        relevance_level: int | None = None,
        all_queries: bool = False,
        depth: int | None = None,
    ):
        self.measures = parse_measures(measures)
        level = 1 if relevance_level is None else relevance_level
        check_options(level, depth)  # before a possibly large qrels file is read
        self.qrels = _as_qrels(qrels)
        self.relevance_level = level
        self.all_queries = all_queries
        self.depth = depth
        self._engine = TrecEvalEngine(
            self.qrels.as_dict(),
            self.measures,
            relevance_level=level,
            all_queries=all_queries,
            depth=depth,
        )

    @property
    def names(self) -> list[str]:
        """The measure names, in the order given (a bare trec_eval family expanded)."""
        return [m.name for m in self.measures]

    def is_count(self, name: str) -> bool:
        """Whether the measure ``name`` is a count (``num_ret``, ...), printed as an integer.

        Raises:
            KeyError: no measure of that name.
        """
        for spec in self.measures:
            if spec.name == name:
                return spec.info.is_count
        raise KeyError(name)

    def per_query(self, run: RunLike) -> TopicValues:
        """``{query_id: {measure name: value}}``, queries in trec_eval's order (sorted ids).

        Raises:
            InputDataError: the run and the qrels share no query (and ``all_queries`` is off).
        """
        run = _as_run(run)
        return self._engine.per_query(run.as_dict(), run.name)

    def aggregate(self, values: TopicValues) -> dict[str, float]:
        """trec_eval's ``all`` line from per-query values."""
        return self._engine.aggregate(values)

    def evaluate_many(
        self,
        runs: Iterable[RunLike],
        *,
        on_duplicate: OnDuplicate | str = OnDuplicate.ERROR,
        threads: int | None = None,
    ) -> list[RunValues]:
        """Per-query and ``all`` values of many runs, evaluated together.

        Run files are read with the compiled reader
        (:func:`~probrank.data.trec_columns.read_run_columns`), several at a time on
        ``threads`` threads, and every ranking of a group of files is ordered and evaluated
        at once; a file that reader does not vouch for is read by :meth:`Run.read`, which
        words any error. The values are those of :meth:`per_query` and :meth:`aggregate`.

        Args:
            runs: Runs: :class:`Run` objects, mappings or file paths.
            on_duplicate: For files: what to do with a (query, document) pair seen twice.
            threads: Files read at once; default: the process's thread count
                (``--threads``, ``$PROBRANK_THREADS`` or ``$OMP_NUM_THREADS``, else the CPUs).

        Raises:
            InputDataError: a file that cannot be read (the first, in the given order; before
                any run is evaluated), or a run that shares no query with the qrels.
        """
        from probrank.evaluation.trec_eval.files import evaluate_many

        return evaluate_many(self._engine, list(runs), on_duplicate, threads)

    def __call__(self, run: RunLike) -> dict[str, float]:
        """Aggregate measure values of ``run``."""
        return self.aggregate(self.per_query(run))


def per_query_values(
    qrels: QrelsLike,
    run: RunLike,
    measures: Sequence[str] | str = DEFAULT_MEASURES,
    *,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
) -> tuple[TopicValues, list[MeasureSpec]]:
    """Per-query values ``{query_id: {measure name: value}}`` and the parsed measures.

    Arguments are those of :func:`evaluate`.
    """
    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    return evaluator.per_query(run), evaluator.measures


def evaluate(
    qrels: QrelsLike,
    run: RunLike,
    measures: Sequence[str] | str = DEFAULT_MEASURES,
    *,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
) -> dict[str, float]:
    """Aggregate measure values of a run, as trec_eval's ``all`` lines.

    To evaluate many runs against the same qrels, build an :class:`Evaluator` once instead.

    Args:
        qrels: Judgements (a :class:`Qrels`, a mapping or a path).
        run: The run (a :class:`Run`, a mapping or a path).
        measures: Measure names, e.g. ``["nDCG@10", "P@5", "AP"]`` or ``["ndcg_cut_10", "map"]``.
        relevance_level: trec_eval ``-l``.
        all_queries: trec_eval ``-c``.
        depth: trec_eval ``-M``.

    Returns:
        ``{measure name: value}``; counts (``NumRet``, ``NumRel``, ...) are summed, the rest
        averaged over queries.
    """
    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    return evaluator(run)


def evaluate_many(
    qrels: QrelsLike,
    runs: Iterable[RunLike],
    measures: Sequence[str] | str = DEFAULT_MEASURES,
    *,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
    on_duplicate: OnDuplicate | str = OnDuplicate.ERROR,
) -> list[dict[str, float]]:
    """Aggregate measure values of many runs (one dict per run, in order), evaluated
    together (:meth:`Evaluator.evaluate_many`).

    Arguments are those of :func:`evaluate`; ``on_duplicate`` applies to run files.
    """
    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    return [v.totals for v in evaluator.evaluate_many(runs, on_duplicate=on_duplicate)]


def evaluate_per_query(
    qrels: QrelsLike,
    run: RunLike,
    measures: Sequence[str] | str = DEFAULT_MEASURES,
    *,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
) -> pd.DataFrame:
    """Per-query measure values as a DataFrame (index ``query_id``, one column per measure).

    Arguments are those of :func:`evaluate`.
    """
    import pandas as pd

    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    frame = pd.DataFrame.from_dict(
        evaluator.per_query(run), orient="index", columns=evaluator.names
    )
    frame.index.name = "query_id"
    return frame
