"""Typed schemas for TOML config files, checked with one-line errors that name the key.

A schema is a dataclass whose fields are the keys of one table, typed with ordinary hints:
``int``, ``float`` (an integer is accepted), ``bool``, ``str``, ``Literal[...]``, ``list[T]``,
``tuple[T, ...]`` (a TOML array), ``dict[str, T]`` (a table of free keys), unions such as
``float | list[float]``, and other schema dataclasses (sub-tables; ``list[Schema]`` is an array
of tables). A field without a default is required; ``T | None = None`` marks an optional key.
``Annotated[T, check, ...]`` adds value checks (:class:`Range`, :class:`NonEmpty`, or any
callable returning an error message or None). A schema may define a classmethod
``check_table(table)`` for rules across keys; it raises :class:`SchemaError` with the key.
``Annotated[Settings, CheckedAs(Schema, build)]`` marks a table that a config writes as
``Schema`` (checked against it) and that is built into another settings object (a model's), by
``build(table)``.

A schema is also the typed settings object of its table: frozen, with the defaults of the keys
a config may omit. :func:`build_settings` turns a checked document into that object (nested
tables into their dataclasses, TOML arrays into the lists or tuples of the hints, an integer
into a float where a float is expected; :func:`as_table` gives the keys a config set back, in
its order), and :func:`merge_tables` lays one document's tables
over another's (a config's ``[smoke]`` overrides: :func:`with_overrides`).

:func:`check_config` checks a parsed TOML document against a schema: a key the schema does not
know (a typo), a missing required key and a value of the wrong type or range all raise
:class:`~probrank.exceptions.InputDataError` naming the file, the line of the key (found in the
file's text) and the key's dotted path (``heads.gpf.epochs``, ``grid[1].noises``).
:func:`read_toml` reads the document with the same kind of errors.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union

import tomllib

from probrank.exceptions import InputDataError

__all__ = [
    "CheckedAs",
    "NonEmpty",
    "Range",
    "SchemaError",
    "as_table",
    "build_settings",
    "check_config",
    "check_schema",
    "check_value",
    "dotted",
    "locate_key",
    "merge_tables",
    "read_toml",
    "with_overrides",
]

T = TypeVar("T")

Key = tuple[str | int, ...]
"""A key's path from the document's root: table names, keys and array indices."""


class SchemaError(Exception):
    """A value breaks its schema.

    Args:
        key: The path of the offending key, relative to the table being checked.
        message: What is wrong (without the key).
        mismatch: The value is of the wrong kind (not merely out of range), so that another
            alternative of a union may fit it.
    """

    def __init__(self, key: Key, message: str, *, mismatch: bool = False) -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.mismatch = mismatch


@dataclass(frozen=True)
class Range:
    """``Annotated`` check: ``low <= value <= high`` (``<`` with ``open_low``/``open_high``)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False

    def __call__(self, value: Any) -> str | None:
        values = value if isinstance(value, list) else [value]
        for v in values:
            if not isinstance(v, int | float) or isinstance(v, bool):
                continue
            too_low = self.low is not None and (v <= self.low if self.open_low else v < self.low)
            too_high = self.high is not None and (
                v >= self.high if self.open_high else v > self.high
            )
            if too_low or too_high:
                return f"must be {self._text()}, got {v!r}"
        return None

    def _text(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.open_low else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.open_high else '<='} {self.high:g}")
        return " and ".join(parts)


@dataclass(frozen=True)
class NonEmpty:
    """``Annotated`` check: a non-empty list, table or string."""

    def __call__(self, value: Any) -> str | None:
        return "must not be empty" if len(value) == 0 else None


@dataclass(frozen=True)
class CheckedAs:
    """``Annotated`` marker of a table checked against one schema and built into another type.

    ``quantifier: Annotated[QLFusionSettings, CheckedAs(Quantifier, QLFusionSettings.from_table)]``:
    a config writes ``[quantifier]`` with the keys of ``Quantifier`` (checked against it, line
    and key named), and :func:`build_settings` gives the field ``build(table)``, the model's
    own settings object.

    Attributes:
        schema: The table's schema dataclass, as a config writes it.
        build: ``(table) -> settings``, called with the checked table.
    """

    schema: type
    build: Callable[[Mapping[str, Any]], Any]


def _checked_as(hint: Any) -> CheckedAs | None:
    if typing.get_origin(hint) is not Annotated:
        return None
    return next((m for m in typing.get_args(hint)[1:] if isinstance(m, CheckedAs)), None)


