"""The typed schema of ``cascade`` configs (``models/cascade/*.toml``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from probrank._config import CheckedAs, Range
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
    settings_from_table,
)
from probrank.models.gpf_ranker.settings import GPFRankerSettings
from probrank.models.multitask.model import MultiTaskSettings
from probrank.retrieval.analysis import Stemmer, StopWords
from probrank.retrieval.bm25 import BM25Method
from probrank.retrieval.risk import RankingCriterion

__all__ = ["CascadeExperimentSettings"]

_COLLECTIONS = ("vaswani", "liveqa_medquad")  # probrank.experiments.cascade.collections


@dataclass(frozen=True)
class CollectionSettings:
    """``[collection]``: which test collection, and where the shared data is."""

    name: Annotated[str, OneOf(_COLLECTIONS)]
    data_dir: str | None = None  # None: probrank.data.paths.shared_data_dir()


@dataclass(frozen=True)
class FirstStageSettings:
    """``[first_stage]``: BM25 with bm25s (defaults: Terrier's)."""

    k: PositiveInt = 1000  # documents retrieved per topic
    k1: PositiveFloat = 1.2
    b: Annotated[float, Range(0, 1)] = 0.75
    method: Annotated[str, OneOf.enum(BM25Method)] = BM25Method.ROBERTSON.value
    stemmer: Annotated[str, OneOf.enum(Stemmer)] = Stemmer.PORTER.value
    stopwords: Annotated[str, OneOf.enum(StopWords)] = StopWords.ENGLISH_PLUS.value
    index_dir: str | None = None  # None: ".probrank-cache/bm25/<collection>"; "" in memory


@dataclass(frozen=True)
class GPFTable:
    """``[second_stage.gpf]`` as a config writes it: :class:`~probrank.models.GPFRankerSettings`
    keys (a key left out keeps the settings' default)."""

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
    """``[second_stage.multitask]`` as a config writes it: keys of
    :class:`~probrank.models.MultiTaskSettings` (a key left out keeps the settings' default)."""

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
class SecondStageSettings:
    """``[second_stage]``: the model, the reranking depth and the cross-validation."""

    model: Annotated[str, OneOf(("gpf", "multitask"))] = "gpf"
    depth: PositiveInt = 100  # documents reranked per topic
    folds: Annotated[int, Range(2)] = 5
    # the encoder's (u, v, u*v, |u-v|) pair features as inputs (false: gpf only)
    pair_features: bool = True
    # the query-document cosine, its min-max within the topic and log rank
    dense_features: bool = False
    gpf: Annotated[
        GPFRankerSettings, CheckedAs(GPFTable, settings_from_table(GPFRankerSettings))
    ] = field(default_factory=GPFRankerSettings)
    multitask: Annotated[
        MultiTaskSettings, CheckedAs(MultiTaskTable, settings_from_table(MultiTaskSettings))
    ] = field(default_factory=MultiTaskSettings)


@dataclass(frozen=True)
class RankingSettings:
    """``[ranking]``: the risk-aware criterion of ``risk.run``."""

    criterion: Annotated[str, OneOf.enum(RankingCriterion)] = RankingCriterion.CVAR.value
    alpha: Annotated[float, Range(0, 1, open_low=True)] = 0.1  # CVaR level
    risk_aversion: NonNegativeFloat = 1.0  # lambda of mean_sd
    num_draws: PositiveInt = 1000


@dataclass(frozen=True)
class CascadeEvaluationSettings:
    """``[evaluation]``: calibration bins."""

    n_bins: PositiveInt = 10  # ECE and ERCE bins


@dataclass(frozen=True)
class CascadeExperimentSettings:
    """A ``cascade`` config (:mod:`probrank.experiments.cascade.protocol`): its typed settings,
    one field per table."""

    experiment: QuietExperiment
    collection: CollectionSettings
    first_stage: FirstStageSettings = field(default_factory=FirstStageSettings)
    second_stage: SecondStageSettings = field(default_factory=SecondStageSettings)
    ranking: RankingSettings = field(default_factory=RankingSettings)
    encoder: Encoder = field(default_factory=Encoder)
    evaluation: CascadeEvaluationSettings = field(default_factory=CascadeEvaluationSettings)
    output: Output = field(default_factory=Output)
