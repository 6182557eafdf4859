"""Simulated interactive sessions: one cell (posterior x strategy x user noise) over questions.

For each seed an :class:`~probrank.models.InteractiveRanker` is warm-started on MEDIQA 2019
train (early stopping on MEDIQA validation; :mod:`probrank.models.interactive.warmstart`). For
every question of the evaluation set the ranker's session over its candidates is built, a
:class:`~probrank.interactive.users.SimulatedUser` with noise ``t`` answers the pairs a strategy
picks, and after 0, 1, 2, 4, 10 judgements the ranking by posterior mean is scored: matching
accuracy (the top answer has the question's maximal grade) and NDCG@5 (gain grade - 1). Each
seed gives the mean over questions; tables show mean and sd over seeds and the median seconds
per round (pair selection + update, the user's time excluded).

Entry points: :func:`load_experiment_data` and :func:`run_cell`, used by the ``interactive``
protocol (:mod:`~probrank.experiments.interactive.protocol`), its tuning
(:mod:`~probrank.experiments.interactive.tune`), the ``probrank interactive`` command
(:mod:`~probrank.experiments.interactive.commands`) and the demo.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch

from probrank._progress import progress_bar
from probrank.acquisition.select import Strategy
from probrank.data.candidates import CandidateList
from probrank.data.datasets import DatasetName
from probrank.encoders.config import encoder_cache_dir, encoder_from_config
from probrank.exceptions import InputDataError
from probrank.experiments.interactive.config import REPORTED_ROUNDS
from probrank.experiments.interactive.data import (
    Question,
    encode_lists,
    load_lists,
    prepare_questions,
)
from probrank.experiments.interactive.synthetic import synthetic_questions
from probrank.interactive.metrics import ranking_curves
from probrank.interactive.simulate import simulate_session
from probrank.interactive.users import SimulatedUser, simulated_user_seed
from probrank.models.interactive.model import InteractiveRanker
from probrank.models.interactive.settings import InteractiveRankerSettings, PosteriorKind
from probrank.models.interactive.warmstart import WarmStart

__all__ = [
    "REPORTED_ROUNDS",
    "Blocks",
    "Cell",
    "CellResult",
    "ExperimentData",
    "load_experiment_data",
    "merge_cell_results",
    "run_cell",
]

SYNTHETIC = DatasetName.SYNTHETIC.value
"""Data-set name of generated questions (no data files, no encoder)."""


@dataclass(frozen=True)
class Cell:
    """One experimental condition: a posterior, a strategy and the user's noise ``t``."""

    posterior: PosteriorKind
    strategy: Strategy
    noise: float

    @property
    def name(self) -> str:
        return f"{self.posterior.value}+{self.strategy.value} t={self.noise:g}"


