"""Interactive answer selection: simulated sessions per posterior x strategy x user noise.

For each seed an :class:`~probrank.models.InteractiveRanker` is warm-started on MEDIQA 2019
train (early stopping on MEDIQA validation; :mod:`probrank.models.interactive.warmstart`). For
every question of the evaluation set the ranker's session over its candidates is built, a
:class:`~probrank.interactive.users.SimulatedUser` with noise ``t`` answers the pairs a strategy
picks, and after 0, 1, 2, 4, 10 judgements the ranking by posterior mean is scored: matching
accuracy (the top answer has the question's maximal grade) and NDCG@5 (gain grade - 1). Each
seed gives the mean over questions; tables show mean and sd over seeds and the median seconds
per round (pair selection + update, the user's time excluded).

Entry points: :func:`run` (the ``interactive`` protocol of ``probrank experiment``; a config
holds a grid of cells, or a ``[tune]`` table for a hyperparameter search that is only allowed on
MEDIQA validation) and :func:`run_cell`; the ``probrank interactive`` command lives in
:mod:`probrank.experiments.interactive_commands`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from probrank._files import write_text_atomically
from probrank._options import parse_enum
from probrank.acquisition.select import Strategy
from probrank.encoders.config import encoder_cache_dir, encoder_from_config
from probrank.exceptions import InputDataError
from probrank.experiments.interactive_data import (
    Dataset,
    Question,
    encode_lists,
    load_lists,
    prepare_questions,
)
from probrank.experiments.interactive_models import (
    InteractiveOptions,
    PosteriorKind,
    ranker_settings,
)
from probrank.experiments.interactive_synthetic import synthetic_questions
from probrank.experiments.results import ExperimentResult
from probrank.interactive.metrics import ranking_curves
from probrank.interactive.simulate import simulate_session
from probrank.interactive.users import SimulatedUser
from probrank.models.interactive.model import InteractiveRanker
from probrank.models.interactive.warmstart import WarmStart

__all__ = [
    "REPORTED_ROUNDS",
    "Cell",
    "CellResult",
    "ExperimentData",
    "load_experiment_data",
    "run",
    "run_cell",
]

REPORTED_ROUNDS = (0, 1, 2, 4, 10)
"""Numbers of judgements after which the tables report the ranking."""

SYNTHETIC = "synthetic"
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
        options: InteractiveOptions,
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
        options: InteractiveOptions,
        strategy: Strategy | str = Strategy.EI,
    ) -> InteractiveRanker:
        """The :class:`~probrank.models.InteractiveRanker` of ``seed``: warm-started (through
        the cache) with what ``kind`` needs (SWAG, ensemble members), unless it needs none."""
        ranker = InteractiveRanker(ranker_settings(kind, options, seed, strategy))
        if not ranker.settings.needs_warm_start:
            return ranker
        if self._blocks is None:
            self._blocks = self._warm_start_data()
        (train_x, train_g), (val_x, val_g) = self._blocks
        return ranker.fit_features(train_x, train_g, val_x, val_g, cache_dir=self.cache_dir)

    def warm_start(self, seed: int, kind: PosteriorKind, options: InteractiveOptions) -> WarmStart:
        """The warm start of ``seed`` with what ``kind`` needs (SWAG, ensemble members)."""
        warm = self.ranker(seed, kind, options).warm_start
        if warm is None:
            raise InputDataError(f"posterior {kind.value!r} uses no warm start")
        return warm


def load_experiment_data(
    dataset: str,
    split: str = "test",
    *,
    options: InteractiveOptions | None = None,
    encoder_options: dict[str, Any] | None = None,
    max_questions: int | None = None,
    data_folder: str | None = None,
    config_path: str | Path | None = None,
) -> ExperimentData:
    """Evaluation questions of ``dataset:split`` and the MEDIQA train/validation warm-start data.

    ``dataset = "synthetic"`` generates everything (:mod:`interactive_synthetic`), with
    ``split`` ignored. A relative encoder ``cache_dir`` is resolved against the project root of
    ``config_path`` (:func:`~probrank.encoders.config.encoder_cache_dir`), else against the
    working directory, so a config finds the same cache from any folder.

    Raises:
        InputDataError: Unknown data set or split, or missing data.
    """
    options = options or InteractiveOptions()
    if dataset == SYNTHETIC:
        count = max_questions or 30
        questions = synthetic_questions(count, seed=2, prefix="T")

        def generated() -> tuple[Blocks, Blocks]:
            train = synthetic_questions(60, min_candidates=4, max_candidates=10, seed=0, prefix="A")
            val = synthetic_questions(15, min_candidates=4, max_candidates=10, seed=1, prefix="V")
            return (
                ([q.features for q in train], [q.grades for q in train]),
                ([q.features for q in val], [q.grades for q in val]),
            )

        return ExperimentData(questions, generated, options, None)
    kind = parse_enum(Dataset, dataset, "data")
    lists = load_lists(kind, split, folder=data_folder)  # validates the split before encoding
    if max_questions:
        lists = lists[:max_questions]
    encoder = encoder_from_config(encoder_options, config_path)
    cache = encoder_cache_dir(encoder_options, config_path)  # the warm-start cache too
    questions = prepare_questions(lists, encode_lists(encoder, lists))

    def mediqa() -> tuple[Blocks, Blocks]:
        blocks = []
        for role in ("train", "validation"):
            items = load_lists(Dataset.MEDIQA, role, min_best_grade=0)
            blocks.append((encode_lists(encoder, items), [tuple(item.grades) for item in items]))
        return blocks[0], blocks[1]

    return ExperimentData(questions, mediqa, options, cache)


def user_seed(seed: int, qid: str) -> int:
    """A stable seed of the simulated user of question ``qid`` in run ``seed``."""
    digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
    return int.from_bytes(digest[:6], "little")


def run_cell(
    data: ExperimentData,
    cell: Cell,
    *,
    seeds: int = 3,
    rounds: int = 10,
    options: InteractiveOptions | None = None,
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
    bar = tqdm(
        total=seeds * len(data.questions), desc=cell.name, unit="question", disable=not progress
    )
    for seed in range(first_seed, first_seed + seeds):
        ranker = data.ranker(seed, cell.posterior, options, cell.strategy)
        accuracy, ndcg = [], []
        for question in data.questions:
            session = ranker.session(
                question.query, question.candidates, seed=seed, features=question.features
            )
            user = SimulatedUser(question.utilities, cell.noise, user_seed(seed, question.qid))
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


def _cells(grid: Sequence[dict[str, Any]]) -> list[Cell]:
    cells: list[Cell] = []
    for table in grid:
        for p, s, t in itertools.product(
            table.get("posteriors", ["laplace"]),
            table.get("strategies", ["ei"]),
            table.get("noises", [0.3]),
        ):
            cell = Cell(
                parse_enum(PosteriorKind, p, "posterior"),
                parse_enum(Strategy, s, "strategy"),
                _noise(t),
            )
            if cell not in cells:
                cells.append(cell)
    return cells


def _noise(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InputDataError(f"user noise t must be a positive number, got {value!r}")
    return float(value)


def run(config: dict, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult:
    """The ``interactive`` protocol: a grid of cells, or a ``[tune]`` search on validation."""
    torch.set_num_threads(int(config.get("experiment", {}).get("threads", 1)))
    options = InteractiveOptions.from_config(config)
    data_cfg = config.get("data", {})
    evaluation = config.get("evaluation", {})
    reported = [int(r) for r in evaluation.get("rounds", REPORTED_ROUNDS)]
    if smoke:
        reported = [r for r in reported if r <= 2] or [0]
    dataset, split = str(data_cfg.get("dataset", "liveqa-med")), str(data_cfg.get("split", "test"))
    if "tune" in config:
        from probrank.experiments.interactive_tune import run_tuning

        if (dataset, split) != ("mediqa", "validation") and dataset != SYNTHETIC:
            raise InputDataError(
                "tuning runs on MEDIQA validation only ([data] dataset = 'mediqa', "
                "split = 'validation')",
                path=config_path,
            )
    limit = int(data_cfg.get("max_questions", 0)) or None
    data = load_experiment_data(
        dataset,
        split,
        options=options,
        encoder_options=config.get("encoder"),
        max_questions=4 if smoke else limit,
        config_path=config_path,
    )
    if "tune" in config:
        return run_tuning(data, config, options, seeds=seeds, smoke=smoke, path=config_path)
    cells = _cells(config.get("grid", [{}]))
    title = config.get("experiment", {}).get("title", f"interactive: {config_path.stem}")
    notes = [
        f"{dataset} {split}: {len(data.questions)} questions, "
        f"{sum(q.num_candidates for q in data.questions)} candidates; {seeds} seeds; "
        "s/round: median seconds per round (selection + update + re-ranking)",
    ]
    save = not smoke and config.get("output", {}).get("save", True)
    folder = config_path.parent / config.get("output", {}).get("folder", "results")
    values: dict[str, dict[str, list[float]]] = {}
    curves: dict[str, dict[str, Any]] = {}
    for cell in cells:
        result = run_cell(data, cell, seeds=seeds, rounds=max(reported), options=options)
        values[cell.name] = {
            **result.per_seed(reported),
            "s/round": [result.median_round_seconds] * seeds,
        }
        curves[cell.name] = {**result.to_json(), "per_seed_accuracy": result.accuracy}
        if save:  # after every cell, so that an interrupted grid keeps what it measured
            folder.mkdir(parents=True, exist_ok=True)
            payload = {"title": title, "values": values, "curves": curves, "notes": notes}
            write_json_atomic(folder / f"{config_path.stem}.json", payload)
    return ExperimentResult(title, values, notes=notes)


def write_json_atomic(path: Path, payload: object) -> None:
    """Write ``payload`` as indented JSON through a temporary file and a rename."""
    write_text_atomically(path, json.dumps(payload, indent=2, allow_nan=True) + "\n")
