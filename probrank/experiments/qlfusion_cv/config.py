"""The typed settings (schema) of ``qlfusion_cv`` configs.

``[quantifier]`` is :class:`~probrank.models.qlfusion.QLFusionSettings` key for key (checked
against :data:`Quantifier`, built by the settings themselves, ``depth`` from ``[protocol]``);
``[smoke]`` holds overrides of the other tables that ``--smoke`` merges over them
(:func:`~probrank.experiments.load_config` with ``smoke=True``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any, Union

from probrank._config import CheckedAs, NonEmpty, Range, SchemaError
from probrank.data.trec import OnDuplicate
from probrank.experiments.tables import (
    NonNegativeInt,
    OneOf,
    Output,
    PositiveInt,
    SingleThreadExperiment,
)
from probrank.models.qlfusion import VARIANTS, QLFusionSettings

__all__ = ["DEFAULT_MEASURES", "QLFusionExperimentSettings", "Quantifier"]

DEFAULT_MEASURES = (
    "P@5", "R@5", "nDCG@5", "P@10", "R@10", "nDCG@10", "P@20", "R@20", "nDCG@20",
)  # fmt: skip
"""The measures of the paper's tables (``[protocol] measures``)."""


@dataclass(frozen=True)
class RunFilesSettings:
    """``[data]``: the folder (``shared`` under the shared data, or ``path`` beside the
    config; one of them required), the qrels and a glob of run files in it."""

    shared: str | None = None
    path: str | None = None
    qrels: str = "qrels.txt"
    runs: str = "runs/*"
    on_duplicate: Annotated[str, OneOf.enum(OnDuplicate)] = OnDuplicate.ERROR.value

    @classmethod
    def check_table(cls, table: Mapping[str, Any]) -> None:
        """``shared`` or ``path`` is given."""
        if "shared" not in table and "path" not in table:
            raise SchemaError(("shared",), "missing: [data] needs 'shared' or 'path'")


@dataclass(frozen=True)
class RunFilesOverrideSettings:
    """``[smoke.data]``: keys of ``[data]`` that ``--smoke`` replaces."""

    shared: str | None = None
    path: str | None = None
    qrels: str | None = None
    runs: str | None = None
    on_duplicate: Annotated[str, OneOf.enum(OnDuplicate)] | None = None


@dataclass(frozen=True)
class CrossValidationSettings:
    """``[protocol]``: folds, input runs, depth, measures and variants."""

    folds: Annotated[int, Range(3)] = 10
    fold_seed: NonNegativeInt = 0
    depth: PositiveInt = 100
    top_runs: PositiveInt = 6
    measures: Annotated[list[str], NonEmpty()] = field(
        default_factory=lambda: list(DEFAULT_MEASURES)
    )
    variants: Annotated[list[str], NonEmpty(), OneOf(tuple(VARIANTS))] = field(
        default_factory=lambda: list(VARIANTS)
    )
    topics: PositiveInt | None = None  # the first N topics only (smoke runs); None: all


@dataclass(frozen=True)
class CrossValidationOverrideSettings:
    """``[smoke.protocol]``: keys of ``[protocol]`` that ``--smoke`` replaces."""

    folds: Annotated[int, Range(3)] | None = None
    fold_seed: NonNegativeInt | None = None
    depth: PositiveInt | None = None
    top_runs: PositiveInt | None = None
    measures: Annotated[list[str], NonEmpty()] | None = None
    variants: Annotated[list[str], NonEmpty(), OneOf(tuple(VARIANTS))] | None = None
    topics: PositiveInt | None = None


_SET_ELSEWHERE = {
    "depth": "[protocol] depth",
    "seed": "--seeds",
    "progress": "--quiet",
}
"""Fields of :class:`~probrank.models.qlfusion.QLFusionSettings` that other parts of the
config or the command line set."""


def _schema_hint(hint: Any) -> Any:
    """The TOML schema type of a settings field's type."""
    if isinstance(hint, type) and issubclass(hint, Enum):
        return Annotated[str, OneOf.enum(hint)]
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        return Annotated[list[item], NonEmpty()]  # type: ignore[valid-type]
    options = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (Union, types.UnionType) and len(options) == 1:
        return options[0]
    return hint


def _field_hint(f: dataclasses.Field[Any], hint: Any) -> Any:
    """A field's schema type; a prior or likelihood (``metadata["plugin"]``) keeps its
    :class:`~probrank._plugins.PluginField`, so that :func:`~probrank.experiments.load_config`
    imports and probes a ``"module:callable"`` before any work."""
    marker = f.metadata.get("plugin")
    return Annotated[str, marker] if marker is not None else _schema_hint(hint)


def _quantifier_schema() -> type:
    """``[quantifier]``: :class:`~probrank.models.qlfusion.QLFusionSettings` key for key
    (every key optional, its default the settings'; the keys of ``_SET_ELSEWHERE``
    excepted), each value checked by the settings themselves."""
    hints = typing.get_type_hints(QLFusionSettings)
    fields = [
        (f.name, _field_hint(f, hints[f.name]) | None, None)
        for f in dataclasses.fields(QLFusionSettings)
        if f.name not in _SET_ELSEWHERE
    ]

    def check_table(cls: type, table: Mapping[str, Any]) -> None:
        QLFusionSettings.check_table(table)

    schema = dataclasses.make_dataclass(
        "Quantifier",
        fields,
        frozen=True,
        namespace={
            "check_table": classmethod(check_table),
            "__doc__": _quantifier_schema.__doc__,
        },
    )
    schema.__module__ = __name__
    return schema


Quantifier = _quantifier_schema()


@dataclass(frozen=True)
class QLFusionSmokeSettings:
    """``[smoke]``: overrides of ``--smoke`` runs, merged over the tables they name."""

    data: RunFilesOverrideSettings | None = None
    protocol: CrossValidationOverrideSettings | None = None
    quantifier: Quantifier | None = None  # type: ignore[valid-type]


@dataclass(frozen=True)
class QLFusionExperimentSettings:
    """A ``qlfusion_cv`` config (:mod:`probrank.experiments.qlfusion_cv`): its typed settings,
    one field per table. ``quantifier`` is the model's
    :class:`~probrank.models.qlfusion.QLFusionSettings`, its ``depth`` that of
    ``[protocol]``."""

    experiment: SingleThreadExperiment
    data: RunFilesSettings
    protocol: CrossValidationSettings = field(default_factory=CrossValidationSettings)
    quantifier: Annotated[
        QLFusionSettings,
        CheckedAs(Quantifier, QLFusionSettings.from_table),
    ] = field(default_factory=QLFusionSettings)
    smoke: QLFusionSmokeSettings | None = None

    @property
    def output(self) -> Output:
        """The model card's results folder (no ``[output]`` table: the default ``results``)."""
        return Output()

    def __post_init__(self) -> None:
        if self.quantifier.depth != self.protocol.depth:  # [protocol] depth sets the model's
            object.__setattr__(
                self, "quantifier", dataclasses.replace(self.quantifier, depth=self.protocol.depth)
            )
