"""Typed settings of the model objects: validation helpers and JSON (de)serialisation.

Every model's settings object is a frozen dataclass whose ``__post_init__`` validates each
value with the helpers below (bad values raise :class:`~probrank.exceptions.InputDataError`
naming the setting) and converts option strings to their ``str`` enums. :func:`settings_to_json`
and :func:`settings_from_json` turn settings into the plain JSON a saved model's manifest holds
and back, refusing unknown keys.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, TypeVar

from probrank._options import parse_enum
from probrank.exceptions import InputDataError

__all__ = [
    "check_fraction",
    "check_positive",
    "check_positive_int",
    "check_unit_interval",
    "float_tuple",
    "int_tuple",
    "set_enum",
    "set_value",
    "settings_from_json",
    "settings_to_json",
]

S = TypeVar("S")
E = TypeVar("E", bound=Enum)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputDataError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise InputDataError(f"{name} must be finite, got {value!r}")
    return float(value)


def check_positive_int(name: str, value: object, *, allow_none: bool = False) -> None:
    """Raise unless ``value`` is an ``int >= 1`` (or None when ``allow_none``)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputDataError(f"{name} must be a positive integer, got {value!r}")


def check_positive(name: str, value: object) -> None:
    """Raise unless ``value`` is a finite number ``> 0``."""
    if _number(name, value) <= 0:
        raise InputDataError(f"{name} must be positive, got {value!r}")


def check_unit_interval(name: str, value: object, *, open_interval: bool = True) -> None:
    """Raise unless ``0 < value < 1`` (``0 <= value <= 1`` with ``open_interval=False``)."""
    number = _number(name, value)
    inside = 0 < number < 1 if open_interval else 0 <= number <= 1
    if not inside:
        bounds = "(0, 1)" if open_interval else "[0, 1]"
        raise InputDataError(f"{name} must lie in {bounds}, got {value!r}")


def check_fraction(name: str, value: object) -> None:
    """Raise unless ``0 <= value < 1`` (a share of items held out)."""
    number = _number(name, value)
    if not 0 <= number < 1:
        raise InputDataError(f"{name} must lie in [0, 1), got {value!r}")


def int_tuple(name: str, values: object, *, positive: bool = True) -> tuple[int, ...]:
    """``values`` as a non-empty tuple of (positive) ints."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InputDataError(f"{name} must be a sequence of integers, got {values!r}")
    out = tuple(values)
    if not out:
        raise InputDataError(f"{name} must not be empty")
    for v in out:
        if positive:
            check_positive_int(name, v)
        elif isinstance(v, bool) or not isinstance(v, int):
            raise InputDataError(f"{name} must hold integers, got {v!r}")
    return out


def float_tuple(name: str, values: object) -> tuple[float, ...]:
    """``values`` as a non-empty tuple of finite floats."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InputDataError(f"{name} must be a sequence of numbers, got {values!r}")
    out = tuple(_number(name, v) for v in values)
    if not out:
        raise InputDataError(f"{name} must not be empty")
    return out


def set_enum(settings: object, name: str, enum_type: type[E]) -> None:
    """Replace the string option ``name`` of a frozen dataclass by its enum member."""
    object.__setattr__(settings, name, parse_enum(enum_type, getattr(settings, name), name))


def set_value(settings: object, name: str, value: object) -> None:
    """Set field ``name`` of a frozen dataclass (for normalising values in ``__post_init__``)."""
    object.__setattr__(settings, name, value)


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def settings_to_json(settings: object) -> dict[str, Any]:
    """A settings dataclass as plain JSON values (enums by value, tuples as lists)."""
    if not dataclasses.is_dataclass(settings) or isinstance(settings, type):
        raise InputDataError(f"expected a settings dataclass, got {type(settings).__name__}")
    return {f.name: _plain(getattr(settings, f.name)) for f in dataclasses.fields(settings)}


def settings_from_json(cls: type[S], data: Mapping[str, Any]) -> S:
    """Settings of type ``cls`` from :func:`settings_to_json`'s output (validated again).

    Raises:
        InputDataError: ``data`` is not a mapping, has unknown keys, or a value is invalid.
    """
    if not isinstance(data, Mapping):
        raise InputDataError(f"{cls.__name__} must be read from a JSON object, got {data!r}")
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - fields)
    if unknown:
        raise InputDataError(f"unknown {cls.__name__} keys: {unknown}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    try:
        return cls(**values)
    except TypeError as exc:  # e.g. a value of the wrong kind the dataclass cannot take
        raise InputDataError(f"invalid {cls.__name__}: {exc}") from None
