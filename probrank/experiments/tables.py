"""Config tables several protocols share, and the checks their fields use.

A protocol's config is a dataclass whose fields are its tables (each protocol's ``config``
module: :mod:`probrank.experiments.qlfusion_cv.config`, ...); a table is a dataclass whose fields
are its keys, with their types and ranges (:mod:`probrank._config`). Keys a protocol does not read
are not in its schema, so a typo is an error naming the key and the line instead of a setting
silently ignored. The same dataclass is the table's typed settings object
(:func:`~probrank.experiments.load_config`): a field's default is the value the protocol uses
when the config omits the key; ``None`` is left only where the default lies elsewhere (a
per-head key that inherits the shared one, an encoder key whose default differs by protocol),
as each field's comment says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, TypeVar

from probrank._config import NonEmpty, Range, as_table
from probrank.encoders.transformer import EncoderMode, Pooling
from probrank.executors.base import ExecutorKind, ExecutorSettings

S = TypeVar("S")

__all__ = [
    "Encoder",
    "Epochs",
    "Experiment",
    "NonNegativeFloat",
    "NonNegativeInt",
    "OneOf",
    "Output",
    "PositiveFloat",
    "PositiveInt",
    "QuietExperiment",
    "Rate",
    "SingleThreadExperiment",
    "given_keys",
    "settings_from_table",
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
    """``[experiment]``: the protocol's name, the table's title, torch's threads, and where the
    protocol's tasks run (:mod:`probrank.executors`)."""

    protocol: str
    title: str | None = None  # None: the protocol's "<protocol>: <config stem>"
    threads: PositiveInt | None = None  # None: the protocol's default (each protocol's table)
    executor: Annotated[str, OneOf.enum(ExecutorKind)] = ExecutorKind.LOCAL.value
    ray_address: Annotated[str, NonEmpty()] | None = None  # None: a local Ray instance

    def executor_settings(self) -> ExecutorSettings:
        """Where the protocol's tasks run."""
        return ExecutorSettings(kind=ExecutorKind(self.executor), address=self.ray_address)


@dataclass(frozen=True)
class SingleThreadExperiment(Experiment):
    """``[experiment]`` of the protocols that default to one torch thread."""

    threads: PositiveInt = 1


@dataclass(frozen=True)
class QuietExperiment(Experiment):
    """``[experiment]`` of the GPF and cascade protocols: two torch threads by default, and
    ``quiet`` (no progress bars)."""

    threads: PositiveInt = 2
    quiet: bool = False


@dataclass(frozen=True)
class Output:
    """``[output]``: the model card's results folder beside the config, which ``--update-card``
    replaces, and whether it may (runs always write to their own run folder)."""

    folder: str = "results"
    save: bool = True  # false refuses --update-card


@dataclass(frozen=True)
class Encoder:
    """``[encoder]`` (:func:`probrank.encoders.config.encoder_from_config`); a key left None
    takes the encoder's default for the protocol (``mode``, ``pooling`` and ``max_length``
    differ between protocols), so only the keys a config sets are passed on
    (:meth:`table`)."""

    name_or_path: str | None = None  # default: the packaged all-MiniLM-L6-v2
    model: str | None = None  # alias of name_or_path
    mode: Annotated[str, OneOf.enum(EncoderMode)] | None = None
    pooling: Annotated[str, OneOf.enum(Pooling)] | None = None
    max_length: PositiveInt | None = None
    batch_size: PositiveInt | None = None
    cache_dir: str | None = None  # default ".probrank-cache"; "" disables the cache
    show_progress: bool | None = None
    progress: bool | None = None  # alias of show_progress

    def table(self, **changes: Any) -> dict[str, Any]:
        """The keys the config sets, in its order, as the table
        :func:`~probrank.encoders.config.encoder_from_config` reads (``changes`` over them)."""
        return {**given_keys(self), **changes}


def settings_from_table(kind: type[S]) -> Callable[[Mapping[str, Any]], S]:
    """The :class:`~probrank._config.CheckedAs` builder of a table that is a model's settings
    object key for key: ``kind(**table)`` with the TOML arrays as tuples (the settings
    validate the values)."""

    def build(table: Mapping[str, Any]) -> S:
        return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in table.items()})

    build.__qualname__ = build.__name__ = f"{kind.__name__}_from_table"
    return build


def given_keys(table: Any) -> dict[str, Any]:
    """The keys a config set in a settings table, in the config's order, nested tables as
    dicts (:func:`probrank._config.as_table`)."""
    return as_table(table)
