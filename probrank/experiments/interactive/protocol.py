"""The ``interactive`` protocol: a grid of posterior x strategy x user-noise cells, or a
``[tune]`` search (allowed on MEDIQA validation only).

Each cell runs the simulated sessions of :func:`~probrank.experiments.interactive.cells.run_cell`
on the evaluation questions; the table reports, per cell, the matching accuracy and NDCG@5
after the ``[evaluation] rounds`` judgements (mean and sd over seeds) and the median seconds per
round. The results so far are written after every cell
(:func:`~probrank.experiments.provenance.save_partial`), so that an interrupted grid keeps what
it measured.

What runs in parallel (``[experiment] executor = "ray"``): one task per (cell, seed), each
running that seed's sessions on every question (the warm start of the seed is trained, or read
from its disk cache, in the task; the questions' features and the warm-start data are encoded
once here and shared). Every task seeds itself from the seed, so the results equal the local
executor's; the seconds per round are measured where each task ran. A ``[tune]`` search runs
on the local executor.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from probrank._options import parse_enum
from probrank.acquisition.select import Strategy
from probrank.data.datasets import DatasetName
from probrank.exceptions import InputDataError
from probrank.executors import ExecutorKind, Task, open_executor
from probrank.experiments.interactive.cells import (
    Cell,
    CellResult,
    ExperimentData,
    load_experiment_data,
    merge_cell_results,
    run_cell,
)
from probrank.experiments.interactive.config import GridCellSettings, InteractiveExperimentSettings
from probrank.experiments.interactive.tune import run_tuning
from probrank.experiments.provenance import save_partial
from probrank.experiments.results import ExperimentResult
from probrank.models.interactive.settings import InteractiveRankerSettings, PosteriorKind

__all__ = ["run"]

SYNTHETIC = DatasetName.SYNTHETIC.value


def _cells(grid: Sequence[GridCellSettings]) -> list[Cell]:
    cells: list[Cell] = []
    for table in grid:
        for p, s, t in itertools.product(table.posteriors, table.strategies, table.noises):
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


def _cell_seed(
    data: ExperimentData, cell: Cell, seed: int, rounds: int, options: InteractiveRankerSettings
) -> CellResult:
    """One task: the sessions of one cell and one seed on every question."""
    return run_cell(
        data, cell, seeds=1, rounds=rounds, options=options, progress=False, first_seed=seed
    )


def run(
    config: InteractiveExperimentSettings, *, config_path: Path, seeds: int, smoke: bool
) -> ExperimentResult:
    """The ``interactive`` protocol: a grid of cells, or a ``[tune]`` search on validation.

    Args:
        config: The config's typed settings (:func:`~probrank.experiments.load_config`).
        config_path: The config file (resolves a relative encoder ``cache_dir``).
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: Four questions, rounds up to 2.
    """
    threads = config.experiment.threads
    torch.set_num_threads(threads)
    options = config.ranker
    reported = list(config.evaluation.rounds)
    if smoke:
        reported = [r for r in reported if r <= 2] or [0]
    dataset = config.data.dataset
    split = config.data.split
    if config.tune is not None:
        if (dataset, split) != (DatasetName.MEDIQA.value, "validation") and dataset != SYNTHETIC:
            raise InputDataError(
                "tuning runs on MEDIQA validation only ([data] dataset = 'mediqa', "
                "split = 'validation')",
                path=config_path,
            )
    limit = config.data.max_questions or None
    cells = _cells(config.grid)  # checked before the data is loaded and encoded
    data = load_experiment_data(
        dataset,
        split,
        options=options,
        encoder_options=config.encoder.table(),
        max_questions=4 if smoke else limit,
        config_path=config_path,
        warm_start=config.tune is not None
        or any(options.for_cell(c.posterior).needs_warm_start for c in cells),
    )
    settings = {
        "data": {"dataset": dataset, "split": split, "max_questions": limit or 0},
        "evaluation": {"rounds": reported},
        **options.tables_json(),
    }
    if config.tune is not None:
        tuned = run_tuning(
            data,
            config.tune,
            options,
            seeds=seeds,
            smoke=smoke,
            path=config_path,
            title=config.experiment.title,
        )
        tuned.settings = settings
        return tuned
    title = config.experiment.title or f"interactive: {config_path.stem}"
    notes = [
        f"{dataset} {split}: {len(data.questions)} questions, "
        f"{sum(q.num_candidates for q in data.questions)} candidates; {seeds} seeds; "
        "s/round: median seconds per round (selection + update + re-ranking)",
    ]
    values: dict[str, dict[str, list[float]]] = {}
    curves: dict[str, dict[str, Any]] = {}
    result = ExperimentResult(
        title, values, notes=notes, data={"curves": curves}, settings=settings
    )
    executor_settings = config.experiment.executor_settings()
    if executor_settings.kind is ExecutorKind.RAY:  # no encoder in what the tasks take
        data = data.portable(
            warm_start=any(options.for_cell(c.posterior).needs_warm_start for c in cells)
        )
    pairs = [(cell, seed) for cell in cells for seed in range(seeds)]
    per_seed: dict[Cell, dict[int, CellResult]] = {cell: {} for cell in cells}

    def finished(index: int, outcome: CellResult) -> None:
        cell, seed = pairs[index]
        per_seed[cell][seed] = outcome
        if len(per_seed[cell]) < seeds:
            return
        cell_result = merge_cell_results([per_seed[cell][s] for s in range(seeds)])
        values[cell.name] = {
            **cell_result.per_seed(reported),
            "s/round": [cell_result.median_round_seconds] * seeds,
        }
        curves[cell.name] = {**cell_result.to_json(), "per_seed_accuracy": cell_result.accuracy}
        save_partial(result)  # after every cell: an interrupted grid keeps what it measured

    with open_executor(executor_settings) as executor:
        shared = executor.share(data)
        tasks = [
            Task(
                f"{cell.name}, seed {seed}",
                _cell_seed,
                (shared, cell, seed, max(reported), options),
                threads=threads,
            )
            for cell, seed in pairs
        ]
        executor.map(tasks, desc="sessions", on_result=finished)
    order = {cell.name: i for i, cell in enumerate(cells)}  # the grid's order, as configured
    result.values = dict(sorted(values.items(), key=lambda item: order[item[0]]))
    result.data["curves"] = dict(sorted(curves.items(), key=lambda item: order[item[0]]))
    return result
