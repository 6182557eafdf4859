"""The typed schema of a saved model's ``manifest.json``, checked at every level.

:mod:`probrank.models._persist` writes the manifest; a user may edit it, a disk may damage
it, another program may write one. Before any model's ``load`` reads a value, the whole
manifest is parsed (:func:`parse_manifest`: invalid JSON, nesting too deep for the parser and
integers of thousands of digits are one error) and checked against :data:`MANIFEST` and the
``state`` schema of its model class (:data:`STATES`): every object's keys and every value's
type and range. A wrong value is one :class:`~probrank.exceptions.InputDataError` naming the
file and the field (``manifest.json: damaged manifest: state.run_names[2] must be a string,
got 7``), never a ``RecursionError``, ``ValueError``, ``AttributeError`` or ``TypeError`` from
inside ``load``. The settings, checked here as JSON objects, are then built by the model's
settings class through :func:`read_settings`, whose errors name the file and ``settings``.

The schema is made of a few node types (:class:`Node` subclasses): :class:`Str`, :class:`Int`,
:class:`Num`, :class:`Bool`, :class:`Optional`, :class:`OneOf`, :class:`ListOf`,
:class:`MapOf`, :class:`Obj` (named fields, required or not; unknown keys refused unless
``extra`` says what they hold) and :class:`Json` (any JSON value, nested at most
:data:`MAX_DEPTH` levels).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from probrank.exceptions import InputDataError

__all__ = [
    "MANIFEST",
    "MAX_DEPTH",
    "STATES",
    "Bool",
    "Int",
    "Json",
    "ListOf",
    "MapOf",
    "Node",
    "Num",
    "Obj",
    "OneOf",
    "Optional",
    "Str",
    "check_manifest",
    "parse_manifest",
    "read_settings",
]

MAX_DEPTH = 32
"""Deepest nesting of objects and lists a manifest may hold."""
MAX_INT = 2**63 - 1
"""Largest magnitude of an integer field (an int64)."""
S = TypeVar("S")


class _Invalid(Exception):
    """A value that does not fit its schema: ``where`` (a field path) and what is wrong."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(where, what)
        self.where = where
        self.what = what


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**18:
        return "a huge integer"
    text = json.dumps(value) if isinstance(value, str | int | float | bool) else repr(value)
    return text if len(text) <= 40 else text[:30] + "..."


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


class Node:
    """A schema node: :meth:`check` returns the value or raises naming the field."""

    expected = "a value"

    def check(self, value: Any, where: str) -> Any:
        """``value`` if it fits (see the subclasses)."""
        raise NotImplementedError

    def _fail(self, value: Any, where: str) -> _Invalid:
        return _Invalid(where, f"must be {self.expected}, got {_shown(value)}")


@dataclass(frozen=True)
class Str(Node):
    """A string (non-empty unless ``empty``; at most ``max_length`` characters)."""

    empty: bool = False
    max_length: int = 10_000

    @property
    def expected(self) -> str:  # type: ignore[override]
        """What the field must be."""
        return "a string" if self.empty else "a non-empty string"

    def check(self, value: Any, where: str) -> Any:
        """The string."""
        if not isinstance(value, str) or (not value and not self.empty):
            raise self._fail(value, where)
        if len(value) > self.max_length:
            raise _Invalid(where, f"is a string of {len(value)} characters (> {self.max_length})")
        return value


@dataclass(frozen=True)
class Int(Node):
    """An integer (not a bool) in ``minimum .. maximum``."""

    minimum: int = -MAX_INT
    maximum: int = MAX_INT

    @property
    def expected(self) -> str:  # type: ignore[override]
        """What the field must be."""
        return f"an integer from {self.minimum} to {self.maximum}"

    def check(self, value: Any, where: str) -> Any:
        """The integer."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(value, where)
        if not self.minimum <= value <= self.maximum:
            raise self._fail(value, where)
        return value


@dataclass(frozen=True)
class Num(Node):
    """A finite number (an int or a float, not a bool), ``>= minimum`` when given."""

    minimum: float | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        """What the field must be."""
        return "a finite number" + ("" if self.minimum is None else f" >= {self.minimum:g}")

    def check(self, value: Any, where: str) -> Any:
        """The number."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(value, where)
        try:
            number = float(value)
        except OverflowError:
            raise self._fail(value, where) from None
        if not math.isfinite(number) or (self.minimum is not None and number < self.minimum):
            raise self._fail(value, where)
        return value


class Bool(Node):
    """``true`` or ``false``."""

    expected = "true or false"

    def check(self, value: Any, where: str) -> Any:
        """The boolean."""
        if not isinstance(value, bool):
            raise self._fail(value, where)
        return value


