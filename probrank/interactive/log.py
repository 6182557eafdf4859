"""The durable, append-only JSONL log of an interactive session.

Format (one JSON object per line, UTF-8, ``\\n``-terminated):

* line 1, the header: ``{"type": "header", "format": "probrank-session", "version": 1,
  "seed": ..., "strategy": ..., "num_candidates": ..., "prior_fingerprint": ...,
  "metadata": {...}, "created": ...}``;
* then one line per event: ``{"type": "judgement", "round": r, "winner": i, "loser": j,
  "offered": [a, b] | null, "time": ...}`` or ``{"type": "skip", "round": r, "pair": [a, b],
  "time": ...}``; ``round`` counts the events before this one.

Durability. The header is written to a temporary file in the same folder, flushed, fsynced and
hard-linked to the log's name (atomic and refusing to overwrite), then the folder is fsynced:
a log either exists with a complete header or does not exist. Each event is appended with one
``write``, flushed and fsynced before :meth:`SessionLog.append` returns, so an event that was
acknowledged survives a crash (``SIGKILL``, power loss on a disk that honours fsync).

Torn last line. A crash during an append can leave a final line without its ``\\n``. Such a line
was never acknowledged (the append had not returned), so :func:`read_log` drops it with a
:class:`TornLogWarning`, and opening the log for appending (:meth:`SessionLog.reopen`)
truncates the file back to the end of the last complete line. A complete line (``\\n``-
terminated) that is not a valid event is corruption, not a torn write: it raises
:class:`~probrank.exceptions.InputDataError` naming the file and the line.
"""

from __future__ import annotations

import json
import os
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from probrank.exceptions import InputDataError

__all__ = ["LOG_FORMAT", "LOG_VERSION", "LogContents", "SessionLog", "TornLogWarning", "read_log"]

LOG_FORMAT = "probrank-session"
LOG_VERSION = 1


class TornLogWarning(UserWarning):
    """A session log ended in a partially written (never acknowledged) line, which was dropped."""


@dataclass(frozen=True)
class LogContents:
    """A parsed session log.

    Attributes:
        header: The header object.
        events: The events in order (judgements and skips).
        valid_bytes: Length of the file up to the end of the last complete line.
        torn: Whether a partial last line was dropped.
    """

    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    valid_bytes: int = 0
    torn: bool = False


def _fsync_directory(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")


class SessionLog:
    """Append-only handle on a session log; use :meth:`create` or :meth:`reopen`."""

    def __init__(self, path: Path, handle: BinaryIO) -> None:
        self.path = path
        self._handle = handle

    @classmethod
    def create(cls, path: str | os.PathLike[str], header: dict[str, Any]) -> SessionLog:
        """Atomically create a new log holding ``header``.

        Raises:
            InputDataError: The file exists already (resume it instead) or its folder is missing.
        """
        target = Path(path)
        if not target.parent.is_dir():
            raise InputDataError("folder of the session log does not exist", path=target)
        if target.exists():
            raise InputDataError(
                "session log exists already; resume it or pick a new name", path=target
            )
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        record = {"type": "header", "format": LOG_FORMAT, "version": LOG_VERSION, **header}
        try:
            with open(temporary, "xb") as handle:
                handle.write(_encode(record))
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temporary, target)
            except FileExistsError:
                raise InputDataError(
                    "session log exists already; resume it or pick a new name", path=target
                ) from None
            except OSError:  # a filesystem without hard links: rename (checked above)
                os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        _fsync_directory(target.parent)
        return cls(target, open(target, "ab"))

    @classmethod
    def reopen(cls, path: str | os.PathLike[str], contents: LogContents) -> SessionLog:
        """Open an existing log for appending, cutting a torn last line off first."""
        target = Path(path)
        if contents.torn:
            with open(target, "r+b") as handle:
                handle.truncate(contents.valid_bytes)
                handle.flush()
                os.fsync(handle.fileno())
        return cls(target, open(target, "ab"))

    def append(self, event: dict[str, Any]) -> None:
        """Append one event and make it durable (write, flush, fsync) before returning."""
        if self._handle.closed:
            raise InputDataError("session log is closed", path=self.path)
        self._handle.write(_encode(event))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    @property
    def closed(self) -> bool:
        return self._handle.closed


def read_log(path: str | os.PathLike[str]) -> LogContents:
    """Parse a session log, dropping a torn last line (with a :class:`TornLogWarning`).

    Raises:
        InputDataError: Missing file, missing or malformed header, or a malformed complete line
            (the message names the file and line).
    """
    source = Path(path)
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        raise InputDataError("session log not found", path=source) from None
    end = data.rfind(b"\n") + 1
    torn = end < len(data)
    if torn:
        warnings.warn(
            f"{source}: dropped a partially written last line ({len(data) - end} bytes) that was "
            "never acknowledged",
            TornLogWarning,
            stacklevel=2,
        )
    lines = data[:end].split(b"\n")[:-1]
    if not lines:
        raise InputDataError("not a probrank session log: no complete header line", path=source)
    records = []
    for number, raw in enumerate(lines, start=1):
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            shown = raw[:60].decode("utf-8", errors="replace")
            raise InputDataError(
                f"malformed log line {shown!r}", path=source, line=number
            ) from None
        if not isinstance(record, dict):
            raise InputDataError(f"log line is not an object: {record!r}", path=source, line=number)
        records.append(record)
    header = records[0]
    if header.get("type") != "header" or header.get("format") != LOG_FORMAT:
        raise InputDataError("not a probrank session log: bad header", path=source, line=1)
    if header.get("version") != LOG_VERSION:
        raise InputDataError(
            f"unsupported session log version {header.get('version')!r}", path=source, line=1
        )
    n = header.get("num_candidates")
    if not isinstance(n, int) or n < 2:
        raise InputDataError(f"bad num_candidates {n!r} in header", path=source, line=1)
    events = records[1:]
    for offset, event in enumerate(events):
        _check_event(event, offset, n, source, offset + 2)
    return LogContents(header=header, events=events, valid_bytes=end, torn=torn)


def _check_event(event: dict[str, Any], round_: int, n: int, path: Path, line: int) -> None:
    kind = event.get("type")
    if event.get("round") != round_:
        raise InputDataError(
            f"event round {event.get('round')!r}, expected {round_}", path=path, line=line
        )
    pair: object
    if kind == "judgement":
        pair = [event.get("winner"), event.get("loser")]
    elif kind == "skip":
        pair = event.get("pair")
    else:
        raise InputDataError(f"unknown event type {kind!r}", path=path, line=line)
    valid = (
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n for v in pair)
        and pair[0] != pair[1]
    )
    if not valid:
        raise InputDataError(
            f"bad candidate pair {pair!r} for {n} candidates", path=path, line=line
        )