def dotted(key: Key) -> str:
    """``("grid", 1, "noises")`` -> ``grid[1].noises``; keys that are not bare are quoted."""
    text = ""
    for part in key:
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        name = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else f'"{part}"'
        text += ("." if text else "") + name
    return text


def _value_text(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- types ---------------------------------------------------------------------------------


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        marker = _checked_as(hint)
        return _describe(marker.schema if marker is not None else args[0])
    if hint is Any:
        return "any value"
    if hint is bool:
        return "true or false"
    if hint is int:
        return "an integer"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    if origin is Literal:
        return "one of " + ", ".join(_value_text(a) for a in args)
    if origin in (list, tuple, Sequence):
        return f"a list of {_plural(args[0])}"
    if origin is dict or dataclasses.is_dataclass(hint):
        return "a table"
    if origin in (Union, types.UnionType):
        options = [_describe(a) for a in args if a is not type(None)]
        return " or ".join(options)
    return str(hint)  # pragma: no cover - schemas use the hints above only


def _plural(hint: Any) -> str:
    words = {bool: "true/false values", int: "integers", float: "numbers", str: "strings"}
    base = typing.get_args(hint)[0] if typing.get_origin(hint) is Annotated else hint
    if base in words:
        return words[base]
    if dataclasses.is_dataclass(base):
        return "tables"
    return f"({_describe(base)})"


def check_value(value: Any, hint: Any, key: Key = ()) -> None:
    """Check one value against a type hint of a schema.

    Raises:
        SchemaError: naming ``key`` (or the offending item below it).
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        marker = _checked_as(hint)
        check_value(value, marker.schema if marker is not None else args[0], key)
        for check in args[1:]:
            if isinstance(check, CheckedAs):
                continue
            message = check(value)
            if message:
                raise SchemaError(key, message)
        return
    if hint is Any:
        return
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                check_value(value, option, key)
                return
            except SchemaError as exc:
                errors.append(exc)
        # an alternative that fits the kind of value: its (more precise) error
        precise = [e for e in errors if not (e.mismatch and e.key == key)]
        if precise:
            raise precise[0]
        raise SchemaError(
            key, f"expected {_describe(hint)}, got {_value_text(value)}", mismatch=True
        )
    if dataclasses.is_dataclass(hint):
        _check_table(value, hint, key)
        return
    if origin in (list, tuple, Sequence):
        if not isinstance(value, list):
            raise SchemaError(
                key, f"expected {_describe(hint)}, got {_value_text(value)}", mismatch=True
            )
        for index, item in enumerate(value):
            check_value(item, args[0], (*key, index))
        return
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(key, f"expected a table, got {_value_text(value)}", mismatch=True)
        for name, item in value.items():
            check_value(item, args[1], (*key, name))
        return
    if not _is_instance(value, hint):
        raise SchemaError(
            key, f"expected {_describe(hint)}, got {_value_text(value)}", mismatch=True
        )


def _is_instance(value: Any, hint: Any) -> bool:
    if typing.get_origin(hint) is Literal:
        return any(type(value) is type(a) and value == a for a in typing.get_args(hint))
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    raise TypeError(f"unsupported schema type {hint!r}")  # pragma: no cover


def _check_table(table: Any, schema: Any, key: Key) -> None:
    if not isinstance(table, dict):
        raise SchemaError(key, f"expected a table, got {_value_text(table)}", mismatch=True)
    hints = typing.get_type_hints(schema, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(schema)}
    for name in table:
        if name not in fields:
            known = ", ".join(sorted(fields)) or "no keys"
            where = f"[{dotted(key)}]" if key else "the top level"
            raise SchemaError((*key, name), f"unknown key ({where} takes: {known})")
    for name, f in fields.items():
        if name in table:
            check_value(table[name], hints[name], (*key, name))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise SchemaError((*key, name), "missing (required)")
    hook: Callable[[Mapping[str, Any]], None] | None = getattr(schema, "check_table", None)
    if hook is not None:
        try:
            hook(table)
        except SchemaError as exc:
            raise SchemaError((*key, *exc.key), exc.message) from None


# --- settings objects -----------------------------------------------------------------------


def build_settings(document: Mapping[str, Any], schema: type[T]) -> T:
    """The typed settings object of a document that passed :func:`check_config` with ``schema``.

    Every table becomes its schema dataclass (a table the document omits keeps the field's
    default); a TOML array becomes a ``list`` or ``tuple`` as the hint says, an integer a
    ``float`` where the hint is ``float``, a free table (``dict[str, T]``) a ``dict``; a union
    takes the first alternative the value fits (else the first of its kind, so that an
    unchecked document's bad value reaches the code that refuses it); a :class:`CheckedAs`
    table is built by its ``build``. The document is not changed.

    Args:
        document: The checked document (or table).
        schema: Its schema dataclass.

    Returns:
        ``schema(...)`` with the document's values.
    """
    return _build_table(document, schema)  # type: ignore[no-any-return]


_KEYS = "_config_keys"
"""Attribute of a built table: the keys its config wrote, in the config's order."""


def _build_table(table: Mapping[str, Any], schema: Any) -> Any:
    hints = typing.get_type_hints(schema, include_extras=True)
    values = {
        f.name: _build_value(table[f.name], hints[f.name])
        for f in dataclasses.fields(schema)
        if f.init and f.name in table
    }
    built = schema(**values)
    object.__setattr__(built, _KEYS, tuple(name for name in table if name in values))
    return built


def as_table(settings: Any) -> dict[str, Any]:
    """A settings table as the TOML table that sets it: the keys its config wrote, in the
    config's order (a table not built from a config: its fields that differ from their
    defaults), nested tables as dicts and tuples as lists (for code that reads config tables,
    and for reporting what a config set).

    Args:
        settings: A table :func:`build_settings` built (or any settings dataclass).
    """
    names = getattr(settings, _KEYS, None)
    if names is None:
        names = [
            f.name for f in dataclasses.fields(settings) if getattr(settings, f.name) is not None
        ]
    return {name: _plain(getattr(settings, name)) for name in names}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return as_table(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {name: _plain(item) for name, item in value.items()}
    return value


def _strip(hint: Any) -> Any:
    while typing.get_origin(hint) is Annotated:
        marker = _checked_as(hint)
        hint = marker.schema if marker is not None else typing.get_args(hint)[0]
    return hint


def _build_value(value: Any, hint: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        marker = _checked_as(hint)
        if marker is not None and isinstance(value, Mapping):
            return marker.build(value)
        return _build_value(value, args[0])
    if hint is Any or value is None:
        return value
    if origin in (Union, types.UnionType):
        kind_fits = None  # the first alternative of the value's kind (its values are checked)
        for option in args:
            if option is type(None):
                continue
            try:
                check_value(value, _strip(option))
            except SchemaError as exc:
                if kind_fits is None and not (exc.mismatch and exc.key == ()):
                    kind_fits = option
                continue
            return _build_value(value, option)
        return value if kind_fits is None else _build_value(value, kind_fits)
    if dataclasses.is_dataclass(hint):
        return _build_table(value, hint) if isinstance(value, Mapping) else value
    if origin is tuple and isinstance(value, list | tuple):
        return tuple(_build_value(item, args[0]) for item in value)
    if origin in (list, Sequence) and isinstance(value, list | tuple):
        return [_build_value(item, args[0]) for item in value]
    if origin is dict and isinstance(value, Mapping):
        return {name: _build_value(item, args[1]) for name, item in value.items()}
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def merge_tables(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` laid over it, table by table (a key of a table replaces the
    key, a table merges into the table; arrays are replaced whole). Neither is changed."""
    out = dict(base)
    for name, value in overrides.items():
        current = out.get(name)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[name] = merge_tables(current, value)
        else:
            out[name] = value
    return out


def with_overrides(document: Mapping[str, Any], table: str = "smoke") -> dict[str, Any]:
    """A document with its ``[<table>]`` overrides merged in (``[smoke.protocol] folds = 3``
    replaces ``[protocol] folds``); the override table itself stays. Unchanged when absent."""
    overrides = document.get(table)
    if not isinstance(overrides, Mapping):
        return dict(document)
    return merge_tables(document, overrides)


@functools.cache
def check_schema(schema: type) -> type:
    """``schema`` as a config writes it: every :class:`CheckedAs` field typed by its table's
    schema (for code that walks a schema's tables, e.g. the plugin resolver; the view's
    optional fields default to None); ``schema`` itself when it has none."""
    hints = typing.get_type_hints(schema, include_extras=True)
    changed = False
    fields: list[Any] = []
    for f in dataclasses.fields(schema):
        hint = _rewrite(hints[f.name])
        changed = changed or hint is not hints[f.name]
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            fields.append((f.name, hint, dataclasses.field(default=None)))
        else:
            fields.append((f.name, hint))
    if not changed:
        return schema
    view = dataclasses.make_dataclass(schema.__name__, fields, frozen=True)
    view.__module__ = schema.__module__
    view.__doc__ = schema.__doc__
    return view


def _rewrite(hint: Any) -> Any:
    marker = _checked_as(hint)
    if marker is not None:
        return check_schema(marker.schema)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        options = tuple(_rewrite(a) for a in args)
        if all(a is b for a, b in zip(options, args, strict=True)):
            return hint
        return Union[options]  # noqa: UP007
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return check_schema(hint)
    return hint


# --- files ---------------------------------------------------------------------------------


def read_toml(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """Parse a TOML file; returns the document and its text (for :func:`locate_key`).

    Raises:
        InputDataError: a missing file, a folder, an unreadable or non-UTF-8 file, or invalid
            TOML (with its line).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputDataError("no such config file", path=path) from None
    except IsADirectoryError:
        raise InputDataError("is a directory, not a config file", path=path) from None
    except OSError as exc:
        raise InputDataError(f"cannot read: {exc.strerror}", path=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1]
        raise InputDataError(
            f"undecodable byte {bad!r} (a config must be UTF-8)",
            path=path,
            line=data.count(b"\n", 0, exc.start) + 1,
        ) from None
    if not text.strip():
        raise InputDataError("empty config file", path=path)
    try:
        document = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(r"\(at line (\d+), column \d+\)$", message)
        where = int(match.group(1)) if match else None
        reason = message[: match.start()].strip() if match else message
        raise InputDataError(f"invalid TOML: {reason}", path=path, line=where) from None
    return document, text


def check_config(
    document: Mapping[str, Any],
    schema: Any,
    *,
    path: str | os.PathLike[str] | None = None,
    text: str | None = None,
) -> None:
    """Check a parsed TOML document against a schema dataclass.

    Args:
        document: The parsed document.
        schema: The schema of its top level.
        path: The file, named in the error.
        text: The file's text, to find the line of the offending key.

    Raises:
        InputDataError: ``<file>:<line>: <dotted key>: <what>`` for an unknown key, a missing
            required key, or a value of the wrong type or range.
    """
    try:
        _check_table(dict(document), schema, ())
    except SchemaError as exc:
        line = locate_key(text, exc.key) if text is not None else None
        raise InputDataError(f"{dotted(exc.key)}: {exc.message}", path=path, line=line) from None


# --- lines ---------------------------------------------------------------------------------

_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})(?:\s*\.\s*(?:{_BARE}|{_QUOTED}))*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_KEY})\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(rf"^\s*({_KEY})\s*=")


def _split_key(text: str) -> tuple[str, ...]:
    parts = re.findall(rf"{_BARE}|{_QUOTED}", text)
    return tuple(p[1:-1] if p[0] in "\"'" else p for p in parts)


def locate_key(text: str, key: Key) -> int | None:
    """The 1-based line where ``key`` is set in TOML ``text``, or where its nearest enclosing
    table starts when the key itself is not written (a missing key). Best effort: None when
    neither is found.
    """
    wanted = tuple(key)
    best: tuple[int, int] | None = None  # (matched length, line)
    table: Key = ()
    arrays: dict[tuple[str, ...], int] = {}
    multiline = False
    for number, raw in enumerate(text.splitlines(), start=1):
        toggles = bool(raw.count('"""') % 2 or raw.count("'''") % 2)
        if multiline:
            multiline = not toggles
            continue
        multiline = toggles
        header = _HEADER.match(raw)
        if header is not None:
            names = _split_key(header.group(2))
            if header.group(1) == "[[":
                arrays[names] = arrays.get(names, -1) + 1
                table = (*_with_indices(names[:-1], arrays), names[-1], arrays[names])
            else:
                table = _with_indices(names, arrays)
            found: Key = table
        else:
            assign = _ASSIGN.match(raw)
            if assign is None:
                continue
            found = (*table, *_split_key(assign.group(1)))
        common = _common_prefix(found, wanted)
        if common == len(wanted) and len(found) == len(wanted):
            return number
        if common == len(found) and (best is None or common > best[0]):
            best = (common, number)
    return best[1] if best is not None else None


def _with_indices(names: tuple[str, ...], arrays: dict[tuple[str, ...], int]) -> Key:
    """A header's path with the current index after every array-of-tables prefix."""
    path: list[str | int] = []
    for end in range(1, len(names) + 1):
        path.append(names[end - 1])
        if names[:end] in arrays:
            path.append(arrays[names[:end]])
    return tuple(path)


def _common_prefix(a: Key, b: Key) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count
