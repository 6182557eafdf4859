"""The ``mediqa_multitask`` protocol: MEDIQA 2019 Task 3 with the official metrics.

* :mod:`~probrank.experiments.mediqa.protocol`: ``run``: the baselines and the multi-task
  filter + re-ranker over seeds, bootstrap noise, hindsight diagnostics;
* :mod:`~probrank.experiments.mediqa.data`: the splits, the official keys, the entailment
  classifier and the joint features;
* :mod:`~probrank.experiments.mediqa.scoring`: MEDIQA's official scorer over a split and its
  bootstraps; :mod:`~probrank.experiments.mediqa.baselines`: CHiQA, LR filter, SVM rank;
* :mod:`~probrank.experiments.mediqa.config`: the config's typed schema.

The multi-task net and the choice of its ranking weight, threshold and keep-top rule are the
model's (:mod:`probrank.models.multitask`).

Names are imported from their modules on first use, so that reading a config (which imports
every protocol's schema) loads no protocol.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probrank.experiments.mediqa.protocol import SYSTEMS, THRESHOLDS

__all__ = [
    "SYSTEMS",
    "THRESHOLDS",
]

_HOMES = {
    "SYSTEMS": "probrank.experiments.mediqa.protocol",
    "THRESHOLDS": "probrank.experiments.mediqa.protocol",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
