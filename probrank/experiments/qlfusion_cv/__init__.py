"""The ``qlfusion_cv`` protocol: QLFusion's Tables 1 and 2 by cross-validation over topics.

* :mod:`~probrank.experiments.qlfusion_cv.data`: the run files a config names, the runs
  selected by MAP and their cross-fitting data;
* :mod:`~probrank.experiments.qlfusion_cv.protocol`: ``run`` (the ``qlfusion_cv`` protocol of
  ``probrank experiment``);
* :mod:`~probrank.experiments.qlfusion_cv.diagnostics`: SVI vs NUTS, reference weights,
  validation scores, within-topic signal;
* :mod:`~probrank.experiments.qlfusion_cv.config`: the config's typed schema.

The quantifiers, their variants and the cross-fitted weights are QLFusion's own
(:mod:`probrank.models.qlfusion`).

Names are imported from their modules on first use, so that reading a config (which imports
every protocol's schema) loads no protocol.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probrank.experiments.qlfusion_cv.data import load_runs, load_selected
    from probrank.experiments.qlfusion_cv.diagnostics import (
        reference_weights,
        svi_vs_nuts,
        validation_scores,
        within_topic_signal,
    )
    from probrank.experiments.qlfusion_cv.protocol import (
        DEFAULT_MEASURES,
        TABLE_1,
        UNSUPERVISED,
        run,
    )

__all__ = [
    "DEFAULT_MEASURES",
    "TABLE_1",
    "UNSUPERVISED",
    "load_runs",
    "load_selected",
    "reference_weights",
    "run",
    "svi_vs_nuts",
    "validation_scores",
    "within_topic_signal",
]

_HOMES = {
    "DEFAULT_MEASURES": "probrank.experiments.qlfusion_cv.protocol",
    "TABLE_1": "probrank.experiments.qlfusion_cv.protocol",
    "UNSUPERVISED": "probrank.experiments.qlfusion_cv.protocol",
    "load_runs": "probrank.experiments.qlfusion_cv.data",
    "load_selected": "probrank.experiments.qlfusion_cv.data",
    "reference_weights": "probrank.experiments.qlfusion_cv.diagnostics",
    "run": "probrank.experiments.qlfusion_cv.protocol",
    "svi_vs_nuts": "probrank.experiments.qlfusion_cv.diagnostics",
    "validation_scores": "probrank.experiments.qlfusion_cv.diagnostics",
    "within_topic_signal": "probrank.experiments.qlfusion_cv.diagnostics",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
