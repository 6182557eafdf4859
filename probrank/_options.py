"""Parsing of ``str`` enum options into their members with a one-line error for bad values."""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

from probrank.exceptions import InputDataError

__all__ = ["parse_enum"]

E = TypeVar("E", bound=Enum)


def parse_enum(enum_type: type[E], value: object, option: str) -> E:
    """Return the member of ``enum_type`` whose value is ``value`` (or ``value`` itself).

    Raises:
        InputDataError: ``value`` names no member; the message lists the choices.
    """
    try:
        return enum_type(value)
    except ValueError:
        choices = ", ".join(repr(m.value) for m in enum_type)
        raise InputDataError(f"{option} must be one of {choices}, got {value!r}") from None
