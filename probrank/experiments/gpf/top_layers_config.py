"""The typed settings (schema) of ``gpf_top_layers`` configs
(:mod:`probrank.experiments.gpf.top_layers`); a head's keys left None take the shared
``[heads]`` value, else the model's default."""

from __future__ import annotations

from dataclasses import dataclass, field
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

    name_or_path: str | None = None  # None: the packaged all-MiniLM-L6-v2
    model: str | None = None  # alias of name_or_path
    frozen_layers: NonNegativeInt | None = None  # k; None: n - 1 (one trainable layer)
    pooling: Annotated[str, OneOf.enum(Pooling)] = Pooling.MEAN.value
    max_length: Annotated[int, Range(4)] = 128
    batch_size: PositiveInt = 64  # caching and scoring batches
    state_dtype: Annotated[str, OneOf.enum(StateDtype)] = StateDtype.FLOAT16.value
    device: str | None = None  # None: CUDA when present, else CPU
    cache_dir: str | None = None  # None: ".probrank-cache"; "" disables the cache
    show_progress: bool | None = None  # None: progress, else true
    progress: bool | None = None  # alias of show_progress

    @property
    def progress_bars(self) -> bool:
        """``show_progress``, else its alias ``progress``, else true."""
        if self.show_progress is not None:
            return self.show_progress
        return self.progress if self.progress is not None else True


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

    num_samples: Annotated[int, Range(2)] = 10  # T
    prediction_seed: NonNegativeInt = 0
    scope: Annotated[str, OneOf.enum(DropoutScope)] = DropoutScope.HEAD.value


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
    """``[heads]``: the heads, their shared settings and one table each (None: not set, the
    model's default)."""

    names: Annotated[list[str], NonEmpty(), OneOf(TOP_LAYER_HEADS)] = field(
        default_factory=lambda: list(TOP_LAYER_HEADS)
    )
    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    weight_decay: NonNegativeFloat | None = None  # AdamW, default 0.01
    deterministic: TopMLPSettings | None = None
    mc_dropout: TopMCDropoutSettings = field(default_factory=TopMCDropoutSettings)
    sngp: TopSNGPSettings | None = None
    gpf: TopGPFSettings | None = None


@dataclass(frozen=True)
class GPFTopLayersExperimentSettings:
    """A ``gpf_top_layers`` config: its typed settings, one field per table."""

    experiment: QuietExperiment
    data: GPFFinetuneDataSettings
    evaluation: GPFEvaluationSettings = field(default_factory=GPFEvaluationSettings)
    encoder: TopLayersEncoderSettings = field(default_factory=TopLayersEncoderSettings)
    heads: TopLayersHeadsSettings = field(default_factory=TopLayersHeadsSettings)
    calibration: TemperatureCalibrationSettings = field(
        default_factory=TemperatureCalibrationSettings
    )
    output: Output = field(default_factory=Output)
