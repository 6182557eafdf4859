"""Low-level file helpers shared by the readers and writers: transparent gzip, strict UTF-8
decoding with a line number on failure, and atomic writes (temp file + rename)."""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from probrank.exceptions import InputDataError

__all__ = ["atomic_write", "read_text_lines"]

_GZIP_MAGIC = b"\x1f\x8b"


def _read_bytes(path: Path) -> bytes:
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


def read_text_lines(path: str | os.PathLike[str]) -> list[str]:
    """Read a (possibly gzipped) UTF-8 text file as a list of lines.

    Gzip is detected by its magic bytes, not by the file name. Lines are split on ``\\n`` only
    (a trailing ``\\r`` is left for the caller's whitespace split to drop).

    Raises:
        InputDataError: the file is missing, not gzip when it claims to be, or not UTF-8 (the
            message names the line and the offending byte).
    """
    path = Path(path)
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.start + 1]
        raise InputDataError(
            f"undecodable byte {bad!r} (file must be UTF-8)", path=path, line=line
        ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise InputDataError("NUL byte in a text file", path=path, line=line)
    return text.split("\n")


@contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """Open ``path`` for writing text so that it appears whole or not at all.

    Writes to a temporary file in the same folder, flushes and fsyncs it, then renames it over
    ``path``. A name ending in ``.gz`` is gzip-compressed.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as raw:
            if path.name.endswith(".gz"):
                with gzip.open(raw, "wt", encoding="utf-8", newline="\n") as text:
                    yield text
            else:
                with open(raw.fileno(), "w", encoding="utf-8", newline="\n", closefd=False) as text:
                    yield text
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
