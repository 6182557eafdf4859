"""The typed schema of each protocol's TOML config (checked by
:func:`~probrank.experiments.load_config`).

Every table a protocol reads is a dataclass here whose fields are the table's keys, with their
types and ranges (:mod:`probrank._config`). Keys a protocol does not read are not in its
schema, so a typo (``[heads.gpf] epoch``) is an error naming the key and the line instead of a
setting silently ignored. Optional keys are ``None`` here: the protocol's own default applies
(given in each field's comment). The interactive option tables (``[warm_start]``,
``[update]``, ...) are their settings dataclasses themselves.

:data:`SCHEMAS` maps each protocol to its schema.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

from probrank._config import NonEmpty, Range, SchemaError, check_value
from probrank.acquisition.select import Strategy
from probrank.encoders.transformer import EncoderMode, Pooling
from probrank.experiments.gpf_finetune import FINE_TUNED_HEADS
from probrank.experiments.gpf_ranker import HEADS, MEASURES
from probrank.experiments.interactive_models import (
    GPPLOptions,
    LaplaceOptions,
    PosteriorKind,
    SampleOptions,
)
from probrank.experiments.interactive_warmstart import WarmStartOptions
from probrank.experiments.qlfusion.variants import VARIANTS
from probrank.nn.bayesian_linear import Estimator
from probrank.nn.heads import PrecisionUpdate
from probrank.nn.losses import LossKind
from probrank.nn.rff_gp import MomentumForm
from probrank.posteriors.neural import IncrementalUpdate

__all__ = [
    "SCHEMAS",
    "GPFFinetuneConfig",
    "GPFRankerConfig",
    "InteractiveConfig",
    "MediqaMultitaskConfig",
    "OneOf",
    "QLFusionConfig",
]


@dataclass(frozen=True)
class OneOf:
    """``Annotated`` check: a string (or each string of a list) among ``choices``."""

    choices: tuple[str, ...]

    @classmethod
    def enum(cls, kind: type[Enum]) -> OneOf:
        """The values of a ``str`` enum."""
        return cls(tuple(str(member.value) for member in kind))

    def __call__(self, value: Any) -> str | None:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item not in self.choices:
                return f"must be one of {', '.join(self.choices)}, got {item!r}"
        return None


PositiveInt = Annotated[int, Range(1)]
NonNegativeInt = Annotated[int, Range(0)]
PositiveFloat = Annotated[float, Range(0, open_low=True)]
NonNegativeFloat = Annotated[float, Range(0)]
Rate = Annotated[float, Range(0, 1, open_high=True)]
Epochs = Annotated[list[PositiveInt], NonEmpty()]

# --- tables shared by several protocols --------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """``[experiment]``: the protocol's name, the table's title, torch's threads."""

    protocol: str
    title: str | None = None  # default "<protocol>: <config stem>"
    threads: PositiveInt | None = None  # default: the protocol's (1 or 2)


@dataclass(frozen=True)
class QuietExperiment(Experiment):
    """``[experiment]`` of the GPF protocols: also ``quiet`` (no progress bars)."""

    quiet: bool | None = None  # default false


@dataclass(frozen=True)
class Output:
    """``[output]``: where results are saved beside the config, and whether."""

    folder: str | None = None  # default "results"
    save: bool | None = None  # default true (never in smoke runs)


@dataclass(frozen=True)
class Encoder:
    """``[encoder]`` (:func:`probrank.encoders.config.encoder_from_config`)."""

    name_or_path: str | None = None  # default: the packaged all-MiniLM-L6-v2
    model: str | None = None  # alias of name_or_path
    mode: Annotated[str, OneOf.enum(EncoderMode)] | None = None
    pooling: Annotated[str, OneOf.enum(Pooling)] | None = None
    max_length: PositiveInt | None = None
    batch_size: PositiveInt | None = None
    cache_dir: str | None = None  # "" disables the cache
    show_progress: bool | None = None
    progress: bool | None = None  # alias of show_progress


# --- gpf_ranker and gpf_finetune ---------------------------------------------------------

SplitName = Annotated[str, NonEmpty()]
"""``dataset:split`` (``ubuntu:train``, ``mediqa:test``, ``liveqa:test``)."""


def _check_split_names(table: Mapping[str, Any], keys: tuple[str, ...]) -> None:
    datasets = ("ubuntu", "mediqa", "liveqa")
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
    """A ``gpf_ranker`` config (:mod:`probrank.experiments.gpf_ranker`)."""

    experiment: QuietExperiment
    data: GPFData
    evaluation: GPFEvaluation | None = None
    encoder: Encoder | None = None
    heads: GPFRankerHeads | None = None
    calibration: CalibrationWithTemperature | None = None
    output: Output | None = None


