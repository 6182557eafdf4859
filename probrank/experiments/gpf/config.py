"""The typed settings (schemas) of the ``gpf_ranker`` and ``gpf_finetune`` configs.

A head's keys under ``[heads.<head>]`` are None where the config does not set them: the
shared ``[heads]`` value applies, else the model's default
(:class:`~probrank.models.gpf_ranker.GPFRankerSettings`; the protocols build one per head).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from probrank._config import NonEmpty, Range, SchemaError
from probrank.data.datasets import dataset_names
from probrank.experiments.gpf.measures import FINE_TUNED_HEADS, HEADS, MEASURES
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
from probrank.models.gpf_ranker import (
    DEFAULT_MEAN_FIELD_FACTORS,
    LossKind,
    MomentumForm,
    PrecisionUpdate,
)

__all__ = ["GPFFinetuneExperimentSettings", "GPFRankerExperimentSettings"]


SplitName = Annotated[str, NonEmpty()]
"""``dataset:split`` (``ubuntu:train``, ``mediqa:test``, ``liveqa:test``)."""


def _check_split_names(table: Mapping[str, Any], keys: tuple[str, ...]) -> None:
    datasets = dataset_names(generated=False, aliases=True)  # the dataset registry's
    for key in (k for k in keys if k in table):
        values = table[key]
        for index, value in enumerate(values if isinstance(values, list) else [values]):
            dataset, _, split = str(value).partition(":")
            if dataset not in datasets or not split:
                where = (key, index) if isinstance(values, list) else (key,)
                raise SchemaError(
                    where,
                    f"must be 'dataset:split' with dataset in {', '.join(datasets)}, got {value!r}",
                )


@dataclass(frozen=True)
class GPFDataSettings:
    """``[data]``: the splits and where the data sets are."""

    train: SplitName
    validation: SplitName
    test: SplitName
    ubuntu_dir: str | None = None  # None: <shared data>/dialog/ubuntu-irc
    mediqa_dir: str | None = None  # None: <shared data>/qa/mediqa2019-task3
    liveqa_dir: str | None = None  # None: <shared data>/qa/liveqa-med
    # (one <name>_dir per loaded data set of probrank.data.datasets, a test keeps them equal)
    ubuntu_train_contexts: NonNegativeInt = 0  # 0: all
    ubuntu_dev_contexts: NonNegativeInt = 0
    ubuntu_test_contexts: NonNegativeInt = 0
    seed: NonNegativeInt = 0  # Ubuntu negatives and subsets

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """Each split names a known data set and a split."""
        _check_split_names(table, ("train", "validation", "test"))


@dataclass(frozen=True)
class GPFFinetuneDataSettings(GPFDataSettings):
    """``[data]`` of ``gpf_finetune``: also the shifted test sets."""

    shift: list[SplitName] = field(default_factory=list)

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """Each split and shift names a known data set and a split."""
        _check_split_names(table, ("train", "validation", "test", "shift"))


@dataclass(frozen=True)
class GPFEvaluationSettings:
    """``[evaluation]``: the measures reported."""

    measures: Annotated[list[str], NonEmpty(), OneOf(MEASURES)] = field(
        default_factory=lambda: list(MEASURES)
    )


@dataclass(frozen=True)
class HeadFitSettings:
    """Training settings of a head (``[heads]``, overridden per head)."""

    epochs: Epochs | None = None  # checkpoints chosen on validation
    batch_size: PositiveInt | None = None
    lr: PositiveFloat | None = None


@dataclass(frozen=True)
class FrozenFitSettings(HeadFitSettings):
    """Head-only training: also Adam's weight decay."""

    weight_decay: NonNegativeFloat | None = None


@dataclass(frozen=True)
class FineTuneFitSettings(HeadFitSettings):
    """End-to-end fine-tuning: also the encoder's learning rate."""

    encoder_lr: PositiveFloat | None = None


@dataclass(frozen=True)
class MLPHeadSettings:
    """Constructor options of an MLP head of :class:`~probrank.models.gpf_ranker.GPFRanker`."""

    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    loss: Annotated[str, OneOf.enum(LossKind)] | None = None
    gamma: Annotated[float, Range(0)] | None = None  # focal loss only


@dataclass(frozen=True)
class GPHeadSettings:
    """Constructor options of a GP head of :class:`~probrank.models.gpf_ranker.GPFRanker`."""

    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    spectral_bound: PositiveFloat | None = None
    num_features: PositiveInt | None = None
    lengthscale: PositiveFloat | None = None
    prior_precision: PositiveFloat | None = None
    mean_field_factor: NonNegativeFloat | None = None
    precision_update: Annotated[str, OneOf.enum(PrecisionUpdate)] | None = None
    momentum: Annotated[float, Range(0, 1)] | None = None
    momentum_form: Annotated[str, OneOf.enum(MomentumForm)] | None = None


FocalGamma = Annotated[float, Range(1)]


@dataclass(frozen=True)
class FrozenMLPSettings(MLPHeadSettings, FrozenFitSettings):
    """``[heads.deterministic]`` of ``gpf_ranker``."""


