"""Settings of :class:`~probrank.models.interactive.model.InteractiveRanker`.

:class:`InteractiveRankerSettings` names the posterior (:class:`PosteriorKind`), the pair strategy
(:class:`~probrank.acquisition.select.Strategy`), the warm-start seed, and one option table per
part, each a frozen dataclass with the defaults chosen on MEDIQA validation (the model card's):
``warm_start`` (:class:`~probrank.models.interactive.warmstart.WarmStartSettings`), ``update``
(:class:`~probrank.posteriors.neural.IncrementalUpdate`, the SGD update after each judgement),
``mcdropout`` and ``swag`` (:class:`SampleSettings`), ``laplace`` (:class:`LaplaceSettings`) and
``gppl`` (:class:`GPPLSettings`). The tables are the same as the ``[warm_start]``, ``[update]``, ...
tables of an ``interactive`` experiment config.

A table may be given as its dataclass or as a mapping of some of its keys (the rest default);
every value is checked (:class:`~probrank.exceptions.InputDataError` naming the table and key).
:meth:`InteractiveRankerSettings.to_json` / :meth:`~InteractiveRankerSettings.from_json` turn
the settings into the plain JSON a saved model's manifest holds and back.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from probrank._options import parse_enum
from probrank.acquisition.select import Strategy
from probrank.exceptions import InputDataError
from probrank.models._settings import (
    check_fraction,
    check_positive,
    check_positive_int,
    int_tuple,
    set_enum,
    set_value,
)
from probrank.models.interactive.warmstart import WarmStartSettings
from probrank.nn.siamese import Activation
from probrank.posteriors.bradley_terry import Link
from probrank.posteriors.neural import IncrementalUpdate

__all__ = [
    "OPTION_TABLES",
    "GPPLPrior",
    "GPPLSettings",
    "IncrementalUpdate",
    "InteractiveRankerSettings",
    "LaplaceSettings",
    "PosteriorKind",
    "SampleSettings",
]


class PosteriorKind(str, Enum):
    """Posteriors over a question's candidate utilities."""

    MCDROPOUT = "mcdropout"
    """MC dropout, ``T`` passes, SGD update (``posteriors.neural.MCDropoutPosterior``)."""
    SWAG = "swag"
    """SWAG over the last layers, SGD update (``posteriors.swag.SWAGUtilityPosterior``)."""
    LAPLACE = "laplace"
    """Last-layer Laplace, closed-form update (``posteriors.laplace.LastLayerLaplacePosterior``)."""
    ENSEMBLE = "ensemble"
    """Deep ensemble, SGD update per member (``posteriors.neural.EnsemblePosterior``)."""
    GPPL = "gppl"
    """BoTorch ``PairwiseGP`` on fixed embeddings (``posteriors.gppl.GPPLPosterior``)."""


class GPPLPrior(str, Enum):
    """The prior mean of the GPPL posterior."""

    COSINE = "cosine"
    """``prior_scale`` times the cosine of the question and answer embeddings (no network)."""
    WARM_START = "warm_start"
    """``prior_scale`` times the warm-start network's utility."""


@dataclass(frozen=True)
class SampleSettings:
    """Sample-based posteriors: ``num_samples`` dropout passes / SWAG draws (``>= 2``)."""

    num_samples: int = 20


@dataclass(frozen=True)
class LaplaceSettings:
    """Last-layer Laplace: prior precision, residual variance, likelihood scale and link
    (``"logistic"`` or ``"probit"``)."""

    prior_precision: float = 10.0
    residual_variance: float = 0.1
    scale: float = 0.3
    link: str = "logistic"


@dataclass(frozen=True)
class GPPLSettings:
    """GPPL: the prior mean (:class:`GPPLPrior`) and the kernel's scales."""

    prior: str = "cosine"
    prior_scale: float = 1.0
    lengthscale_factor: float = 0.25
    outputscale: float = 1.0