@dataclass(frozen=True)
class GPFFinetuneConfig:
    """A ``gpf_finetune`` config (:mod:`probrank.experiments.gpf_finetune`)."""

    experiment: QuietExperiment
    data: GPFFinetuneData
    evaluation: GPFEvaluation | None = None
    encoder: Encoder | None = None
    heads: GPFFinetuneHeads | None = None
    calibration: Calibration | None = None
    output: Output | None = None


# --- interactive -------------------------------------------------------------------------


@dataclass(frozen=True)
class InteractiveData:
    """``[data]``: the evaluation questions."""

    dataset: Annotated[str, OneOf(("liveqa-med", "mediqa", "synthetic"))] | None = None
    split: str | None = None  # default "test"
    max_questions: NonNegativeInt | None = None  # 0 (default): all


@dataclass(frozen=True)
class InteractiveEvaluation:
    """``[evaluation]``: the rounds reported (default 0, 1, 2, 4, 10)."""

    rounds: Annotated[list[NonNegativeInt], NonEmpty()] | None = None


Posteriors = Annotated[list[str], NonEmpty(), OneOf.enum(PosteriorKind)]
Strategies = Annotated[list[str], NonEmpty(), OneOf.enum(Strategy)]
Noises = Annotated[list[PositiveFloat], NonEmpty()]


@dataclass(frozen=True)
class GridCell:
    """One ``[[grid]]`` table: every posterior x strategy x user noise."""

    posteriors: Posteriors | None = None  # default ["laplace"]
    strategies: Strategies | None = None  # default ["ei"]
    noises: Noises | None = None  # default [0.3]


@dataclass(frozen=True)
class Tune:
    """``[tune]``: a search over ``[tune.grid]`` (``"table.key" = [values]``)."""

    posterior: Annotated[str, OneOf.enum(PosteriorKind)] | None = None  # default "laplace"
    posteriors: Posteriors | None = None  # several, instead of posterior
    strategy: Annotated[str, OneOf.enum(Strategy)] | None = None  # default "ei"
    noises: Noises | None = None  # default [0.3]
    rounds: NonNegativeInt | None = None  # default 4
    grid: dict[str, Annotated[list[Any], NonEmpty()]] | None = None

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """Every grid key names an option of an option table; every value fits it."""
        hints = {name: typing.get_type_hints(kind) for name, kind in _OPTION_TABLES.items()}
        for name, values in (table.get("grid") or {}).items():
            option, _, key = name.partition(".")
            if option not in hints:
                known = ", ".join(hints)
                raise SchemaError(("grid", name), f"must be 'table.key' with a table in {known}")
            if key not in hints[option]:
                known = ", ".join(hints[option])
                raise SchemaError(("grid", name), f"[{option}] has no option {key!r} ({known})")
            for index, value in enumerate(values):
                check_value(value, hints[option][key], ("grid", name, index))


_OPTION_TABLES: dict[str, type] = {
    "warm_start": WarmStartOptions,
    "update": IncrementalUpdate,
    "mcdropout": SampleOptions,
    "swag": SampleOptions,
    "laplace": LaplaceOptions,
    "gppl": GPPLOptions,
}
"""The option tables of :class:`~probrank.experiments.interactive_models.InteractiveOptions`
(a test keeps them equal)."""


@dataclass(frozen=True)
class InteractiveConfig:
    """An ``interactive`` config (:mod:`probrank.experiments.interactive`), also read for its
    option tables by ``probrank interactive --config``."""

    experiment: Experiment
    data: InteractiveData | None = None
    evaluation: InteractiveEvaluation | None = None
    grid: Annotated[list[GridCell], NonEmpty()] | None = None  # default one cell of defaults
    tune: Tune | None = None
    encoder: Encoder | None = None
    output: Output | None = None
    warm_start: WarmStartOptions | None = None
    update: IncrementalUpdate | None = None
    mcdropout: SampleOptions | None = None
    swag: SampleOptions | None = None
    laplace: LaplaceOptions | None = None
    gppl: GPPLOptions | None = None


# --- mediqa_multitask --------------------------------------------------------------------


@dataclass(frozen=True)
class MediqaDataPaths:
    """``[data]``: folders relative to the shared data folder, or absolute."""

    mediqa: str | None = None  # default qa/mediqa2019-task3
    rqe: str | None = None  # default qa/mediqa2019-task2-rqe
    medquad: str | None = None  # default collections/medquad