@dataclass
class CellResult:
    """Per-seed curves of one cell.

    Attributes:
        accuracy: Per seed, mean matching accuracy over questions after 0..R judgements.
        ndcg: Per seed, mean NDCG@5 after 0..R judgements.
        seconds: Every round's seconds (selection + update), all seeds and questions.
    """

    accuracy: list[list[float]] = field(default_factory=list)
    ndcg: list[list[float]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def mean_curve(self, measure: str) -> list[float]:
        """Mean over seeds per round of ``"accuracy"`` or ``"ndcg@5"``."""
        curves = self.accuracy if measure == "accuracy" else self.ndcg
        return [statistics.fmean(values) for values in zip(*curves, strict=True)]

    @property
    def median_round_seconds(self) -> float:
        return statistics.median(self.seconds) if self.seconds else math.nan

    def to_json(self) -> dict[str, Any]:
        """``{"accuracy": [...], "ndcg@5": [...], "median_round_seconds": x}`` (means)."""
        return {
            "accuracy": self.mean_curve("accuracy"),
            "ndcg@5": self.mean_curve("ndcg@5"),
            "median_round_seconds": self.median_round_seconds,
        }

    def per_seed(self, rounds: Sequence[int]) -> dict[str, list[float]]:
        """``{"acc@r": [per seed], "ndcg@5@r": [...], ...}`` for the given rounds."""
        values: dict[str, list[float]] = {}
        for r in rounds:
            values[f"acc@{r}"] = [curve[r] for curve in self.accuracy]
        for r in rounds:
            values[f"ndcg@5@{r}"] = [curve[r] for curve in self.ndcg]
        return values


Blocks = tuple[list[torch.Tensor], list[tuple[int, ...]]]
"""Features per question and grades per question of a warm-start training or validation set."""


class ExperimentData:
    """Evaluation questions plus the warm-start data (loaded and trained lazily).

    Args:
        questions: The evaluation questions.
        warm_start_data: Returns ``(train, validation)`` blocks; called once, on first need.
        options: Settings (the ``warm_start`` table is used here).
        cache_dir: Warm-start cache folder (None: no cache).
    """

    def __init__(
        self,
        questions: list[Question],
        warm_start_data: Callable[[], tuple[Blocks, Blocks]],
        options: InteractiveRankerSettings,
        cache_dir: str | Path | None,
    ) -> None:
        self.questions = questions
        self._warm_start_data = warm_start_data
        self._blocks: tuple[Blocks, Blocks] | None = None
        self.options = options
        self.cache_dir = cache_dir

    def ranker(
        self,
        seed: int,
        kind: PosteriorKind,
        options: InteractiveRankerSettings,
        strategy: Strategy | str = Strategy.EI,
    ) -> InteractiveRanker:
        """The :class:`~probrank.models.InteractiveRanker` of ``seed``: warm-started (through
        the cache) with what ``kind`` needs (SWAG, ensemble members), unless it needs none."""
        ranker = InteractiveRanker(options.for_cell(kind, strategy, seed))
        if not ranker.settings.needs_warm_start:
            return ranker
        if self._blocks is None:
            self._blocks = self._warm_start_data()
        (train_x, train_g), (val_x, val_g) = self._blocks
        return ranker.fit_features(train_x, train_g, val_x, val_g, cache_dir=self.cache_dir)

    def portable(self, warm_start: bool) -> ExperimentData:
        """A copy another process can take (a Ray task): no encoder inside, the warm-start
        data read and encoded now when ``warm_start`` (it is shared, not recomputed per task).
        The questions and options are the same objects."""
        if warm_start and self._blocks is None:
            self._blocks = self._warm_start_data()
        copy = ExperimentData(
            self.questions,
            functools.partial(_prepared_blocks, self._blocks),
            self.options,
            self.cache_dir,
        )
        copy._blocks = self._blocks
        return copy

    def warm_start(
        self, seed: int, kind: PosteriorKind, options: InteractiveRankerSettings
    ) -> WarmStart:
        """The warm start of ``seed`` with what ``kind`` needs (SWAG, ensemble members)."""
        warm = self.ranker(seed, kind, options).warm_start
        if warm is None:
            raise InputDataError(f"posterior {kind.value!r} uses no warm start")
        return warm


def _prepared_blocks(blocks: tuple[Blocks, Blocks] | None) -> tuple[Blocks, Blocks]:
    """The warm-start data of a :meth:`ExperimentData.portable` copy."""
    if blocks is None:
        raise InputDataError("this copy of the experiment data has no warm-start data")
    return blocks


def merge_cell_results(results: Sequence[CellResult]) -> CellResult:
    """One :class:`CellResult` of several runs of a cell (e.g. one per seed), in order."""
    merged = CellResult()
    for result in results:
        merged.accuracy.extend(result.accuracy)
        merged.ndcg.extend(result.ndcg)
        merged.seconds.extend(result.seconds)
    return merged


def load_experiment_data(
    dataset: str,
    split: str = "test",
    *,
    options: InteractiveRankerSettings | None = None,
    encoder_options: dict[str, Any] | None = None,
    max_questions: int | None = None,
    data_folder: str | None = None,
    config_path: str | Path | None = None,
    question: str | None = None,
    warm_start: bool = True,
) -> ExperimentData:
    """Evaluation questions of ``dataset:split`` and the MEDIQA train/validation warm-start data.

    ``dataset = "synthetic"`` generates everything
    (:mod:`~probrank.experiments.interactive.synthetic`), with ``split`` ignored. A relative
    encoder ``cache_dir`` is resolved against the project root of ``config_path``
    (:func:`~probrank.encoders.config.encoder_cache_dir`), else against the working directory,
    so a config finds the same cache from any folder.

    Every input file is read and checked before the encoder is loaded: the evaluation split and,
    with ``warm_start``, the MEDIQA train and validation files, so that a broken file is an
    error at once, not after minutes of encoding. The warm-start data is encoded (and the
    network trained) only when a ranker first needs it (:meth:`ExperimentData.ranker`).

    Args:
        dataset: ``"liveqa-med"``, ``"mediqa"`` or ``"synthetic"``.
        split: The evaluation split.
        options: Settings (default :class:`InteractiveRankerSettings`).
        encoder_options: The ``[encoder]`` table.
        max_questions: Keep the first this many questions.
        data_folder: The evaluation data set's folder (default: under the shared data folder).
        config_path: The config the options came from (resolves a relative ``cache_dir``).
        question: Keep only the question of this id (a human session): only it is encoded.
        warm_start: Read the warm-start files up front (False, for posteriors that use no warm
            start: they are read only if a ranker needs them after all).

    Raises:
        InputDataError: Unknown data set, split or question, or missing or malformed data.
    """
    options = options or InteractiveRankerSettings()
    if dataset == SYNTHETIC:
        count = max_questions or 30
        questions = _only(synthetic_questions(count, seed=2, prefix="T"), question, dataset)

        def generated() -> tuple[Blocks, Blocks]:
            train = synthetic_questions(60, min_candidates=4, max_candidates=10, seed=0, prefix="A")
            val = synthetic_questions(15, min_candidates=4, max_candidates=10, seed=1, prefix="V")
            return (
                ([q.features for q in train], [q.grades for q in train]),
                ([q.features for q in val], [q.grades for q in val]),
            )

        return ExperimentData(questions, generated, options, None)
    lists = _only(load_lists(dataset, split, folder=data_folder), question, dataset)
    if max_questions:
        lists = lists[:max_questions]
    warm_lists = _warm_start_lists() if warm_start else None  # read before any encoding
    encoder = encoder_from_config(encoder_options, config_path)
    cache = encoder_cache_dir(encoder_options, config_path)  # the warm-start cache too
    questions = prepare_questions(lists, encode_lists(encoder, lists))

    def mediqa() -> tuple[Blocks, Blocks]:
        train, validation = warm_lists if warm_lists is not None else _warm_start_lists()
        return (
            (encode_lists(encoder, train), [tuple(item.grades) for item in train]),
            (encode_lists(encoder, validation), [tuple(item.grades) for item in validation]),
        )

    return ExperimentData(questions, mediqa, options, cache)


def _warm_start_lists() -> tuple[list[CandidateList], list[CandidateList]]:
    """The MEDIQA train and validation lists of the warm start (read and checked, not encoded)."""
    train, validation = (
        load_lists(DatasetName.MEDIQA, role, min_best_grade=0) for role in ("train", "validation")
    )
    return train, validation


_Item = TypeVar("_Item", Question, CandidateList)


def _only(items: list[_Item], question: str | None, dataset: str) -> list[_Item]:
    """All of ``items`` when ``question`` is None, else the one whose ``qid`` it is."""
    if question is None:
        return items
    chosen = [item for item in items if item.qid == question]
    if not chosen:
        example = f" (ids look like {items[0].qid!r})" if items else ""
        raise InputDataError(f"no question {question!r} in {dataset}{example}")
    return chosen[:1]


def run_cell(
    data: ExperimentData,
    cell: Cell,
    *,
    seeds: int = 3,
    rounds: int = 10,
    options: InteractiveRankerSettings | None = None,
    progress: bool = True,
    first_seed: int = 0,
) -> CellResult:
    """Simulate ``cell`` on every question for ``seeds`` seeds.

    Args:
        data: Questions and warm-start data.
        cell: Posterior, strategy, noise.
        seeds: Number of seeds, ``first_seed .. first_seed + seeds - 1`` (warm start, posterior
            samples, user, strategy).
        rounds: Judgements per session.
        options: Settings (default ``data.options``).
        progress: Show a tqdm bar.
        first_seed: The first seed.

    Returns:
        The :class:`CellResult`.
    """
    if seeds < 1 or rounds < 0:
        raise InputDataError(f"need seeds >= 1 and rounds >= 0, got {seeds}, {rounds}")
    options = options or data.options
    result = CellResult()
    bar = progress_bar(
        total=seeds * len(data.questions), desc=cell.name, unit="question", disable=not progress
    )
    for seed in range(first_seed, first_seed + seeds):
        ranker = data.ranker(seed, cell.posterior, options, cell.strategy)
        accuracy, ndcg = [], []
        for question in data.questions:
            session = ranker.session(
                question.query, question.candidates, seed=seed, features=question.features
            )
            user = SimulatedUser(
                question.utilities, cell.noise, simulated_user_seed(seed, question.qid)
            )
            trace = simulate_session(session, user, rounds)
            curves = ranking_curves(trace.rankings, question.grades, k=5)
            accuracy.append(curves["accuracy"])
            ndcg.append(curves["ndcg@5"])
            result.seconds.extend(trace.round_seconds)
            bar.update()
        result.accuracy.append([statistics.fmean(v) for v in zip(*accuracy, strict=True)])
        result.ndcg.append([statistics.fmean(v) for v in zip(*ndcg, strict=True)])
    bar.close()
    return result
