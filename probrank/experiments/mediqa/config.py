"""The typed schema of ``mediqa_multitask`` configs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from probrank._config import NonEmpty, Range
from probrank.experiments.tables import (
    Encoder,
    Experiment,
    NonNegativeFloat,
    Output,
    PositiveFloat,
    PositiveInt,
    Rate,
)

__all__ = ["MediqaMultitaskExperimentSettings"]


@dataclass(frozen=True)
class MediqaDataSettings:
    """``[data]``: folders relative to the shared data folder, or absolute."""

    mediqa: str | None = None  # default qa/mediqa2019-task3
    rqe: str | None = None  # default qa/mediqa2019-task2-rqe
    medquad: str | None = None  # default collections/medquad


@dataclass(frozen=True)
class EntailmentSettings:
    """``[entailment]``: entailed-question features (RQE classifier over MedQuAD)."""

    enabled: bool | None = None  # default true
    first_stage: PositiveInt | None = None  # BM25 candidates, default 20
    top_n: PositiveInt | None = None  # default 3
    threshold: Annotated[float, Range(0, 1)] | None = None  # default 0.7


@dataclass(frozen=True)
class MultiTaskModelSettings:
    """``[model]``: the multi-task network and its training."""

    hidden: PositiveInt | None = None
    dropout: Rate | None = None
    skip: bool | None = None
    prior_scale: PositiveFloat | None = None
    weight_decay: NonNegativeFloat | None = None
    lr: PositiveFloat | None = None
    max_epochs: PositiveInt | None = None
    patience: PositiveInt | None = None
    ranking_weights: Annotated[list[Annotated[float, Range(0, 1)]], NonEmpty()] | None = None


@dataclass(frozen=True)
class BaselinesSettings:
    """``[baselines]``: ``k`` of the top-k baseline chosen in ``1 .. max_k`` (default 10)."""

    max_k: PositiveInt | None = None


@dataclass(frozen=True)
class BootstrapSettings:
    """``[evaluation]``: bootstrap resamples of the test questions (default 1000)."""

    bootstrap: PositiveInt | None = None


@dataclass(frozen=True)
class MediqaMultitaskExperimentSettings:
    """A ``mediqa_multitask`` config (:mod:`probrank.experiments.mediqa.protocol`)."""

    experiment: Experiment
    data: MediqaDataSettings | None = None
    encoder: Encoder | None = None
    entailment: EntailmentSettings | None = None
    model: MultiTaskModelSettings | None = None
    baselines: BaselinesSettings | None = None
    evaluation: BootstrapSettings | None = None
    output: Output | None = None