@dataclass(frozen=True)
class FrozenMCDropoutSettings(FrozenMLPSettings):
    """``[heads.mc_dropout]``: also the passes ``T`` and their seed."""

    num_samples: Annotated[int, Range(2)] | None = None
    prediction_seed: NonNegativeInt | None = None


@dataclass(frozen=True)
class FrozenEnsembleSettings(FrozenMLPSettings):
    """``[heads.ensemble]``: also the members ``M``."""

    num_members: Annotated[int, Range(2)] | None = None


@dataclass(frozen=True)
class FrozenSNGPSettings(GPHeadSettings, FrozenFitSettings):
    """``[heads.sngp]`` of ``gpf_ranker`` (BCE loss)."""

    loss: Annotated[str, OneOf.enum(LossKind)] | None = None
    gamma: Annotated[float, Range(0)] | None = None


@dataclass(frozen=True)
class FrozenGPFSettings(GPHeadSettings, FrozenFitSettings):
    """``[heads.gpf]`` of ``gpf_ranker``: focal ``gamma``, one value or a grid (default: the
    model's grid, :attr:`probrank.models.gpf_ranker.GPFRankerSettings.gammas`)."""

    gamma: FocalGamma | Annotated[list[FocalGamma], NonEmpty()] | None = None


@dataclass(frozen=True)
class GPFRankerHeadsSettings(FrozenFitSettings):
    """``[heads]`` of ``gpf_ranker``: the heads, their shared settings and one table each
    (None: not set, the model's default)."""

    names: Annotated[list[str], NonEmpty(), OneOf(HEADS)] = field(
        default_factory=lambda: list(HEADS)
    )
    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    deterministic: FrozenMLPSettings | None = None
    mc_dropout: FrozenMCDropoutSettings | None = None
    ensemble: FrozenEnsembleSettings | None = None
    sngp: FrozenSNGPSettings | None = None
    gpf: FrozenGPFSettings | None = None


@dataclass(frozen=True)
class FineTunedMLPSettings(MLPHeadSettings, FineTuneFitSettings):
    """``[heads.deterministic]`` of ``gpf_finetune``."""


@dataclass(frozen=True)
class FineTunedSNGPSettings(GPHeadSettings, FineTuneFitSettings):
    """``[heads.sngp]`` of ``gpf_finetune``."""

    loss: Annotated[str, OneOf.enum(LossKind)] | None = None
    gamma: Annotated[float, Range(0)] | None = None


@dataclass(frozen=True)
class FineTunedGPFSettings(GPHeadSettings, FineTuneFitSettings):
    """``[heads.gpf]`` of ``gpf_finetune``: one focal ``gamma`` (default 2)."""

    gamma: FocalGamma | None = None


@dataclass(frozen=True)
class GPFFinetuneHeadsSettings(FineTuneFitSettings):
    """``[heads]`` of ``gpf_finetune`` (None: not set, the model's default)."""

    names: Annotated[list[str], NonEmpty(), OneOf(FINE_TUNED_HEADS)] = field(
        default_factory=lambda: list(FINE_TUNED_HEADS)
    )
    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    deterministic: FineTunedMLPSettings | None = None
    sngp: FineTunedSNGPSettings | None = None
    gpf: FineTunedGPFSettings | None = None


@dataclass(frozen=True)
class CalibrationSettings:
    """``[calibration]`` of ``gpf_finetune``: the mean-field factors ``lambda`` to choose from."""

    mean_field_factors: Annotated[list[NonNegativeFloat], NonEmpty()] = field(
        default_factory=lambda: list(DEFAULT_MEAN_FIELD_FACTORS)
    )


@dataclass(frozen=True)
class TemperatureCalibrationSettings(CalibrationSettings):
    """``[calibration]`` of ``gpf_ranker``: also the ``+T`` rows."""

    temperature: bool = True


@dataclass(frozen=True)
class GPFRankerExperimentSettings:
    """A ``gpf_ranker`` config (:mod:`probrank.experiments.gpf.frozen`): its typed settings, one
    field per table."""

    experiment: QuietExperiment
    data: GPFDataSettings
    evaluation: GPFEvaluationSettings = field(default_factory=GPFEvaluationSettings)
    encoder: Encoder = field(default_factory=Encoder)
    heads: GPFRankerHeadsSettings = field(default_factory=GPFRankerHeadsSettings)
    calibration: TemperatureCalibrationSettings = field(
        default_factory=TemperatureCalibrationSettings
    )
    output: Output = field(default_factory=Output)


@dataclass(frozen=True)
class GPFFinetuneExperimentSettings:
    """A ``gpf_finetune`` config (:mod:`probrank.experiments.gpf.finetune`): its typed settings,
    one field per table."""

    experiment: QuietExperiment
    data: GPFFinetuneDataSettings
    evaluation: GPFEvaluationSettings = field(default_factory=GPFEvaluationSettings)
    encoder: Encoder = field(default_factory=Encoder)
    heads: GPFFinetuneHeadsSettings = field(default_factory=GPFFinetuneHeadsSettings)
    calibration: CalibrationSettings = field(default_factory=CalibrationSettings)
    output: Output = field(default_factory=Output)
