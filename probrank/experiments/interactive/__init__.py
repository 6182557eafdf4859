"""The ``interactive`` protocol: simulated sessions of the interactive ranker, and the
``probrank interactive`` command.

* :mod:`~probrank.experiments.interactive.protocol`: ``run`` (a grid of cells or a ``[tune]``
  search) and :mod:`~probrank.experiments.interactive.tune`, the search;
* :mod:`~probrank.experiments.interactive.cells`: one cell's simulated sessions over questions;
* :mod:`~probrank.experiments.interactive.data` and
  :mod:`~probrank.experiments.interactive.synthetic`: the questions (from the dataset registry,
  or generated);
* :mod:`~probrank.experiments.interactive.commands`: ``probrank interactive`` (one simulated
  cell, or a real session with ``--human``);
* :mod:`~probrank.experiments.interactive.config`: the config's typed schema.

Names are imported from their modules on first use, so that reading a config (which imports
every protocol's schema) loads no protocol.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probrank.experiments.interactive.cells import (
        REPORTED_ROUNDS,
        Cell,
        CellResult,
        ExperimentData,
        load_experiment_data,
        run_cell,
    )
    from probrank.experiments.interactive.data import Question, load_lists

__all__ = [
    "REPORTED_ROUNDS",
    "Cell",
    "CellResult",
    "ExperimentData",
    "Question",
    "load_experiment_data",
    "load_lists",
    "run_cell",
]

_HOMES = {
    "Cell": "probrank.experiments.interactive.cells",
    "CellResult": "probrank.experiments.interactive.cells",
    "ExperimentData": "probrank.experiments.interactive.cells",
    "Question": "probrank.experiments.interactive.data",
    "REPORTED_ROUNDS": "probrank.experiments.interactive.cells",
    "load_experiment_data": "probrank.experiments.interactive.cells",
    "load_lists": "probrank.experiments.interactive.data",
    "run_cell": "probrank.experiments.interactive.cells",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
