"""The typed schema of ``interactive`` configs (also read by ``probrank interactive --config``
for its option tables)."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from probrank._config import NonEmpty, SchemaError, check_value
from probrank.acquisition.select import Strategy
from probrank.data.datasets import dataset_names
from probrank.experiments.tables import (
    Encoder,
    Experiment,
    NonNegativeInt,
    OneOf,
    Output,
    PositiveFloat,
)
from probrank.models.interactive.settings import (
    OPTION_TABLES,
    GPPLSettings,
    IncrementalUpdate,
    LaplaceSettings,
    PosteriorKind,
    SampleSettings,
)
from probrank.models.interactive.warmstart import WarmStartSettings

__all__ = ["InteractiveExperimentSettings"]


@dataclass(frozen=True)
class InteractiveData:
    """``[data]``: the evaluation questions."""

    dataset: Annotated[str, OneOf(dataset_names(graded=True))] | None = None
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
        hints = {name: typing.get_type_hints(kind) for name, kind in OPTION_TABLES.items()}
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


@dataclass(frozen=True)
class InteractiveExperimentSettings:
    """An ``interactive`` config (:mod:`probrank.experiments.interactive.cells`), also read for its
    option tables by ``probrank interactive --config``."""

    experiment: Experiment
    data: InteractiveData | None = None
    evaluation: InteractiveEvaluation | None = None
    grid: Annotated[list[GridCell], NonEmpty()] | None = None  # default one cell of defaults
    tune: Tune | None = None
    encoder: Encoder | None = None
    output: Output | None = None
    warm_start: WarmStartSettings | None = None
    update: IncrementalUpdate | None = None
    mcdropout: SampleSettings | None = None
    swag: SampleSettings | None = None
    laplace: LaplaceSettings | None = None
    gppl: GPPLSettings | None = None
