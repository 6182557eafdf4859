"""The typed schema of ``gpf_top_layers`` configs (:mod:`probrank.experiments.gpf.top_layers`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from probrank._config import NonEmpty, Range
from probrank.encoders.hidden_states import StateDtype
from probrank.encoders.top_layers import SpectralMode
from probrank.encoders.transformer import Pooling
from probrank.experiments.gpf.config import (
    GPFEvaluationSettings,
    GPFFinetuneDataSettings,
    GPHeadSettings,
    MLPHeadSettings,
    TemperatureCalibrationSettings,
)
from probrank.experiments.tables import (
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
from probrank.models.gpf_ranker.top_layers import DropoutScope

__all__ = ["TOP_LAYER_HEADS", "DropoutScope", "GPFTopLayersExperimentSettings"]

TOP_LAYER_HEADS = ("deterministic", "mc_dropout", "sngp", "gpf")
"""Heads the protocol trains on the top layers (the ensemble would need M fine-tunes)."""


@dataclass(frozen=True)
class TopLayersEncoderSettings:
    """``[encoder]``: the pretrained cross-encoder, the frozen layers and the state cache."""

    name_or_path: str | None = None  # default: the packaged all-MiniLM-L6-v2
    model: str | None = None  # alias of name_or_path
    frozen_layers: NonNegativeInt | None = None  # k; default n - 1 (one trainable layer)
    pooling: Annotated[str, OneOf.enum(Pooling)] | None = None  # default "mean"
    max_length: Annotated[int, Range(4)] | None = None  # default 128
    batch_size: PositiveInt | None = None  # caching and scoring batches, default 64
    state_dtype: Annotated[str, OneOf.enum(StateDtype)] | None = None  # default "float16"
    device: str | None = None  # default: CUDA when present, else CPU
    cache_dir: str | None = None  # default ".probrank-cache"; "" disables the cache
    show_progress: bool | None = None
    progress: bool | None = None  # alias of show_progress


@dataclass(frozen=True)
class TopLayersFitSettings:
    """Training settings (``[heads]``, overridden per head)."""

    epochs: Epochs | None = None  # checkpoints chosen on validation; default [1, 2, 3]
    batch_size: PositiveInt | None = None  # default 32
    lr: PositiveFloat | None = None  # head, default 1e-3
    encoder_lr: PositiveFloat | None = None  # top layers, default 2e-5


@dataclass(frozen=True)
class LayerSpectralNormSettings:
    """Spectral normalisation of the top layers' dense weights (default: none)."""

    layer_spectral_bound: PositiveFloat | None = None
    layer_spectral_mode: Annotated[str, OneOf.enum(SpectralMode)] | None = None  # "relative"


@dataclass(frozen=True)
class TopMLPSettings(MLPHeadSettings, TopLayersFitSettings, LayerSpectralNormSettings):
    """``[heads.deterministic]``: an MLP head (its run also gives the MC-dropout row)."""


@dataclass(frozen=True)
class TopMCDropoutSettings:
    """``[heads.mc_dropout]``: the deterministic run's network with ``T`` dropout passes."""

    num_samples: Annotated[int, Range(2)] | None = None  # T, default 10
    prediction_seed: NonNegativeInt | None = None  # default 0
    scope: Annotated[str, OneOf.enum(DropoutScope)] | None = None  # default "head"


FocalGamma = Annotated[float, Range(1)]


@dataclass(frozen=True)
class TopSNGPSettings(GPHeadSettings, TopLayersFitSettings, LayerSpectralNormSettings):
    """``[heads.sngp]``: the GP head with cross-entropy."""

    loss: Annotated[str, OneOf(("bce", "focal"))] | None = None
    gamma: Annotated[float, Range(0)] | None = None


@dataclass(frozen=True)
class TopGPFSettings(GPHeadSettings, TopLayersFitSettings, LayerSpectralNormSettings):
    """``[heads.gpf]``: the GP head with focal loss, ``gamma`` one value or a grid (default: the
    model's grid, :attr:`probrank.models.gpf_ranker.GPFRankerSettings.gammas`)."""

    gamma: FocalGamma | Annotated[list[FocalGamma], NonEmpty()] | None = None


@dataclass(frozen=True)
class TopLayersHeadsSettings(TopLayersFitSettings):
    """``[heads]``: the heads, their shared settings and one table each."""

    names: Annotated[list[str], NonEmpty(), OneOf(TOP_LAYER_HEADS)] | None = None
    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    weight_decay: NonNegativeFloat | None = None  # AdamW, default 0.01
    deterministic: TopMLPSettings | None = None
    mc_dropout: TopMCDropoutSettings | None = None
    sngp: TopSNGPSettings | None = None
    gpf: TopGPFSettings | None = None


@dataclass(frozen=True)
class GPFTopLayersExperimentSettings:
    """A ``gpf_top_layers`` config."""

    experiment: QuietExperiment
    data: GPFFinetuneDataSettings
    evaluation: GPFEvaluationSettings | None = None
    encoder: TopLayersEncoderSettings | None = None
    heads: TopLayersHeadsSettings | None = None
    calibration: TemperatureCalibrationSettings | None = None
    output: Output | None = None
