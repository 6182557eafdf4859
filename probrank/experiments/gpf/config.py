"""The typed schemas of the ``gpf_ranker`` and ``gpf_finetune`` configs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
from probrank.nn.heads import PrecisionUpdate
from probrank.nn.losses import LossKind
from probrank.nn.rff_gp import MomentumForm

__all__ = ["GPFFinetuneConfig", "GPFRankerConfig"]


SplitName = Annotated[str, NonEmpty()]
"""``dataset:split`` (``ubuntu:train``, ``mediqa:test``, ``liveqa:test``)."""


def _check_split_names(table: Mapping[str, Any], keys: tuple[str, ...]) -> None:
    datasets = dataset_names(generated=False, aliases=True)  # the dataset registry's
    for key in keys:
        values = table.get(key, [])
        for index, value in enumerate(values if isinstance(values, list) else [values]):
            dataset, _, split = str(value).partition(":")
            if dataset not in datasets or not split:
                where = (key, index) if isinstance(values, list) else (key,)
                raise SchemaError(
                    where,
                    f"must be 'dataset:split' with dataset in {', '.join(datasets)}, got {value!r}",
                )


@dataclass(frozen=True)
class GPFData:
    """``[data]``: the splits and where the data sets are."""

    train: SplitName
    validation: SplitName
    test: SplitName
    ubuntu_dir: str | None = None  # default <shared data>/dialog/ubuntu-irc
    mediqa_dir: str | None = None  # default <shared data>/qa/mediqa2019-task3
    liveqa_dir: str | None = None  # default <shared data>/qa/liveqa-med
    # (one <name>_dir per loaded data set of probrank.data.datasets, a test keeps them equal)
    ubuntu_train_contexts: NonNegativeInt | None = None  # 0 (default): all
    ubuntu_dev_contexts: NonNegativeInt | None = None
    ubuntu_test_contexts: NonNegativeInt | None = None
    seed: NonNegativeInt | None = None  # Ubuntu negatives and subsets; default 0

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """Each split names a known data set and a split."""
        _check_split_names(table, ("train", "validation", "test"))


@dataclass(frozen=True)
class GPFFinetuneData(GPFData):
    """``[data]`` of ``gpf_finetune``: also the shifted test sets."""

    shift: list[SplitName] | None = None  # default none

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """Each split and shift names a known data set and a split."""
        _check_split_names(table, ("train", "validation", "test", "shift"))


@dataclass(frozen=True)
class GPFEvaluation:
    """``[evaluation]``: the measures reported (default all)."""

    measures: Annotated[list[str], NonEmpty(), OneOf(MEASURES)] | None = None


@dataclass(frozen=True)
class HeadFit:
    """Training settings of a head (``[heads]``, overridden per head)."""

    epochs: Epochs | None = None  # checkpoints chosen on validation
    batch_size: PositiveInt | None = None
    lr: PositiveFloat | None = None


@dataclass(frozen=True)
class FrozenFit(HeadFit):
    """Head-only training: also Adam's weight decay."""

    weight_decay: NonNegativeFloat | None = None


@dataclass(frozen=True)
class FineTuneFit(HeadFit):
    """End-to-end fine-tuning: also the encoder's learning rate."""

    encoder_lr: PositiveFloat | None = None


@dataclass(frozen=True)
class MLPOptions:
    """Constructor options of an MLP head (:class:`probrank.nn.heads.MLPHead`)."""

    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    loss: Annotated[str, OneOf.enum(LossKind)] | None = None
    gamma: Annotated[float, Range(0)] | None = None  # focal loss only


@dataclass(frozen=True)
class GPOptions:
    """Constructor options of an SNGP / GPF head (:class:`probrank.nn.heads.SNGPHead`)."""

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
class FrozenMLP(MLPOptions, FrozenFit):
    """``[heads.deterministic]`` of ``gpf_ranker``."""


@dataclass(frozen=True)
class FrozenMCDropout(FrozenMLP):
    """``[heads.mc_dropout]``: also the passes ``T`` and their seed."""

    num_samples: Annotated[int, Range(2)] | None = None
    prediction_seed: NonNegativeInt | None = None


