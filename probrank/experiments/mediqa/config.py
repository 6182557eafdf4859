"""The typed schema of ``mediqa_multitask`` configs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from probrank._config import CheckedAs, NonEmpty, Range
from probrank.experiments.tables import (
    Encoder,
    Experiment,
    NonNegativeFloat,
    Output,
    PositiveFloat,
    PositiveInt,
    Rate,
)
from probrank.models.multitask.model import MultiTaskSettings
from probrank.models.multitask.selection import DEFAULT_THRESHOLDS, KeepTop

__all__ = ["MediqaMultitaskExperimentSettings", "multitask_settings"]

THRESHOLDS = DEFAULT_THRESHOLDS
"""P(correct) thresholds tried on validation."""


@dataclass(frozen=True)
class MediqaDataSettings:
    """``[data]``: folders relative to the shared data folder, or absolute."""

    mediqa: str = "qa/mediqa2019-task3"
    rqe: str = "qa/mediqa2019-task2-rqe"
    medquad: str = "collections/medquad"


@dataclass(frozen=True)
class EntailmentSettings:
    """``[entailment]``: entailed-question features (RQE classifier over MedQuAD)."""

    enabled: bool = True
    first_stage: PositiveInt = 20  # BM25 candidates
    top_n: PositiveInt = 3
    threshold: Annotated[float, Range(0, 1)] = 0.7


@dataclass(frozen=True)
class MultiTaskModelTable:
    """``[model]`` as a config writes it: keys of :class:`~probrank.models.MultiTaskSettings`
    (a key left out keeps the settings' default, the model card's value), built by
    :func:`multitask_settings`."""

    hidden: PositiveInt | None = None
    dropout: Rate | None = None
    skip: bool | None = None
    prior_scale: PositiveFloat | None = None
    weight_decay: NonNegativeFloat | None = None
    lr: PositiveFloat | None = None
    max_epochs: PositiveInt | None = None
    patience: PositiveInt | None = None
    ranking_weights: Annotated[list[Annotated[float, Range(0, 1)]], NonEmpty()] | None = None


def multitask_settings(table: Mapping[str, Any]) -> MultiTaskSettings:
    """The :class:`~probrank.models.multitask.MultiTaskSettings` of ``[model]``: the table's
    keys over the model's defaults; the keep-top rule is chosen on validation over
    :data:`THRESHOLDS`, without a progress bar (the protocol sets ``bayesian`` per system)."""
    values: dict[str, Any] = dict(table)
    if "ranking_weights" in values:
        values["ranking_weights"] = tuple(float(w) for w in values["ranking_weights"])
    return MultiTaskSettings(
        thresholds=THRESHOLDS, keep_top=KeepTop.CHOOSE, progress=False, **values
    )


@dataclass(frozen=True)
class BaselinesSettings:
    """``[baselines]``: ``k`` of the top-k baseline chosen in ``1 .. max_k``."""

    max_k: PositiveInt = 10


@dataclass(frozen=True)
class BootstrapSettings:
    """``[evaluation]``: bootstrap resamples of the test questions."""

    bootstrap: PositiveInt = 1000


@dataclass(frozen=True)
class MediqaMultitaskExperimentSettings:
    """A ``mediqa_multitask`` config (:mod:`probrank.experiments.mediqa.protocol`): its typed
    settings, one field per table (``[experiment] threads`` None: this process's torch
    threads)."""

    experiment: Experiment
    data: MediqaDataSettings = field(default_factory=MediqaDataSettings)
    encoder: Encoder = field(default_factory=Encoder)
    entailment: EntailmentSettings = field(default_factory=EntailmentSettings)
    model: Annotated[MultiTaskSettings, CheckedAs(MultiTaskModelTable, multitask_settings)] = field(
        default_factory=lambda: multitask_settings({})
    )
    baselines: BaselinesSettings = field(default_factory=BaselinesSettings)
    evaluation: BootstrapSettings = field(default_factory=BootstrapSettings)
    output: Output = field(default_factory=Output)