OPTION_TABLES: Mapping[str, type] = {
    "warm_start": WarmStartSettings,
    "update": IncrementalUpdate,
    "mcdropout": SampleSettings,
    "swag": SampleSettings,
    "laplace": LaplaceSettings,
    "gppl": GPPLSettings,
}
"""The option tables of :class:`InteractiveRankerSettings`, by field name."""


def _table(name: str, kind: type, value: object) -> Any:
    """``value`` as the dataclass ``kind`` (a mapping of some keys is filled with defaults)."""
    if isinstance(value, kind):
        return value
    if not isinstance(value, Mapping):
        raise InputDataError(f"[{name}] must be a {kind.__name__} or a table, got {value!r}")
    known = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(str(k) for k in value if k not in known)
    if unknown:
        raise InputDataError(
            f"[{name}] has no option {unknown[0]!r}; known: {', '.join(sorted(known))}"
        )
    defaults = kind()
    values = {
        k: tuple(v) if isinstance(getattr(defaults, k), tuple) and isinstance(v, list) else v
        for k, v in value.items()
    }
    return dataclasses.replace(defaults, **values)


def _override(current: Any, table: Mapping[str, Any], name: str) -> Any:
    """``current`` (an option table) with the keys of ``table`` replaced, each of the kind of
    its default (a list for a tuple, a float for an integer given for a float)."""
    known = {f.name for f in dataclasses.fields(current)}
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
        elif isinstance(old, int | float) and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            raise InputDataError(f"[{name}] {key} must be a number, got {value!r}")
        elif isinstance(old, int) and isinstance(value, float) and not value.is_integer():
            raise InputDataError(f"[{name}] {key} must be an integer, got {value!r}")
        values[key] = type(old)(value) if isinstance(old, int | float) else value
    return dataclasses.replace(current, **values)


