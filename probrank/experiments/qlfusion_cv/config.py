"""The typed schema of ``qlfusion_cv`` configs."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Union

from probrank._config import NonEmpty, Range, SchemaError
from probrank.data.trec import OnDuplicate
from probrank.experiments.tables import (
    Experiment,
    NonNegativeInt,
    OneOf,
    PositiveInt,
)
from probrank.models.qlfusion import VARIANTS, QLFusionSettings

__all__ = ["QLFusionConfig"]


@dataclass(frozen=True)
class RunFiles:
    """``[data]``: the folder (``shared`` under the shared data, or ``path`` beside the
    config), the qrels and a glob of run files in it."""

    shared: str | None = None
    path: str | None = None
    qrels: str | None = None  # default "qrels.txt"
    runs: str | None = None  # default "runs/*"
    on_duplicate: Annotated[str, OneOf.enum(OnDuplicate)] | None = None


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
    (every key optional, its default the settings'; the keys of :data:`_SET_ELSEWHERE`
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
class QLFusionSmoke:
    """``[smoke]``: overrides of ``--smoke`` runs."""

    data: RunFiles | None = None
    protocol: CrossValidation | None = None
    quantifier: Quantifier | None = None  # type: ignore[valid-type]


@dataclass(frozen=True)
class QLFusionConfig:
    """A ``qlfusion_cv`` config (:mod:`probrank.experiments.qlfusion_cv`)."""

    experiment: Experiment
    data: RunFilesRequired
    protocol: CrossValidation | None = None
    quantifier: Quantifier | None = None  # type: ignore[valid-type]
    smoke: QLFusionSmoke | None = None
