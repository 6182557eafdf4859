"""The typed schema of each protocol's TOML config (checked by
:func:`~probrank.experiments.load_config`).

Each protocol's schema lives with it (``<protocol package>.config``); the tables they share are
in :mod:`probrank.experiments.tables`. :data:`SCHEMAS` maps each protocol of
:data:`probrank.experiments.PROTOCOLS` to its schema (a test keeps the two registries' keys
equal): add a protocol by adding one entry to each.
"""

from __future__ import annotations

from probrank.experiments.cascade.config import CascadeConfig
from probrank.experiments.gpf.config import GPFFinetuneConfig, GPFRankerConfig
from probrank.experiments.gpf.top_layers_config import GPFTopLayersConfig
from probrank.experiments.interactive.config import InteractiveConfig
from probrank.experiments.mediqa.config import MediqaMultitaskConfig
from probrank.experiments.qlfusion_cv.config import QLFusionConfig

__all__ = [
    "SCHEMAS",
    "CascadeConfig",
    "GPFFinetuneConfig",
    "GPFRankerConfig",
    "GPFTopLayersConfig",
    "InteractiveConfig",
    "MediqaMultitaskConfig",
    "QLFusionConfig",
]

SCHEMAS: dict[str, type] = {
    "qlfusion_cv": QLFusionConfig,
    "gpf_ranker": GPFRankerConfig,
    "gpf_finetune": GPFFinetuneConfig,
    "gpf_top_layers": GPFTopLayersConfig,
    "mediqa_multitask": MediqaMultitaskConfig,
    "interactive": InteractiveConfig,
    "cascade": CascadeConfig,
}
"""The schema of each protocol of :data:`probrank.experiments.PROTOCOLS`."""
