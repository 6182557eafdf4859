"""Config tables several protocols share, and the checks their fields use.

A protocol's config is a dataclass whose fields are its tables (each protocol's ``config``
module: :mod:`probrank.experiments.qlfusion_cv.config`, ...); a table is a dataclass whose fields
are its keys, with their types and ranges (:mod:`probrank._config`). Keys a protocol does not read
are not in its schema, so a typo is an error naming the key and the line instead of a setting
silently ignored. Optional keys are ``None``: the protocol's own default applies (given in each
field's comment).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

from probrank._config import NonEmpty, Range
from probrank.encoders.transformer import EncoderMode, Pooling
from probrank.executors.base import ExecutorKind

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
    title: str | None = None  # default "<protocol>: <config stem>"
    threads: PositiveInt | None = None  # default: the protocol's (1 or 2)
    executor: Annotated[str, OneOf.enum(ExecutorKind)] | None = None  # default "local"
    ray_address: Annotated[str, NonEmpty()] | None = None  # default: a local Ray instance


@dataclass(frozen=True)
class QuietExperiment(Experiment):
    """``[experiment]`` of the GPF protocols: also ``quiet`` (no progress bars)."""

    quiet: bool | None = None  # default false


@dataclass(frozen=True)
class Output:
    """``[output]``: the model card's results folder beside the config, which ``--update-card``
    replaces, and whether it may (runs always write to their own run folder)."""

    folder: str | None = None  # default "results"
    save: bool | None = None  # default true; false refuses --update-card


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
