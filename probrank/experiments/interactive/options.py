"""The options of the interactive experiments and how a cell's ranker is set up.

The posteriors, their option tables and how each is built live in
:mod:`probrank.models.interactive` (:class:`~probrank.models.InteractiveRanker`); this module
reads a config's option tables (:class:`InteractiveOptions`: every setting with the defaults
chosen on MEDIQA validation; a config's tables override them, unknown keys are an error) and
turns them, with a cell's posterior and strategy and a seed, into the ranker's settings
(:func:`ranker_settings`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probrank._options import parse_enum
from probrank.acquisition.select import Strategy
from probrank.exceptions import InputDataError
from probrank.models.interactive.settings import (
    GPPLOptions,
    InteractiveRankerSettings,
    LaplaceOptions,
    PosteriorKind,
    SampleOptions,
)
from probrank.models.interactive.warmstart import WarmStartOptions
from probrank.posteriors.neural import IncrementalUpdate

__all__ = [
    "GPPLOptions",
    "InteractiveOptions",
    "LaplaceOptions",
    "PosteriorKind",
    "SampleOptions",
    "needs_warm_start",
    "ranker_settings",
]


@dataclass(frozen=True)
class InteractiveOptions:
    """Every setting of the interactive experiments (config tables of the same names)."""

    warm_start: WarmStartOptions = field(default_factory=WarmStartOptions)
    update: IncrementalUpdate = field(default_factory=IncrementalUpdate)
    mcdropout: SampleOptions = field(default_factory=SampleOptions)
    swag: SampleOptions = field(default_factory=SampleOptions)
    laplace: LaplaceOptions = field(default_factory=LaplaceOptions)
    gppl: GPPLOptions = field(default_factory=GPPLOptions)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> InteractiveOptions:
        """Defaults overridden by the tables ``[warm_start]``, ``[update]``, ``[mcdropout]``,
        ``[swag]``, ``[laplace]``, ``[gppl]`` of ``config``.

        Raises:
            InputDataError: An unknown key or a value of the wrong kind.
        """
        base = cls()
        changes = {}
        for f in dataclasses.fields(cls):
            table = config.get(f.name)
            if table:
                changes[f.name] = _override(getattr(base, f.name), table, f.name)
        return dataclasses.replace(base, **changes)

    def with_overrides(self, overrides: Mapping[str, Any]) -> InteractiveOptions:
        """A copy with ``{"table.key": value}`` overrides (as in a tuning grid)."""
        tables: dict[str, dict[str, Any]] = {}
        for name, value in overrides.items():
            table, _, key = name.partition(".")
            if not key:
                raise InputDataError(f"override {name!r} must be 'table.key'")
            tables.setdefault(table, {})[key] = value
        unknown = [t for t in tables if t not in {f.name for f in dataclasses.fields(self)}]
        if unknown:
            raise InputDataError(f"unknown options table {unknown[0]!r}")
        return dataclasses.replace(
            self, **{t: _override(getattr(self, t), v, t) for t, v in tables.items()}
        )


def _override(current: Any, table: Mapping[str, Any], name: str) -> Any:
    known = {f.name: f for f in dataclasses.fields(current)}
    values = {}
    for key, value in table.items():
        if key not in known:
            raise InputDataError(
                f"[{name}] has no option {key!r}; known: {', '.join(sorted(known))}"
            )
        old = getattr(current, key)
        if isinstance(old, tuple):
            value = tuple(value)
        elif isinstance(old, bool):
            if not isinstance(value, bool):
                raise InputDataError(f"[{name}] {key} must be true or false, got {value!r}")
        elif isinstance(old, int | float) and not isinstance(value, int | float):
            raise InputDataError(f"[{name}] {key} must be a number, got {value!r}")
        elif isinstance(old, int) and isinstance(value, float) and not value.is_integer():
            raise InputDataError(f"[{name}] {key} must be an integer, got {value!r}")
        values[key] = type(old)(value) if isinstance(old, int | float) else value
    return dataclasses.replace(current, **values)


def ranker_settings(
    kind: PosteriorKind,
    options: InteractiveOptions,
    seed: int,
    strategy: Strategy | str = Strategy.EI,
) -> InteractiveRankerSettings:
    """The :class:`~probrank.models.InteractiveRanker` settings of one cell and seed.

    Args:
        kind: The posterior.
        options: The option tables.
        seed: The warm start's seed (the sessions take the same seed).
        strategy: The pair strategy.
    """
    tables = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    chosen = parse_enum(Strategy, strategy, "strategy")
    return InteractiveRankerSettings(posterior=kind, strategy=chosen, seed=seed, **tables)


def needs_warm_start(kind: PosteriorKind, options: InteractiveOptions) -> bool:
    """Whether ``kind`` uses the warm-start network (GPPL with the cosine prior does not)."""
    return ranker_settings(kind, options, 0).needs_warm_start