@dataclass(frozen=True)
class FrozenEnsemble(FrozenMLP):
    """``[heads.ensemble]``: also the members ``M``."""

    num_members: Annotated[int, Range(2)] | None = None


@dataclass(frozen=True)
class FrozenSNGP(GPOptions, FrozenFit):
    """``[heads.sngp]`` of ``gpf_ranker`` (BCE loss)."""

    loss: Annotated[str, OneOf.enum(LossKind)] | None = None
    gamma: Annotated[float, Range(0)] | None = None


@dataclass(frozen=True)
class FrozenGPF(GPOptions, FrozenFit):
    """``[heads.gpf]`` of ``gpf_ranker``: focal ``gamma``, one value or a grid (default 2)."""

    gamma: FocalGamma | Annotated[list[FocalGamma], NonEmpty()] | None = None


@dataclass(frozen=True)
class GPFRankerHeads(FrozenFit):
    """``[heads]`` of ``gpf_ranker``: the heads, their shared settings and one table each."""

    names: Annotated[list[str], NonEmpty(), OneOf(HEADS)] | None = None  # default all five
    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    deterministic: FrozenMLP | None = None
    mc_dropout: FrozenMCDropout | None = None
    ensemble: FrozenEnsemble | None = None
    sngp: FrozenSNGP | None = None
    gpf: FrozenGPF | None = None


@dataclass(frozen=True)
class FineTunedMLP(MLPOptions, FineTuneFit):
    """``[heads.deterministic]`` of ``gpf_finetune``."""


@dataclass(frozen=True)
class FineTunedSNGP(GPOptions, FineTuneFit):
    """``[heads.sngp]`` of ``gpf_finetune``."""

    loss: Annotated[str, OneOf.enum(LossKind)] | None = None
    gamma: Annotated[float, Range(0)] | None = None


@dataclass(frozen=True)
class FineTunedGPF(GPOptions, FineTuneFit):
    """``[heads.gpf]`` of ``gpf_finetune``: one focal ``gamma`` (default 2)."""

    gamma: FocalGamma | None = None


@dataclass(frozen=True)
class GPFFinetuneHeads(FineTuneFit):
    """``[heads]`` of ``gpf_finetune``."""

    names: Annotated[list[str], NonEmpty(), OneOf(FINE_TUNED_HEADS)] | None = None
    hidden: PositiveInt | None = None
    num_layers: NonNegativeInt | None = None
    dropout: Rate | None = None
    deterministic: FineTunedMLP | None = None
    sngp: FineTunedSNGP | None = None
    gpf: FineTunedGPF | None = None


@dataclass(frozen=True)
class Calibration:
    """``[calibration]`` of ``gpf_finetune``: the mean-field factors ``lambda`` to choose from."""

    mean_field_factors: Annotated[list[NonNegativeFloat], NonEmpty()] | None = None


@dataclass(frozen=True)
class CalibrationWithTemperature(Calibration):
    """``[calibration]`` of ``gpf_ranker``: also the ``+T`` rows (default true)."""

    temperature: bool | None = None


@dataclass(frozen=True)
class GPFRankerConfig:
    """A ``gpf_ranker`` config (:mod:`probrank.experiments.gpf.frozen`)."""

    experiment: QuietExperiment
    data: GPFData
    evaluation: GPFEvaluation | None = None
    encoder: Encoder | None = None
    heads: GPFRankerHeads | None = None
    calibration: CalibrationWithTemperature | None = None
    output: Output | None = None


@dataclass(frozen=True)
class GPFFinetuneConfig:
    """A ``gpf_finetune`` config (:mod:`probrank.experiments.gpf.finetune`)."""

    experiment: QuietExperiment
    data: GPFFinetuneData
    evaluation: GPFEvaluation | None = None
    encoder: Encoder | None = None
    heads: GPFFinetuneHeads | None = None
    calibration: Calibration | None = None
    output: Output | None = None
