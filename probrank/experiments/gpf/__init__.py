"""The GPF-BERT / SNGP protocols: calibrated relevance heads in domain and under shift.

* :mod:`~probrank.experiments.gpf.frozen`: ``gpf_ranker``, five heads on one frozen encoder;
* :mod:`~probrank.experiments.gpf.finetune`: ``gpf_finetune``, encoder and head fine-tuned end
  to end;
* :mod:`~probrank.experiments.gpf.top_layers`: ``gpf_top_layers``, the top encoder layers and
  head fine-tuned on cached lower-layer states (schema in
  :mod:`~probrank.experiments.gpf.top_layers_config`);
* :mod:`~probrank.experiments.gpf.data`: the ``"dataset:split"`` splits and pair features;
* :mod:`~probrank.experiments.gpf.measures`: the heads compared and the measures reported;
* :mod:`~probrank.experiments.gpf.config`: the configs' typed schemas.

The heads and their validation selection are the model's parts
(:mod:`probrank.models.gpf_ranker`: :class:`~probrank.models.gpf_ranker.GPFRanker` and its
regimes).

Names are imported from their modules on first use, so that reading a config (which imports
every protocol's schema) loads no protocol.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probrank.experiments.gpf.measures import HEADS, MEASURES, evaluate_head

__all__ = [
    "HEADS",
    "MEASURES",
    "evaluate_head",
]

_HOMES = {
    "HEADS": "probrank.experiments.gpf.measures",
    "MEASURES": "probrank.experiments.gpf.measures",
    "evaluate_head": "probrank.experiments.gpf.measures",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
