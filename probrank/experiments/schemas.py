"""The typed schema of each protocol's TOML config, which is also its settings object (checked
and built by :func:`~probrank.experiments.load_config`).

Each protocol's schema lives with it (``<protocol package>.config``); the tables they share are
in :mod:`probrank.experiments.tables`. :data:`SCHEMAS` maps each protocol of
:data:`probrank.experiments.PROTOCOLS` to its schema (a test keeps the two registries' keys
equal): add a protocol by adding one entry to each.
"""

from __future__ import annotations

from probrank.experiments.cascade.config import CascadeExperimentSettings
from probrank.experiments.gpf.config import (
    GPFFinetuneExperimentSettings,
    GPFRankerExperimentSettings,
)
from probrank.experiments.gpf.top_layers_config import GPFTopLayersExperimentSettings
from probrank.experiments.interactive.config import InteractiveExperimentSettings
from probrank.experiments.mediqa.config import MediqaMultitaskExperimentSettings
from probrank.experiments.qlfusion_cv.config import QLFusionExperimentSettings

__all__ = [
    "SCHEMAS",
    "CascadeExperimentSettings",
    "ExperimentSettings",
    "GPFFinetuneExperimentSettings",
    "GPFRankerExperimentSettings",
    "GPFTopLayersExperimentSettings",
    "InteractiveExperimentSettings",
    "MediqaMultitaskExperimentSettings",
    "QLFusionExperimentSettings",
]

ExperimentSettings = (
    QLFusionExperimentSettings
    | GPFRankerExperimentSettings
    | GPFFinetuneExperimentSettings
    | GPFTopLayersExperimentSettings
    | MediqaMultitaskExperimentSettings
    | InteractiveExperimentSettings
    | CascadeExperimentSettings
)
"""The typed settings :func:`~probrank.experiments.load_config` returns, one per protocol."""

SCHEMAS: dict[str, type] = {
    "qlfusion_cv": QLFusionExperimentSettings,
    "gpf_ranker": GPFRankerExperimentSettings,
    "gpf_finetune": GPFFinetuneExperimentSettings,
    "gpf_top_layers": GPFTopLayersExperimentSettings,
    "mediqa_multitask": MediqaMultitaskExperimentSettings,
    "interactive": InteractiveExperimentSettings,
    "cascade": CascadeExperimentSettings,
}
"""The schema of each protocol of :data:`probrank.experiments.PROTOCOLS`."""
