"""A results table over methods and measures: means and standard deviations over seeds."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExperimentResult", "format_table"]


@dataclass
class ExperimentResult:
    """Per-seed values ``{method: {measure: [value per seed]}}`` plus named extra tables.

    Attributes:
        title: A heading for the printed table.
        values: ``{method: {measure: [one value per seed]}}``.
        extra: Further tables, ``{table title: {row: {column: value}}}`` (e.g. an ablation).
        notes: Lines printed under the table (data sizes, what was subsampled).
        data: Further JSON-able results written beside ``values`` in the results JSON (e.g.
            the interactive curves), ``{key: data}``.
        figures: Figures written as ``<config stem>_<name>.png`` beside the results JSON,
            ``{name: matplotlib figure}``.
        settings: The settings the protocol ran with, defaults included (its typed view of
            the config; recorded in the JSON's provenance), ``{table: {key: value}}``.
        files: The files the run wrote (set by :func:`~probrank.experiments.run_experiment`).
    """

    title: str
    values: dict[str, dict[str, list[float]]]
    extra: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict, repr=False)
    settings: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def means(self) -> dict[str, dict[str, float]]:
        """``{method: {measure: mean over seeds}}``."""
        return {
            method: {m: statistics.fmean(v) for m, v in measures.items()}
            for method, measures in self.values.items()
        }

    def stds(self) -> dict[str, dict[str, float]]:
        """``{method: {measure: sample standard deviation over seeds}}`` (0 for one seed)."""
        return {
            method: {m: _stdev(v) for m, v in measures.items()}
            for method, measures in self.values.items()
        }

    def to_json(self) -> str:
        """The means as ``{method: {measure: value}}`` JSON (strict: NaN is written as null)."""
        means = {
            method: {m: v if math.isfinite(v) else None for m, v in measures.items()}
            for method, measures in self.means().items()
        }
        return json.dumps(means, indent=2, allow_nan=False)

    def table(self, digits: int = 4) -> str:
        """A plain-text table: one row per method, ``mean ± sd`` per measure."""
        means, stds = self.means(), self.stds()
        rows = {
            method: {m: _mean_sd(means[method][m], stds[method][m], digits) for m in means[method]}
            for method in means
        }
        parts = [format_table(self.title, rows)]
        parts += [
            format_table(
                title,
                {r: {c: f"{v:.{digits}f}" for c, v in cols.items()} for r, cols in table.items()},
            )
            for title, table in self.extra.items()
        ]
        text = "\n\n".join(parts)
        return text + ("\n\n" + "\n".join(self.notes) if self.notes else "")


def _stdev(values: Sequence[float]) -> float:
    """Sample standard deviation; 0 for one value, NaN when any value is NaN."""
    if any(math.isnan(v) for v in values):
        return math.nan
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _mean_sd(mean: float, sd: float, digits: int) -> str:
    if math.isnan(mean):
        return "nan"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def format_table(title: str, rows: Mapping[str, Mapping[str, str]]) -> str:
    """Align ``{row: {column: text}}`` into a fixed-width text table under ``title``."""
    columns: list[str] = []
    for cols in rows.values():
        columns.extend(c for c in cols if c not in columns)
    header: Sequence[str] = ["", *columns]
    body = [[name, *(cols.get(c, "") for c in columns)] for name, cols in rows.items()]
    widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    return "\n".join(line.rstrip() for line in lines)