def _number(where: str, value: object, *, low: float, strict: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputDataError(f"{where} must be a finite number, got {value!r}")
    if value < low or (strict and value == low):
        raise InputDataError(f"{where} must be {'>' if strict else '>='} {low:g}, got {value!r}")


def _flag(where: str, value: object) -> None:
    if not isinstance(value, bool):
        raise InputDataError(f"{where} must be true or false, got {value!r}")


def _check_warm_start(o: WarmStartSettings) -> WarmStartSettings:
    hidden = int_tuple("[warm_start] hidden", o.hidden)
    _number("[warm_start] dropout", o.dropout, low=0.0, strict=False)
    if o.dropout >= 1.0:
        raise InputDataError(f"[warm_start] dropout must lie in [0, 1), got {o.dropout!r}")
    activation = parse_enum(Activation, o.activation, "[warm_start] activation").value
    check_positive("[warm_start] lr", o.lr)
    for key in ("weight_decay", "margin"):
        _number(f"[warm_start] {key}", getattr(o, key), low=0.0, strict=False)
    check_fraction("[warm_start] momentum", o.momentum)
    for key in ("batch_size", "max_epochs", "patience", "swag_epochs", "swag_layers"):
        check_positive_int(f"[warm_start] {key}", getattr(o, key))
    check_positive_int("[warm_start] ensemble_size", o.ensemble_size)
    if o.swag_layers > len(hidden) + 1:
        raise InputDataError(
            f"[warm_start] swag_layers must be at most {len(hidden) + 1} (the network's linear "
            f"layers), got {o.swag_layers}"
        )
    return dataclasses.replace(o, hidden=hidden, activation=activation)


def _check_update(o: IncrementalUpdate) -> IncrementalUpdate:
    check_positive("[update] lr", o.lr)
    check_fraction("[update] momentum", o.momentum)
    for key in ("max_epochs", "batch_size"):
        check_positive_int(f"[update] {key}", getattr(o, key))
    for key in ("prior_precision", "margin"):
        _number(f"[update] {key}", getattr(o, key), low=0.0, strict=False)
    _flag("[update] replay", o.replay)
    _flag("[update] dropout", o.dropout)
    if isinstance(o.layers, bool) or not isinstance(o.layers, int) or o.layers < 0:
        raise InputDataError(f"[update] layers must be an integer >= 0, got {o.layers!r}")
    if isinstance(o.seed, bool) or not isinstance(o.seed, int):
        raise InputDataError(f"[update] seed must be an integer, got {o.seed!r}")
    return o


def _samples(name: str) -> Callable[[SampleSettings], SampleSettings]:
    def check(o: SampleSettings) -> SampleSettings:
        if isinstance(o.num_samples, bool) or not isinstance(o.num_samples, int):
            raise InputDataError(f"[{name}] num_samples must be an integer, got {o.num_samples!r}")
        if o.num_samples < 2:
            raise InputDataError(f"[{name}] num_samples must be at least 2, got {o.num_samples}")
        return o

    return check


def _check_laplace(o: LaplaceSettings) -> LaplaceSettings:
    check_positive("[laplace] prior_precision", o.prior_precision)
    _number("[laplace] residual_variance", o.residual_variance, low=0.0, strict=False)
    check_positive("[laplace] scale", o.scale)
    return dataclasses.replace(o, link=parse_enum(Link, o.link, "[laplace] link").value)


def _check_gppl(o: GPPLSettings) -> GPPLSettings:
    prior = parse_enum(GPPLPrior, o.prior, "[gppl] prior").value
    _number("[gppl] prior_scale", o.prior_scale, low=-math.inf, strict=False)
    check_positive("[gppl] lengthscale_factor", o.lengthscale_factor)
    check_positive("[gppl] outputscale", o.outputscale)
    return dataclasses.replace(o, prior=prior)


_CHECKS: Mapping[str, Callable[[Any], Any]] = {
    "warm_start": _check_warm_start,
    "update": _check_update,
    "mcdropout": _samples("mcdropout"),
    "swag": _samples("swag"),
    "laplace": _check_laplace,
    "gppl": _check_gppl,
}


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class InteractiveRankerSettings:
    """Settings of :class:`~probrank.models.interactive.model.InteractiveRanker`.

    Attributes:
        posterior: :class:`PosteriorKind` of the sessions (the card's best: ``"laplace"``).
        strategy: Pair strategy of the sessions
            (:class:`~probrank.acquisition.select.Strategy`; the paper's ``"ei"``).
        warm_start: :class:`~probrank.models.interactive.warmstart.WarmStartSettings` of
            :meth:`~probrank.models.interactive.model.InteractiveRanker.fit`.
        update: :class:`~probrank.posteriors.neural.IncrementalUpdate` after each judgement
            (MC dropout, SWAG, ensemble); its ``seed`` is replaced by the session's seed.
        mcdropout: :class:`SampleSettings` of MC dropout (passes ``T``).
        swag: :class:`SampleSettings` of SWAG (weight draws ``S``).
        laplace: :class:`LaplaceSettings` of the last-layer Laplace posterior.
        gppl: :class:`GPPLSettings` of the GPPL posterior.
        validation_fraction: Share of the lists
            :meth:`~probrank.models.interactive.model.InteractiveRanker.fit` holds out for early
            stopping when no validation lists are given.
        seed: Seed of the warm start (initialisation, shuffling, dropout, SWAG, ensemble).
    """

    posterior: PosteriorKind = PosteriorKind.LAPLACE
    strategy: Strategy = Strategy.EI
    warm_start: WarmStartSettings = field(default_factory=WarmStartSettings)
    update: IncrementalUpdate = field(default_factory=IncrementalUpdate)
    mcdropout: SampleSettings = field(default_factory=SampleSettings)
    swag: SampleSettings = field(default_factory=SampleSettings)
    laplace: LaplaceSettings = field(default_factory=LaplaceSettings)
    gppl: GPPLSettings = field(default_factory=GPPLSettings)
    validation_fraction: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        set_enum(self, "posterior", PosteriorKind)
        set_enum(self, "strategy", Strategy)
        for name, kind in OPTION_TABLES.items():
            set_value(self, name, _CHECKS[name](_table(name, kind, getattr(self, name))))
        check_fraction("validation_fraction", self.validation_fraction)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InputDataError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.posterior is PosteriorKind.ENSEMBLE and self.warm_start.ensemble_size < 2:
            raise InputDataError(
                "the ensemble posterior needs [warm_start] ensemble_size >= 2, got "
                f"{self.warm_start.ensemble_size}"
            )

    @property
    def needs_warm_start(self) -> bool:
        """Whether the posterior uses the warm-start network (GPPL with the cosine prior
        does not)."""
        return not (
            self.posterior is PosteriorKind.GPPL and self.gppl.prior == GPPLPrior.COSINE.value
        )

    def tables(self) -> dict[str, Any]:
        """The option tables by name (``{"warm_start": WarmStartSettings(...), ...}``)."""
        return {name: getattr(self, name) for name in OPTION_TABLES}

    def tables_json(self) -> dict[str, Any]:
        """The option tables as plain JSON (the ``settings`` of an experiment's results)."""
        return {name: dataclasses.asdict(table) for name, table in self.tables().items()}

    @classmethod
    def from_tables(cls, config: Mapping[str, Any]) -> InteractiveRankerSettings:
        """Defaults overridden by the option tables (``[warm_start]``, ``[update]``,
        ``[mcdropout]``, ``[swag]``, ``[laplace]``, ``[gppl]``) of a config; its other tables
        are not read.

        Raises:
            InputDataError: An unknown key or a value of the wrong kind.
        """
        tables = {name: config[name] for name in OPTION_TABLES if config.get(name)}
        return cls().with_tables(tables)

    def with_tables(self, tables: Mapping[str, Mapping[str, Any]]) -> InteractiveRankerSettings:
        """A copy with some keys of some option tables replaced (``{"laplace": {"scale":
        2.0}}``); numbers keep the type of the default (an integer ``lr = 1`` is ``1.0``)."""
        unknown = [name for name in tables if name not in OPTION_TABLES]
        if unknown:
            raise InputDataError(f"unknown options table {unknown[0]!r}")
        return dataclasses.replace(
            self,
            **{name: _override(getattr(self, name), table, name) for name, table in tables.items()},
        )

    def with_overrides(self, overrides: Mapping[str, Any]) -> InteractiveRankerSettings:
        """A copy with ``{"table.key": value}`` overrides (as in a tuning grid)."""
        tables: dict[str, dict[str, Any]] = {}
        for name, value in overrides.items():
            table, _, key = name.partition(".")
            if not key:
                raise InputDataError(f"override {name!r} must be 'table.key'")
            tables.setdefault(table, {})[key] = value
        return self.with_tables(tables)

    def for_cell(
        self,
        posterior: PosteriorKind | str,
        strategy: Strategy | str | None = None,
        seed: int | None = None,
    ) -> InteractiveRankerSettings:
        """A copy with another posterior (and strategy, seed): one cell of an experiment."""
        changes: dict[str, Any] = {"posterior": posterior}
        if strategy is not None:
            changes["strategy"] = strategy
        if seed is not None:
            changes["seed"] = seed
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: enums by value, tables as objects, tuples as lists."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> InteractiveRankerSettings:
        """Settings from :meth:`to_json`'s output (validated again).

        Raises:
            InputDataError: not a mapping, unknown keys, or invalid values.
        """
        if not isinstance(data, Mapping):
            raise InputDataError(f"{cls.__name__} must be read from a JSON object, got {data!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputDataError(f"unknown {cls.__name__} keys: {unknown}")
        return cls(**dict(data))
