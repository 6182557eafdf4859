"""The base of the fusion methods trained on judgements, and the per-rank methods' machinery.

A trained fuser is fitted on runs and the judgements of training topics, then fuses the same
runs (matched by name) on any topics::

    model = ProbFuse(segments=25).fit(train_runs, qrels)   # -> self
    fused = model.fuse(test_runs)                            # a probrank.data.Run

as :class:`~probrank.models.qlfusion.QLFusion` does. The probabilistic methods (ProbFuse,
SegFuse, SlideFuse, PosFuse, BayesFuse, MAPFuse) learn, per run, how likely the document at
each rank is to be relevant, and score a document by that estimate; they are
:class:`PositionalFusion` subclasses, one per file, and follow ranx's implementations.

Conventions shared by all of them:

* Lists are each run's top ``depth`` documents of a topic in trec_eval order (score
  descending, ties by docno descending); ranks are positions in that order. ranx sorts with an
  unstable sort, so on tied scores its ranks (and everything that depends on them) can differ.
* Training topics are the topics of the qrels that at least one run retrieved. A document is
  relevant when its grade is at least ``relevance_level`` (1: trec_eval's default, ranx's
  ``rel_lvl``); an unjudged document is not relevant. A run that lacks a training topic
  contributes an empty list (no relevant document anywhere).
* A document's fused score sums its per-run scores over the runs that retrieved it (exactly
  rounded, :func:`math.fsum`), as ranx's ``comb_sum`` does; BayesFuse adds its own term for
  the runs that did not.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import check_runs, collect_lists, combine, combsum_rule, query_order
from probrank.fusion.normalize import check_depth, top_documents

__all__ = [
    "HitListFusion",
    "PositionalFusion",
    "TrainedFusion",
    "check_positive",
    "hit_lists",
    "training_topics",
]


def check_positive(name: str, value: object) -> int:
    """``value`` if it is a positive ``int``; else :class:`InputDataError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputDataError(f"{name} must be a positive integer, got {value!r}")
    return value


def training_topics(runs: Sequence[Run], qrels: Qrels) -> list[str]:
    """Topics of ``qrels`` that at least one run retrieved a document for, in natural order.

    Raises:
        InputDataError: ``qrels`` is not a :class:`Qrels`, or no such topic exists.
    """
    if not isinstance(qrels, Qrels):
        raise InputDataError(f"qrels must be a probrank.data.Qrels, got {type(qrels)!r}")
    judged = qrels.as_dict()
    topics = query_order(
        q for run in runs for q, docs in run.as_dict().items() if docs and q in judged
    )
    if not topics:
        raise InputDataError("the runs and the qrels share no topic to train on")
    return topics


def hit_lists(
    run: Run, qrels: Qrels, topics: Sequence[str], depth: int | None, relevance_level: int = 1
) -> list[NDArray[np.float64]]:
    """Per topic, the run's top ``depth`` list as 0/1 relevance, best first.

    Args:
        run: The run.
        qrels: Judgements.
        topics: `Q` topic ids.
        depth: List length (``None``: whole lists).
        relevance_level: Lowest grade counted as relevant.

    Returns:
        `Q` arrays; ``out[q][i]`` is 1.0 if the document at rank ``i + 1`` is relevant; an empty
        array for a topic the run lacks.
    """
    judged, lists = qrels.as_dict(), run.as_dict()
    out = []
    for qid in topics:
        grades = judged.get(qid, {})
        ranked = top_documents(lists.get(qid, {}), depth)
        out.append(
            np.array([grades.get(d, 0) >= relevance_level for d, _ in ranked], dtype=np.float64)
        )
    return out


class TrainedFusion(ABC):
    """A fusion method fitted on runs and qrels: ``fit(runs, qrels) -> self``, ``fuse(runs)``.

    Args:
        depth: Documents per list used for training and fusion (``None``: all).
        relevance_level: Lowest grade counted as relevant in training.
    """

    method: str = "trained"
    """The method's name: its value in :class:`~probrank.fusion.learned.LearnedMethod`."""

    def __init__(self, *, depth: int | None = 100, relevance_level: int = 1) -> None:
        self.depth = check_depth(depth)
        if isinstance(relevance_level, bool) or not isinstance(relevance_level, int):
            raise InputDataError(f"relevance_level must be an integer, got {relevance_level!r}")
        self.relevance_level = relevance_level
        self._run_names: tuple[str, ...] = ()
        self._topics: tuple[str, ...] = ()

    @property
    def fitted(self) -> bool:
        """Whether :meth:`fit` has run."""
        return bool(self._run_names)

    @property
    def run_names(self) -> tuple[str, ...]:
        """The names of the runs the model was fitted on."""
        self._require_fitted()
        return self._run_names

    @property
    def training_topics(self) -> tuple[str, ...]:
        """The topics the model was fitted on."""
        self._require_fitted()
        return self._topics

    def fit(self, runs: Sequence[Run], qrels: Qrels) -> TrainedFusion:
        """Fit on the topics of ``qrels`` that the runs retrieved.

        Args:
            runs: The `R` runs (distinct names); not modified.
            qrels: Judgements of the training topics.

        Returns:
            ``self``.

        Raises:
            InputDataError: no runs, duplicate run names, or no topic shared with ``qrels``.
        """
        check_runs(runs)
        names = _unique_names(runs)
        topics = training_topics(runs, qrels)
        self._fit(list(runs), qrels, topics)
        self._run_names, self._topics = names, tuple(topics)
        return self

    def fuse(self, runs: Sequence[Run], *, name: str | None = None) -> Run:
        """Fuse ``runs`` (matched to the fitted runs by name) on every topic they retrieved.

        Args:
            runs: The fitted runs, on any topics; not modified.
            name: The fused run's name and tag (default: the method's name).

        Returns:
            The fused run.

        Raises:
            InputDataError: not fitted, or runs that are not the fitted ones.
        """
        ordered = self._ordered(runs)
        return self._fuse(ordered, self.method if name is None else name)

    @abstractmethod
    def _fit(self, runs: list[Run], qrels: Qrels, topics: list[str]) -> None:
        """Learn from ``runs`` (in input order) on ``topics``."""

    @abstractmethod
    def _fuse(self, runs: list[Run], name: str) -> Run:
        """Fuse ``runs``, given in the fitted order."""

    def _require_fitted(self) -> None:
        if not self._run_names:
            raise InputDataError(f"{type(self).__name__} is not fitted: call fit(runs, qrels)")

    def _ordered(self, runs: Sequence[Run]) -> list[Run]:
        """``runs`` in the fitted order, matched by name."""
        self._require_fitted()
        check_runs(runs)
        by_name = dict(zip(_unique_names(runs), runs, strict=True))
        unknown = sorted(set(by_name) - set(self._run_names))
        missing = [n for n in self._run_names if n not in by_name]
        if unknown or missing:
            raise InputDataError(
                f"{type(self).__name__} was fitted on runs {list(self._run_names)}; got unknown "
                f"runs {unknown} and lacks {missing} (runs are matched by name)"
            )
        return [by_name[n] for n in self._run_names]

    def __repr__(self) -> str:
        fitted = f"runs={list(self._run_names)}" if self._run_names else "unfitted"
        return f"{type(self).__name__}({fitted}, depth={self.depth})"


class PositionalFusion(TrainedFusion):
    """A method that scores each document from its rank in each list (and, for SegFuse, its
    normalised score) with one learned array per run, and sums the runs' contributions.

    Subclasses implement :meth:`score_list` and ``_fit`` (which fills ``self._params``);
    :class:`HitListFusion` fits from the training hit lists.
    """

    def __init__(self, *, depth: int | None = 100, relevance_level: int = 1) -> None:
        super().__init__(depth=depth, relevance_level=relevance_level)
        self._params: dict[str, NDArray[np.float64]] = {}

    @property
    def params(self) -> dict[str, NDArray[np.float64]]:
        """The learned per-run arrays ``{run name: array}`` (copies)."""
        self._require_fitted()
        return {name: value.copy() for name, value in self._params.items()}

    def set_params(self, params: Mapping[str, Any]) -> PositionalFusion:
        """Use given per-run arrays instead of fitting (e.g. saved from :attr:`params`).

        Args:
            params: ``{run name: array}``, finite 1-d arrays.

        Returns:
            ``self``, fitted on those run names.

        Raises:
            InputDataError: no runs, or an array that is not finite and 1-d.
        """
        if not params:
            raise InputDataError("params must name at least one run")
        arrays = {}
        for run_name, value in params.items():
            array = np.array(value, dtype=np.float64)
            if array.ndim != 1 or not np.isfinite(array).all():
                raise InputDataError(f"params of run {run_name!r} must be a finite 1-d array")
            arrays[str(run_name)] = array
        self._params = arrays
        self._run_names = tuple(arrays)
        self._topics = ()
        return self

    @abstractmethod
    def score_list(self, params: NDArray[np.float64], scores: Sequence[float]) -> list[float]:
        """Fused-score contributions of one list.

        Args:
            params: The run's learned array.
            scores: The list's `n` raw scores in trec_eval order (best first).

        Returns:
            `n` contributions in the same order.
        """

    def _scored_lists(self, run: Run) -> dict[str, dict[str, float]]:
        params = self._params[run.name]
        out: dict[str, dict[str, float]] = {}
        for qid, docs in run.as_dict().items():
            ranked = top_documents(docs, self.depth)
            values = self.score_list(params, [s for _, s in ranked])
            out[qid] = {doc: v for (doc, _), v in zip(ranked, values, strict=True)}
        return out

    def _fuse(self, runs: list[Run], name: str) -> Run:
        lists = [self._scored_lists(run) for run in runs]
        return combine(collect_lists([r.name for r in runs], lists), combsum_rule, name)


class HitListFusion(PositionalFusion):
    """A :class:`PositionalFusion` whose per-run array is a function of the run's training hit
    lists (:func:`hit_lists`): subclasses implement :meth:`estimate`."""

    @abstractmethod
    def estimate(self, hits: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
        """One run's learned array from its training hit lists.

        Args:
            hits: `Q` 0/1 arrays, one per training topic (see :func:`hit_lists`).

        Returns:
            The run's array.
        """

    def _fit(self, runs: list[Run], qrels: Qrels, topics: list[str]) -> None:
        self._params = {
            run.name: self.estimate(hit_lists(run, qrels, topics, self.depth, self.relevance_level))
            for run in runs
        }


def _unique_names(runs: Sequence[Run]) -> tuple[str, ...]:
    names = tuple(run.name for run in runs)
    if len(set(names)) != len(names):
        raise InputDataError(f"run names must be distinct, got {list(names)}")
    return names