@dataclass(frozen=True)
class Entailment:
    """``[entailment]``: entailed-question features (RQE classifier over MedQuAD)."""

    enabled: bool | None = None  # default true
    first_stage: PositiveInt | None = None  # BM25 candidates, default 20
    top_n: PositiveInt | None = None  # default 3
    threshold: Annotated[float, Range(0, 1)] | None = None  # default 0.7


@dataclass(frozen=True)
class MultitaskModel:
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
class Baselines:
    """``[baselines]``: ``k`` of the top-k baseline chosen in ``1 .. max_k`` (default 10)."""

    max_k: PositiveInt | None = None


@dataclass(frozen=True)
class Bootstrap:
    """``[evaluation]``: bootstrap resamples of the test questions (default 1000)."""

    bootstrap: PositiveInt | None = None


@dataclass(frozen=True)
class MediqaMultitaskConfig:
    """A ``mediqa_multitask`` config (:mod:`probrank.experiments.mediqa_multitask`)."""

    experiment: Experiment
    data: MediqaDataPaths | None = None
    encoder: Encoder | None = None
    entailment: Entailment | None = None
    model: MultitaskModel | None = None
    baselines: Baselines | None = None
    evaluation: Bootstrap | None = None
    output: Output | None = None


# --- qlfusion_cv -------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFiles:
    """``[data]``: the folder (``shared`` under the shared data, or ``path`` beside the
    config), the qrels and a glob of run files in it."""

    shared: str | None = None
    path: str | None = None
    qrels: str | None = None  # default "qrels.txt"
    runs: str | None = None  # default "runs/*"
    on_duplicate: Annotated[str, OneOf(("error", "max", "first"))] | None = None


@dataclass(frozen=True)
class RunFilesRequired(RunFiles):
    """``[data]`` of the config (``shared`` or ``path`` required; ``[smoke.data]`` only
    overrides)."""

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """``shared`` or ``path`` is given."""
        if "shared" not in table and "path" not in table:
            raise SchemaError(("shared",), "missing: [data] needs 'shared' or 'path'")


@dataclass(frozen=True)
class CrossValidation:
    """``[protocol]``: folds, input runs, depth, measures and variants."""

    folds: Annotated[int, Range(3)] | None = None  # default 10
    fold_seed: NonNegativeInt | None = None
    depth: PositiveInt | None = None  # default 100
    top_runs: PositiveInt | None = None  # default 6
    measures: Annotated[list[str], NonEmpty()] | None = None
    variants: Annotated[list[str], NonEmpty(), OneOf(tuple(VARIANTS))] | None = None
    topics: PositiveInt | None = None  # the first N topics only (smoke runs)


@dataclass(frozen=True)
class Quantifier:
    """``[quantifier]`` (:class:`~probrank.experiments.qlfusion.variants.QuantifierSettings`)."""

    hidden: PositiveInt | None = None
    lr: PositiveFloat | None = None
    batch_sizes: Annotated[list[PositiveInt], NonEmpty()] | None = None
    max_epochs: PositiveInt | None = None
    patience: PositiveInt | None = None
    max_steps: PositiveInt | None = None
    estimator: Annotated[str, OneOf.enum(Estimator)] | None = None
    init_scale: PositiveFloat | None = None
    posterior_samples: PositiveInt | None = None
    lower_quantile: Annotated[float, Range(0, 1, open_low=True, open_high=True)] | None = None
    rf_trees: PositiveInt | None = None


@dataclass(frozen=True)
class QLFusionSmoke:
    """``[smoke]``: overrides of ``--smoke`` runs."""

    data: RunFiles | None = None
    protocol: CrossValidation | None = None
    quantifier: Quantifier | None = None


@dataclass(frozen=True)
class QLFusionConfig:
    """A ``qlfusion_cv`` config (:mod:`probrank.experiments.qlfusion`)."""

    experiment: Experiment
    data: RunFilesRequired
    protocol: CrossValidation | None = None
    quantifier: Quantifier | None = None
    smoke: QLFusionSmoke | None = None


SCHEMAS: dict[str, type] = {
    "qlfusion_cv": QLFusionConfig,
    "gpf_ranker": GPFRankerConfig,
    "gpf_finetune": GPFFinetuneConfig,
    "mediqa_multitask": MediqaMultitaskConfig,
    "interactive": InteractiveConfig,
}
"""The schema of each protocol of :data:`probrank.experiments.PROTOCOLS`."""
