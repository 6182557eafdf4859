"""Typed schemas for TOML config files, checked with one-line errors that name the key.

A schema is a dataclass whose fields are the keys of one table, typed with ordinary hints:
``int``, ``float`` (an integer is accepted), ``bool``, ``str``, ``Literal[...]``, ``list[T]``,
``tuple[T, ...]`` (a TOML array), ``dict[str, T]`` (a table of free keys), unions such as
``float | list[float]``, and other schema dataclasses (sub-tables; ``list[Schema]`` is an array
of tables). A field without a default is required; ``T | None = None`` marks an optional key.
``Annotated[T, check, ...]`` adds value checks (:class:`Range`, :class:`NonEmpty`, or any
callable returning an error message or None). A schema may define a classmethod
``check_table(table)`` for rules across keys; it raises :class:`SchemaError` with the key.

:func:`check_config` checks a parsed TOML document against a schema: a key the schema does not
know (a typo), a missing required key and a value of the wrong type or range all raise
:class:`~probrank.exceptions.InputDataError` naming the file, the line of the key (found in the
file's text) and the key's dotted path (``heads.gpf.epochs``, ``grid[1].noises``).
:func:`read_toml` reads the document with the same kind of errors.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import tomllib

from probrank.exceptions import InputDataError

__all__ = [
    "NonEmpty",
    "Range",
    "SchemaError",
    "check_config",
    "check_value",
    "dotted",
    "locate_key",
    "read_toml",
]

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
        return _describe(args[0])
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
        check_value(value, args[0], key)
        for check in args[1:]:
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
