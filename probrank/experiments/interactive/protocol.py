"""The ``interactive`` protocol: a grid of posterior x strategy x user-noise cells, or a
``[tune]`` search (allowed on MEDIQA validation only).

Each cell runs the simulated sessions of :func:`~probrank.experiments.interactive.cells.run_cell`
on the evaluation questions; the table reports, per cell, the matching accuracy and NDCG@5
after the ``[evaluation] rounds`` judgements (mean and sd over seeds) and the median seconds per
round. The results so far are written after every cell (:func:`~probrank.experiments.
provenance.save_partial`), so that an interrupted grid keeps what it measured.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from probrank._options import parse_enum
from probrank.acquisition.select import Strategy
from probrank.data.datasets import DatasetName
from probrank.exceptions import InputDataError
from probrank.experiments.interactive.cells import (
    REPORTED_ROUNDS,
    Cell,
    load_experiment_data,
    run_cell,
)
from probrank.experiments.interactive.options import (
    InteractiveOptions,
    PosteriorKind,
    needs_warm_start,
)
from probrank.experiments.interactive.tune import run_tuning
from probrank.experiments.provenance import save_partial
from probrank.experiments.results import ExperimentResult

__all__ = ["run"]

SYNTHETIC = DatasetName.SYNTHETIC.value


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
    dataset = str(data_cfg.get("dataset", DatasetName.LIVEQA_MED.value))
    split = str(data_cfg.get("split", "test"))
    if "tune" in config:
        if (dataset, split) != (DatasetName.MEDIQA.value, "validation") and dataset != SYNTHETIC:
            raise InputDataError(
                "tuning runs on MEDIQA validation only ([data] dataset = 'mediqa', "
                "split = 'validation')",
                path=config_path,
            )
    limit = int(data_cfg.get("max_questions", 0)) or None
    cells = _cells(config.get("grid", [{}]))  # checked before the data is loaded and encoded
    data = load_experiment_data(
        dataset,
        split,
        options=options,
        encoder_options=config.get("encoder"),
        max_questions=4 if smoke else limit,
        config_path=config_path,
        warm_start="tune" in config or any(needs_warm_start(c.posterior, options) for c in cells),
    )
    settings = {
        "data": {"dataset": dataset, "split": split, "max_questions": limit or 0},
        "evaluation": {"rounds": reported},
        **dataclasses.asdict(options),
    }
    if "tune" in config:
        tuned = run_tuning(data, config, options, seeds=seeds, smoke=smoke, path=config_path)
        tuned.settings = settings
        return tuned
    title = config.get("experiment", {}).get("title", f"interactive: {config_path.stem}")
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
    for cell in cells:
        cell_result = run_cell(data, cell, seeds=seeds, rounds=max(reported), options=options)
        values[cell.name] = {
            **cell_result.per_seed(reported),
            "s/round": [cell_result.median_round_seconds] * seeds,
        }
        curves[cell.name] = {**cell_result.to_json(), "per_seed_accuracy": cell_result.accuracy}
        save_partial(result)  # after every cell: an interrupted grid keeps what it measured
    return result
