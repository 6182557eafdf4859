"""Low-level file helpers shared by the readers and writers: transparent gzip, strict UTF-8
decoding with a line number on failure (byte-order mark skipped, CRLF accepted, a lone CR an
error), the check that fields are separated by ASCII spaces and tabs only, and atomic writes
(temp file + rename)."""

from __future__ import annotations

import gzip
import os
import re
import unicodedata
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any

from probrank._files import atomic_open
from probrank.exceptions import InputDataError

__all__ = [
    "atomic_write",
    "check_separators",
    "json_line",
    "read_bytes",
    "read_text",
    "read_text_lines",
]

_GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: Path) -> bytes:
    """The bytes of a file, gunzipped when they start with gzip's magic bytes.

    Raises:
        InputDataError: the file is missing or unreadable, or corrupt gzip data.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise InputDataError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputDataError("is a directory, not a file", path=path) from None
    except OSError as exc:
        raise InputDataError(f"cannot read: {exc.strerror}", path=path) from None
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise InputDataError(f"corrupt gzip data ({exc})", path=path) from None
    return data


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a (possibly gzipped) UTF-8 text file as one string with ``\n`` line ends.

    Gzip is detected by its magic bytes, not by the file name. A UTF-8 byte-order mark at the
    start of the file is skipped; CRLF line ends become ``\n``.

    Raises:
        InputDataError: the file is missing or unreadable, corrupt gzip data, bytes that are
            not UTF-8, a NUL byte, or a carriage return that does not end a line (the message
            names the line).
    """
    path = Path(path)
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.start + 1]
        raise InputDataError(
            f"undecodable byte {bad!r} (file must be UTF-8)", path=path, line=line
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        raise InputDataError("NUL byte in a text file", path=path, line=_line_of(text, "\x00"))
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            raise InputDataError(
                "carriage return (CR) inside a line; line ends must be LF or CRLF",
                path=path,
                line=_line_of(text, "\r"),
            )
    return text


def json_line(line: str, path: str | os.PathLike[str], number: int) -> Any:
    """One line of a JSON-lines file, parsed; every failure is one :class:`InputDataError`
    naming the file and the line (invalid JSON, nesting too deep for the parser, an integer of
    more digits than Python converts).

    Args:
        line: The line's text.
        path: The file (for the message).
        number: The line number (from 1).
    """
    import json  # JSON-lines readers only: not on the path of TREC files

    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputDataError(f"invalid JSON ({exc.msg})", path=path, line=number) from None
    except RecursionError:
        raise InputDataError("invalid JSON (nested too deeply)", path=path, line=number) from None
    except ValueError:  # int(): more than sys.get_int_max_str_digits() digits
        raise InputDataError(
            "invalid JSON (a number with too many digits)", path=path, line=number
        ) from None


def read_text_lines(path: str | os.PathLike[str]) -> list[str]:
    """Read a (possibly gzipped) UTF-8 text file as a list of lines (see :func:`read_text`).

    Raises:
        InputDataError: as :func:`read_text`.
    """
    return read_text(path).split("\n")


def _line_of(text: str, char: str) -> int:
    """1-based line of the first ``char`` in ``text``."""
    return text.count("\n", 0, text.index(char)) + 1


# Whitespace that str.split() treats as a separator but TREC files may not use: anything but
# ASCII space, tab and the line feed. (The ASCII ones are listed for a fast scan of ASCII text.)
_FOREIGN_ASCII_SPACE = "\v\f\x1c\x1d\x1e\x1f"
_FOREIGN_SPACE = re.compile(r"[^\S \t\n]")


def check_separators(text: str, path: str | os.PathLike[str]) -> None:
    """Check that the only whitespace in ``text`` is ASCII space, tab and line feed.

    A no-break space (U+00A0), an ideographic space (U+3000), a vertical tab and the like
    look like separators to Python's ``str.split`` but not to trec_eval, so they are an error
    naming the line rather than a silent difference.

    Raises:
        InputDataError: the first other whitespace character, with its line.
    """
    if text.isascii():
        if not any(char in text for char in _FOREIGN_ASCII_SPACE):
            return
    match = _FOREIGN_SPACE.search(text)
    if match is None:
        return
    char = match.group()
    raise InputDataError(
        f"character U+{ord(char):04X} ({unicodedata.name(char, repr(char))}) is not a field "
        "separator: fields are separated by ASCII spaces and tabs only",
        path=path,
        line=text.count("\n", 0, match.start()) + 1,
    )


def atomic_write(path: str | os.PathLike[str]) -> AbstractContextManager[IO[str]]:
    """Open ``path`` for writing text so that it appears whole or not at all.

    The package's one atomic writer, :func:`probrank._files.atomic_open` in text mode: a
    temporary file in the same folder, fsynced and renamed over ``path``; a link is followed, a
    device written in place, the umask respected, a missing folder an
    :class:`~probrank.exceptions.InputDataError`; a name ending in ``.gz`` is gzip-compressed.
    """
    return atomic_open(path, "w")
