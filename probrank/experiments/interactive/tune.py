"""Hyperparameter search for the interactive ranker, on MEDIQA validation only.

A config's ``[tune]`` table names the posterior(s), the strategy, the user noises and the number
of rounds ``R``; ``[tune.grid]`` maps ``"table.key"`` option names (e.g. ``"laplace.scale"``,
``"update.lr"``, ``"warm_start.weight_decay"``) to lists of values. Every combination runs the
simulated sessions on the validation questions; the objective is the matching accuracy averaged
over rounds ``1..R`` and over the noises (the area under the early accuracy curve, which rewards
both fast and lasting gains), mean over seeds. Rows are printed best first with the warm start's
validation pairwise accuracy beside them.
"""

from __future__ import annotations

import itertools
import statistics
from pathlib import Path
from typing import Any

from probrank._options import parse_enum
from probrank.acquisition.select import Strategy
from probrank.exceptions import InputDataError
from probrank.experiments.interactive.cells import Cell, ExperimentData, run_cell
from probrank.experiments.interactive.config import TuneSettings
from probrank.experiments.results import ExperimentResult
from probrank.models.interactive.settings import InteractiveRankerSettings, PosteriorKind

__all__ = ["run_tuning"]


def run_tuning(
    data: ExperimentData,
    tune: TuneSettings,
    options: InteractiveRankerSettings,
    *,
    seeds: int,
    smoke: bool,
    path: Path,
    title: str | None = None,
) -> ExperimentResult:
    """Evaluate every combination of ``[tune.grid]`` (see the module doc).

    Args:
        data: The questions and their features.
        tune: The config's ``[tune]`` settings.
        options: The ranker's settings the grid's overrides apply to.
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: One round only.
        path: The config file (named in errors).
        title: The table's title (None: ``"interactive tuning: <config stem>"``).
    """
    kinds = [parse_enum(PosteriorKind, p, "posterior") for p in tune.posterior_kinds]
    strategy = parse_enum(Strategy, tune.strategy, "strategy")
    noises = [float(t) for t in tune.noises]
    rounds = 1 if smoke else tune.rounds
    grid: dict[str, list[Any]] = dict(tune.grid)
    bad = [k for k, v in grid.items() if not isinstance(v, list) or not v]
    if bad:
        raise InputDataError(f"[tune.grid] {bad[0]} must be a non-empty list", path=path)
    names = list(grid)
    combos = list(itertools.product(*(grid[n] for n in names))) or [()]
    rows: dict[str, dict[str, list[float]]] = {}
    for kind in kinds:
        for combo in combos:
            overrides = dict(zip(names, combo, strict=True))
            settings = options.with_overrides(overrides)
            label = kind.value + (
                " " + ", ".join(f"{k}={v}" for k, v in overrides.items()) if overrides else ""
            )
            objective = [0.0] * seeds
            row: dict[str, list[float]] = {}
            for noise in noises:
                result = run_cell(
                    data,
                    Cell(kind, strategy, noise),
                    seeds=seeds,
                    rounds=rounds,
                    options=settings,
                    progress=False,
                )
                row[f"acc@0 t={noise:g}"] = [c[0] for c in result.accuracy]
                row[f"acc@{rounds} t={noise:g}"] = [c[rounds] for c in result.accuracy]
                for s, curve in enumerate(result.accuracy):
                    objective[s] += statistics.fmean(curve[1:]) / len(noises) if rounds else 0.0
            row["objective"] = objective
            if settings.for_cell(kind).needs_warm_start:
                row["val pair acc"] = [
                    data.warm_start(s, kind, settings).validation_accuracy for s in range(seeds)
                ]
            rows[label] = row
    ordered = dict(sorted(rows.items(), key=lambda item: -statistics.fmean(item[1]["objective"])))
    best = next(iter(ordered))
    notes = [
        f"MEDIQA validation: {len(data.questions)} questions, {seeds} seeds, strategy "
        f"{strategy.value}, noises {noises}; objective = mean accuracy over rounds 1..{rounds} "
        "and noises",
        f"best: {best}",
    ]
    return ExperimentResult(title or f"interactive tuning: {path.stem}", ordered, notes=notes)