@dataclass(frozen=True)
class Optional(Node):
    """``null`` or what ``node`` accepts."""

    node: Node

    def check(self, value: Any, where: str) -> Any:
        """None or the value."""
        return None if value is None else self.node.check(value, where)


@dataclass(frozen=True)
class OneOf(Node):
    """What any of ``nodes`` accepts (the first that does)."""

    nodes: tuple[Node, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        """What the field must be."""
        return " or ".join(node.expected for node in self.nodes)

    def check(self, value: Any, where: str) -> Any:
        """The value."""
        for node in self.nodes:
            try:
                return node.check(value, where)
            except _Invalid:
                continue
        raise self._fail(value, where)


@dataclass(frozen=True)
class Json(Node):
    """Any JSON value nested at most :data:`MAX_DEPTH` levels, with finite numbers and
    integers of at most int64 size (settings and training notes, checked in depth later)."""

    expected = "JSON"

    def check(self, value: Any, where: str) -> Any:
        """The value."""
        self._walk(value, where, 0)
        return value

    def _walk(self, value: Any, where: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _Invalid(where, f"is nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            for key, item in value.items():
                self._walk(item, _join(where, str(key)), depth + 1)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self._walk(item, f"{where}[{index}]", depth + 1)
        elif isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > MAX_INT:
                raise _Invalid(where, "is an integer out of range (|value| < 2**63)")
        elif isinstance(value, float) and not math.isfinite(value):
            raise _Invalid(where, f"must be a finite number, got {_shown(value)}")


@dataclass(frozen=True)
class ListOf(Node):
    """A list of what ``item`` accepts, ``minimum .. maximum`` long."""

    item: Node
    minimum: int = 0
    maximum: int = 1_000_000

    expected = "a list"

    def check(self, value: Any, where: str) -> Any:
        """The list."""
        if not isinstance(value, list):
            raise self._fail(value, where)
        if not self.minimum <= len(value) <= self.maximum:
            raise _Invalid(
                where, f"must hold {self.minimum} to {self.maximum} items, got {len(value)}"
            )
        return [self.item.check(item, f"{where}[{index}]") for index, item in enumerate(value)]


@dataclass(frozen=True)
class MapOf(Node):
    """An object whose values all fit ``value`` (keys are any strings)."""

    value: Node = field(default_factory=Json)

    expected = "an object"

    def check(self, value: Any, where: str) -> Any:
        """The object."""
        if not isinstance(value, dict):
            raise self._fail(value, where)
        return {key: self.value.check(item, _join(where, key)) for key, item in value.items()}


@dataclass(frozen=True)
class Obj(Node):
    """An object with named fields: ``fields`` maps a key to its node; keys in ``optional``
    may be absent; other keys are refused unless ``extra`` gives their node."""

    fields: Mapping[str, Node]
    optional: frozenset[str] = frozenset()
    extra: Node | None = None

    expected = "an object"

    def check(self, value: Any, where: str) -> Any:
        """The object."""
        if not isinstance(value, dict):
            raise self._fail(value, where)
        missing = [k for k in self.fields if k not in value and k not in self.optional]
        if missing:
            raise _Invalid(where or "the manifest", f"lacks {missing}")
        unknown = sorted(k for k in value if k not in self.fields)
        if unknown and self.extra is None:
            raise _Invalid(where or "the manifest", f"has unknown keys {unknown[:5]}")
        out = {}
        for key, item in value.items():
            node = self.fields.get(key) or self.extra or Json()  # unknown keys: refused above
            out[key] = node.check(item, _join(where, key))
        return out


_NAME = Str(max_length=1000)
_COUNT = Int(0)
_POSITIVE = Int(1)

ENCODER = Obj(
    {
        "class": _NAME,
        "path": Str(empty=True, max_length=4096),
        "name": Str(empty=True, max_length=1000),
        "revision": Str(max_length=200),
        "mode": _NAME,
        "pooling": _NAME,
        "max_length": Int(2, 10**7),
    },
    optional=frozenset({"class", "path", "name", "revision", "mode", "pooling", "max_length"}),
)
"""An encoder's description (:func:`probrank.models._encoder.encoder_spec`; a missing field
is an error of the encoder check, which names it)."""

TENSOR = Obj({"shape": ListOf(Int(0, 2**40), maximum=16), "dtype": Str(max_length=40)})
WEIGHTS_FILE = Obj(
    {"file": _NAME, "sha256": Str(max_length=64), "tensors": MapOf(TENSOR)},
)
"""One weights file: its name, SHA-256 and tensors (name -> shape and dtype)."""

MANIFEST = Obj(
    {
        "format_version": Int(),
        "probrank_version": _NAME,
        "model_class": _NAME,
        "settings": MapOf(Json()),
        "encoder": Optional(ENCODER),
        "state": MapOf(Json()),  # replaced by the model class's schema (STATES)
        "weights": MapOf(WEIGHTS_FILE),
    }
)
"""The top level (the ``state`` of a known model class is checked by :data:`STATES`)."""

STATES: dict[str, Node] = {
    "QLFusion": Obj(
        {"run_names": ListOf(_NAME, minimum=1), "training": MapOf(Json())},
        optional=frozenset({"training"}),
    ),
    "GPFRanker": Obj(
        {
            "head_options": MapOf(Json()),
            "in_features": _POSITIVE,
            "mean_field_factor": Num(0.0),
            "temperature": Num(0.0),
            "selected": MapOf(Num()),
            "side_features": ListOf(_NAME),
        },
        optional=frozenset({"selected", "side_features"}),
    ),
    "MultiTaskRanker": Obj(
        {
            "choice": Obj(
                {
                    "ranking_weight": Num(),
                    "seed": Int(0, 2**32 - 1),
                    "threshold": Num(),
                    "keep_top": OneOf((Bool(), _NAME)),
                },
                extra=Json(),
            ),
            "in_features": _POSITIVE,
        }
    ),
    "InteractiveRanker": Obj(
        {
            "fitted": Bool(),
            "width": _POSITIVE,
            "num_members": Int(1, 10_000),
            "validation_accuracy": Optional(Num()),
            "epochs": _COUNT,
            "swag": Optional(Obj({"num_snapshots": _COUNT, "scale": Num(0.0)})),
        },
        optional=frozenset({"width", "num_members", "validation_accuracy", "epochs", "swag"}),
    ),
    "PoolingRelevanceModel": Obj(
        {
            "num_runs": _POSITIVE,
            "num_topics": _POSITIVE,
            "depth": _POSITIVE,
            "pareto_k": Optional(Num()),
            "mcmc_divergences": Optional(_COUNT),
        },
        optional=frozenset({"pareto_k", "mcmc_divergences"}),
    ),
}
"""The ``state`` of each model class, as its ``save`` writes it."""


def _error(file: Path, where: str, what: str) -> InputDataError:
    return InputDataError(f"damaged manifest: {where} {what}", path=file)


def parse_manifest(text: str, file: Path) -> Any:
    """``manifest.json``'s text as JSON; every failure is one error naming ``file``.

    Raises:
        InputDataError: invalid JSON, nesting deeper than Python's parser goes, an integer of
            more digits than Python converts.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputDataError(f"damaged manifest (invalid JSON: {exc.msg})", path=file) from None
    except RecursionError:
        raise InputDataError("damaged manifest: nested too deeply", path=file) from None
    except ValueError:  # int(): more than sys.get_int_max_str_digits() digits
        raise InputDataError("damaged manifest: a number with too many digits", path=file) from None


def check_manifest(manifest: Mapping[str, Any], file: Path) -> dict[str, Any]:
    """Check a parsed manifest at every level (:data:`MANIFEST`, :data:`STATES`).

    Args:
        manifest: The parsed manifest.
        file: ``manifest.json`` (for the message).

    Returns:
        The manifest (the same values).

    Raises:
        InputDataError: the first field that does not fit, by its path (``weights.head.sha256``).
    """
    try:
        checked: dict[str, Any] = MANIFEST.check(dict(manifest), "")
        state = STATES.get(str(checked["model_class"]))
        if state is not None:
            checked["state"] = state.check(checked["state"], "state")
    except _Invalid as invalid:
        raise _error(file, invalid.where, invalid.what) from None
    except RecursionError:
        raise _error(file, "the manifest", "is nested too deeply") from None
    return checked


def read_settings(build: Callable[[dict[str, Any]], S], data: Mapping[str, Any], file: Path) -> S:
    """A model's settings from the manifest's ``settings`` object; one error naming the file.

    Args:
        build: The settings class's reader (``settings_from_json`` bound to the class, or
            ``Settings.from_json``).
        data: The manifest's ``settings``.
        file: ``manifest.json``.

    Raises:
        InputDataError: the settings class refuses a value (its message, after the file and
            ``settings``), or a value of a kind it cannot take at all.
    """
    try:
        return build(dict(data))
    except InputDataError as exc:
        raise InputDataError(f"damaged manifest: settings: {exc}", path=file) from None
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError, RecursionError) as exc:
        detail = " ".join(str(exc).split())[:160] or "a value of the wrong kind"
        raise InputDataError(
            f"damaged manifest: settings are invalid ({detail})", path=file
        ) from None
