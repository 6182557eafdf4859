"""The typed schema of ``interactive`` configs (also read by ``probrank interactive --config``
for its option tables)."""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from probrank._config import NonEmpty, SchemaError, check_value
from probrank.acquisition.select import Strategy
from probrank.data.datasets import DatasetName, dataset_names
from probrank.experiments.tables import (
    Encoder,
    NonNegativeInt,
    OneOf,
    Output,
    PositiveFloat,
    SingleThreadExperiment,
)
from probrank.models.interactive.settings import (
    OPTION_TABLES,
    GPPLSettings,
    IncrementalUpdate,
    InteractiveRankerSettings,
    LaplaceSettings,
    PosteriorKind,
    SampleSettings,
)
from probrank.models.interactive.warmstart import WarmStartSettings

__all__ = ["REPORTED_ROUNDS", "InteractiveExperimentSettings"]

REPORTED_ROUNDS = (0, 1, 2, 4, 10)
"""Rounds whose accuracy and NDCG@5 the results table reports (``[evaluation] rounds``)."""


@dataclass(frozen=True)
class InteractiveDataSettings:
    """``[data]``: the evaluation questions."""

    dataset: Annotated[str, OneOf(dataset_names(graded=True))] = DatasetName.LIVEQA_MED.value
    split: str = "test"
    max_questions: NonNegativeInt = 0  # 0: all


@dataclass(frozen=True)
class InteractiveEvaluationSettings:
    """``[evaluation]``: the rounds reported."""

    rounds: Annotated[list[NonNegativeInt], NonEmpty()] = field(
        default_factory=lambda: list(REPORTED_ROUNDS)
    )


Posteriors = Annotated[list[str], NonEmpty(), OneOf.enum(PosteriorKind)]
Strategies = Annotated[list[str], NonEmpty(), OneOf.enum(Strategy)]
Noises = Annotated[list[PositiveFloat], NonEmpty()]


@dataclass(frozen=True)
class GridCellSettings:
    """One ``[[grid]]`` table: every posterior x strategy x user noise."""

    posteriors: Posteriors = field(default_factory=lambda: [PosteriorKind.LAPLACE.value])
    strategies: Strategies = field(default_factory=lambda: [Strategy.EI.value])
    noises: Noises = field(default_factory=lambda: [0.3])


@dataclass(frozen=True)
class TuneSettings:
    """``[tune]``: a search over ``[tune.grid]`` (``"table.key" = [values]``)."""

    posterior: Annotated[str, OneOf.enum(PosteriorKind)] = PosteriorKind.LAPLACE.value
    posteriors: Posteriors | None = None  # several, instead of posterior
    strategy: Annotated[str, OneOf.enum(Strategy)] = Strategy.EI.value
    noises: Noises = field(default_factory=lambda: [0.3])
    rounds: NonNegativeInt = 4
    grid: dict[str, Annotated[list[Any], NonEmpty()]] = field(default_factory=dict)

    @property
    def posterior_kinds(self) -> list[str]:
        """The posteriors searched: ``posteriors``, else ``[posterior]``."""
        return list(self.posteriors) if self.posteriors is not None else [self.posterior]

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """Every grid key names an option of an option table; every value fits it."""
        hints = {name: typing.get_type_hints(kind) for name, kind in OPTION_TABLES.items()}
        for name, values in (table["grid"] if "grid" in table else {}).items():
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
    """An ``interactive`` config (:mod:`probrank.experiments.interactive.protocol`), also read for
    its option tables by ``probrank interactive --config``: its typed settings, one field per
    table. The option tables (``[warm_start]``, ``[update]``, ``[mcdropout]``, ``[swag]``,
    ``[laplace]``, ``[gppl]``) are the model's own settings objects, together
    :attr:`ranker`; a ``[tune]`` table (None without one) makes the run a search."""

    experiment: SingleThreadExperiment
    data: InteractiveDataSettings = field(default_factory=InteractiveDataSettings)
    evaluation: InteractiveEvaluationSettings = field(default_factory=InteractiveEvaluationSettings)
    grid: Annotated[list[GridCellSettings], NonEmpty()] = field(
        default_factory=lambda: [GridCellSettings()]
    )
    tune: TuneSettings | None = None
    encoder: Encoder = field(default_factory=Encoder)
    output: Output = field(default_factory=Output)
    warm_start: WarmStartSettings = field(default_factory=WarmStartSettings)
    update: IncrementalUpdate = field(default_factory=IncrementalUpdate)
    mcdropout: SampleSettings = field(default_factory=SampleSettings)
    swag: SampleSettings = field(default_factory=SampleSettings)
    laplace: LaplaceSettings = field(default_factory=LaplaceSettings)
    gppl: GPPLSettings = field(default_factory=GPPLSettings)

    def __post_init__(self) -> None:
        self.ranker  # noqa: B018 - the option tables are checked together before any work

    @functools.cached_property
    def ranker(self) -> InteractiveRankerSettings:
        """The :class:`~probrank.models.interactive.settings.InteractiveRankerSettings` of the
        option tables (the model's other settings at their defaults).

        Raises:
            InputDataError: the tables do not fit together (e.g. ``[warm_start] swag_layers``
                beyond the network's layers).
        """
        return InteractiveRankerSettings(**{name: getattr(self, name) for name in OPTION_TABLES})
