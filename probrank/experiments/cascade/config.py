"""The typed schema of ``cascade`` configs (``models/cascade/*.toml``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from probrank._config import Range
from probrank.experiments.tables import (
    Encoder,
    Epochs,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    Output,
    PositiveFloat,
    PositiveInt,
    QuietExperiment,
    Rate,
)
from probrank.retrieval.analysis import Stemmer, StopWords
from probrank.retrieval.bm25 import BM25Method
from probrank.retrieval.risk import RankingCriterion

__all__ = ["CascadeExperimentSettings"]

_COLLECTIONS = ("vaswani", "liveqa_medquad")  # probrank.experiments.cascade.collections


@dataclass(frozen=True)
class CascadeCollection:
    """``[collection]``: which test collection, and where the shared data is."""

    name: Annotated[str, OneOf(_COLLECTIONS)]
    data_dir: str | None = None  # default: probrank.data.paths.shared_data_dir()


@dataclass(frozen=True)
class FirstStageTable:
    """``[first_stage]``: BM25 with bm25s (defaults: Terrier's)."""

    k: PositiveInt | None = None  # documents retrieved per topic, default 1000
    k1: PositiveFloat | None = None  # default 1.2
    b: Annotated[float, Range(0, 1)] | None = None  # default 0.75
    method: Annotated[str, OneOf.enum(BM25Method)] | None = None  # default "robertson"
    stemmer: Annotated[str, OneOf.enum(Stemmer)] | None = None  # default "porter"
    stopwords: Annotated[str, OneOf.enum(StopWords)] | None = None  # default "english_plus"
    index_dir: str | None = None  # default ".probrank-cache/bm25/<collection>"; "" in memory


@dataclass(frozen=True)
class GPFTable:
    """``[second_stage.gpf]``: :class:`~probrank.models.GPFRankerSettings` keys."""

    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    num_features: PositiveInt | None = None
    spectral_bound: PositiveFloat | None = None
    gammas: list[PositiveFloat] | None = None
    epochs: Epochs | None = None
    batch_size: PositiveInt | None = None
    lr: PositiveFloat | None = None
    weight_decay: NonNegativeFloat | None = None
    temperature: bool | None = None
    validation_fraction: Annotated[float, Range(0, 1, open_low=True, open_high=True)] | None = None


@dataclass(frozen=True)
class MultiTaskTable:
    """``[second_stage.multitask]``: :class:`~probrank.models.MultiTaskSettings` keys."""

    hidden: PositiveInt | None = None
    dropout: Rate | None = None
    prior_scale: PositiveFloat | None = None
    weight_decay: NonNegativeFloat | None = None
    lr: PositiveFloat | None = None
    max_epochs: PositiveInt | None = None
    patience: PositiveInt | None = None
    ranking_weights: list[Annotated[float, Range(0, 1)]] | None = None
    posterior_samples: PositiveInt | None = None
    validation_fraction: Annotated[float, Range(0, 1, open_low=True, open_high=True)] | None = None


@dataclass(frozen=True)
class SecondStageTable:
    """``[second_stage]``: the model, the reranking depth and the cross-validation."""

    model: Annotated[str, OneOf(("gpf", "multitask"))] | None = None  # default "gpf"
    depth: PositiveInt | None = None  # documents reranked per topic, default 100
    folds: Annotated[int, Range(2)] | None = None  # default 5
    # the encoder's (u, v, u*v, |u-v|) pair features as inputs (default true; false: gpf only)
    pair_features: bool | None = None
    # the query-document cosine, its min-max within the topic and log rank (default false)
    dense_features: bool | None = None
    gpf: GPFTable | None = None
    multitask: MultiTaskTable | None = None


@dataclass(frozen=True)
class RankingTable:
    """``[ranking]``: the risk-aware criterion of ``risk.run``."""

    criterion: Annotated[str, OneOf.enum(RankingCriterion)] | None = None  # default "cvar"
    alpha: Annotated[float, Range(0, 1, open_low=True)] | None = None  # CVaR level, default 0.1
    risk_aversion: NonNegativeFloat | None = None  # lambda of mean_sd, default 1.0
    num_draws: PositiveInt | None = None  # default 1000


@dataclass(frozen=True)
class CascadeEvaluation:
    """``[evaluation]``: calibration bins."""

    n_bins: PositiveInt | None = None  # ECE and ERCE bins, default 10


@dataclass(frozen=True)
class CascadeExperimentSettings:
    """A ``cascade`` config."""

    experiment: QuietExperiment
    collection: CascadeCollection
    first_stage: FirstStageTable | None = None
    second_stage: SecondStageTable | None = None
    ranking: RankingTable | None = None
    encoder: Encoder | None = None
    evaluation: CascadeEvaluation | None = None
    output: Output | None = None
