"""The durable, append-only JSONL log of an interactive session.

Format (one JSON object per line, UTF-8, ``\\n``-terminated):

* line 1, the header: ``{"type": "header", "format": "probrank-session", "version": 1,
  "seed": ..., "strategy": ..., "num_candidates": ..., "prior_fingerprint": ...,
  "metadata": {...}, "created": ...}``;
* then one line per event: ``{"type": "judgement", "round": r, "winner": i, "loser": j,
  "offered": [a, b] | null, "time": ...}`` or ``{"type": "skip", "round": r, "pair": [a, b],
  "time": ...}``; ``round`` counts the events before this one.

One judgement per pair. A session judges each unordered pair ``{i, j}`` at most once:
:meth:`~probrank.interactive.session.InteractiveSession.record` refuses a second judgement of a
pair (in either order) with an :class:`~probrank.exceptions.InputDataError`, so a log never
holds a repeat. A complete line that judges a pair judged on an earlier line, or that skips a
pair asked (judged or skipped) on an earlier line, is therefore corruption: :func:`read_log`
raises an :class:`~probrank.exceptions.InputDataError` naming the file, the line and the
earlier line. (A pair that was skipped may still be judged later.)

Durability. The header is written to a temporary file in the same folder, flushed, fsynced and
hard-linked to the log's name (atomic and refusing to overwrite), then the folder is fsynced:
a log either exists with a complete header or does not exist. The temporary file is named as
:mod:`probrank._files` names its own (``.<log name>.probrank-<pid>-<random>.tmp``), so one left
by a process killed during the creation is removed by the next creation of that log. The file
gets ``0o666 & ~umask``, as :func:`~builtins.open` gives it. Each event is appended with one
``write``, flushed and fsynced before :meth:`SessionLog.append` returns, so an event that was
acknowledged survives a crash (``SIGKILL``, power loss on a disk that honours fsync).

One writer. A :class:`SessionLog` holds an exclusive advisory lock (``flock(LOCK_EX |
LOCK_NB)``) on the log file from the moment it exists (the lock is taken on the temporary file
before it is linked to the log's name) until :meth:`SessionLog.close`; the operating system
releases it when the process dies, so a crashed session never leaves a stale lock behind.
Opening a log that another :class:`SessionLog` holds (in another process, or in this one)
raises :class:`~probrank.exceptions.InputDataError` ``session log <path> is in use by another
probrank process (pid N)`` (the pid read from ``/proc/locks`` where there is one). Readers
(:func:`read_log`) take no lock. Platforms without ``fcntl`` get no locking.

Torn last line. A crash during an append can leave a final line without its ``\\n``. Such a line
was never acknowledged (the append had not returned), so :func:`read_log` drops it with a
:class:`TornLogWarning`, and opening the log for appending (:meth:`SessionLog.reopen`, under the
lock) truncates the file back to the end of the last complete line. A complete line
(``\\n``-terminated) that is not a valid event is corruption, not a torn write: it raises
:class:`~probrank.exceptions.InputDataError` naming the file and the line. A file without one
complete line (empty, or only part of a header: never a file :meth:`SessionLog.create` made) is
not a log: it raises one :class:`~probrank.exceptions.InputDataError`, with no warning first.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from probrank._files import fsync_directory, remove_stale_temporaries, temporary_path
from probrank.exceptions import InputDataError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "LOG_FORMAT",
    "LOG_VERSION",
    "LogContents",
    "SessionLog",
    "TornLogWarning",
    "check_new_log",
    "read_log",
]

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

    @property
    def num_judgements(self) -> int:
        """Number of judgement events (skips excluded)."""
        return sum(1 for event in self.events if event.get("type") == "judgement")


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")


# -- the lock ----------------------------------------------------------------------------------


def _lock_holder(fd: int) -> int | None:
    """The pid holding an ``flock`` on ``fd``'s file, from ``/proc/locks`` (None if unknown)."""
    try:
        status = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.readlines()
    except OSError:
        return None
    device = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; waiters have a "->" field
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == device:
            try:
                return int(parts[4])
            except ValueError:
                return None
    return None


def _in_use(path: Path, fd: int) -> InputDataError:
    pid = _lock_holder(fd)
    if pid is None:
        detail = ""
    elif pid == os.getpid():
        detail = f" (pid {pid}: a session still open in this very process; close it first)"
    else:
        detail = f" (pid {pid})"
    error = InputDataError(f"session log {path} is in use by another probrank process{detail}")
    error.path = str(path)
    return error


def _lock(fd: int, path: Path) -> None:
    """Take the exclusive, non-blocking advisory lock on ``fd`` or raise "in use"."""
    if fcntl is None:  # pragma: no cover
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _in_use(path, fd) from None
    except OSError as error:  # e.g. ENOLCK on a file system without locks
        raise InputDataError(
            f"cannot lock the session log ({error.strerror}); keep logs on a local disk",
            path=path,
        ) from None


def _is_locked(path: Path) -> bool:
    """Whether some handle holds the lock on ``path`` (probed with a lock taken and dropped)."""
    if fcntl is None:  # pragma: no cover
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # also releases a lock this probe took
    return False


def _exists(target: Path) -> InputDataError:
    if _is_locked(target):
        fd = os.open(target, os.O_RDONLY)
        try:
            return _in_use(target, fd)
        finally:
            os.close(fd)
    return InputDataError("session log exists already; resume it or pick a new name", path=target)


def check_new_log(path: str | os.PathLike[str]) -> None:
    """Check, before any work, that :meth:`SessionLog.create` could create a log at ``path``;
    create nothing.

    The checks :meth:`SessionLog.create` makes first (they are this function), for commands
    that create the log only after loading data and training a warm start: a missing folder or
    an existing file (or folder) of that name is an error at once, not after that work.

    Raises:
        InputDataError: The folder is missing, ``path`` is a folder, or ``path`` exists already
            (resume it instead; "in use" when another process holds it).
    """
    target = Path(path)
    if not target.parent.is_dir():
        raise InputDataError("folder of the session log does not exist", path=target)
    if target.is_dir():
        raise InputDataError("session log is a folder; give a file name", path=target)
    if target.exists() or target.is_symlink():
        raise _exists(target)


class SessionLog:
    """Append-only, locked handle on a session log; use :meth:`create` or :meth:`reopen`.

    Attributes:
        path: The log file.
        contents: What the log held when it was created or reopened.
    """

    def __init__(self, path: Path, handle: BinaryIO, contents: LogContents) -> None:
        self.path = path
        self._handle = handle
        self.contents = contents

    @classmethod
    def create(cls, path: str | os.PathLike[str], header: dict[str, Any]) -> SessionLog:
        """Atomically create a new log holding ``header``, and lock it.

        Raises:
            InputDataError: The file exists already (resume it instead), another process holds
                it, it is a folder, or its folder is missing (:func:`check_new_log`).
        """
        target = Path(path)
        check_new_log(target)
        remove_stale_temporaries(target)  # left by a creation killed half-way
        temporary = temporary_path(target)
        record = {"type": "header", "format": LOG_FORMAT, "version": LOG_VERSION, **header}
        data = _encode(record)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        try:  # 0o666 less the umask, as open() makes files
            handle = os.fdopen(os.open(temporary, flags, 0o666), "ab")
        except OSError as error:
            raise InputDataError(
                f"cannot create the session log: {error.strerror}", path=target
            ) from None
        try:
            # locked before the log's name exists: no moment where the log is there unlocked
            _lock(handle.fileno(), target)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            try:
                os.link(temporary, target)
            except FileExistsError:
                raise _exists(target) from None
            except OSError:  # a filesystem without hard links: rename (checked above)
                os.replace(temporary, target)
        except BaseException:
            handle.close()
            raise
        finally:
            temporary.unlink(missing_ok=True)
        fsync_directory(target.parent)
        return cls(target, handle, LogContents(header=record, valid_bytes=len(data)))

    @classmethod
    def reopen(cls, path: str | os.PathLike[str]) -> SessionLog:
        """Lock an existing log, read it and open it for appending.

        The log is read under the lock (:attr:`contents`); a torn last line is dropped
        (:class:`TornLogWarning`) and cut off the file.

        Raises:
            InputDataError: Missing or malformed log, or another process holds it.
        """
        target = Path(path)
        try:
            fd = os.open(target, os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            raise InputDataError("session log not found", path=target) from None
        except IsADirectoryError:
            raise InputDataError("session log is a folder", path=target) from None
        except OSError as error:
            raise InputDataError(
                f"cannot open the session log: {error.strerror}", path=target
            ) from None
        remove_stale_temporaries(target)  # e.g. left by a creation killed after the link
        handle = os.fdopen(fd, "ab")
        try:
            _lock(fd, target)
            data = _read_all(fd)
            contents = _parse(data, target, stacklevel=3)
            if contents.torn:
                os.ftruncate(fd, contents.valid_bytes)
                os.fsync(fd)
        except BaseException:
            handle.close()
            raise
        return cls(target, handle, contents)

    def append(self, event: dict[str, Any]) -> None:
        """Append one event and make it durable (write, flush, fsync) before returning."""
        if self._handle.closed:
            raise InputDataError("session log is closed", path=self.path)
        self._handle.write(_encode(event))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file, which releases the lock."""
        self._handle.close()

    @property
    def closed(self) -> bool:
        return self._handle.closed


def _read_all(fd: int) -> bytes:
    """The whole file behind ``fd``, read from offset 0 (``fd`` may be in append mode)."""
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, max(os.fstat(fd).st_size - offset, 1 << 16), offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def read_log(path: str | os.PathLike[str]) -> LogContents:
    """Parse a session log, dropping a torn last line (with a :class:`TornLogWarning`).

    Raises:
        InputDataError: Missing file, missing or malformed header, a malformed complete line,
            or a pair judged twice (the message names the file and line).
    """
    source = Path(path)
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        raise InputDataError("session log not found", path=source) from None
    except IsADirectoryError:
        raise InputDataError("session log is a folder", path=source) from None
    return _parse(data, source, stacklevel=3)


def _parse(data: bytes, source: Path, *, stacklevel: int) -> LogContents:
    end = data.rfind(b"\n") + 1
    torn = end < len(data)
    lines = data[:end].split(b"\n")[:-1]
    if not lines:  # nothing to keep: one error, no warning about the torn rest first
        raise InputDataError("not a probrank session log: no complete header line", path=source)
    if torn:
        warnings.warn(
            f"{source}: dropped a partially written last line ({len(data) - end} bytes) that was "
            "never acknowledged",
            TornLogWarning,
            stacklevel=stacklevel,
        )
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
    judged: dict[tuple[int, int], int] = {}  # unordered pair -> line of its judgement
    asked: dict[tuple[int, int], int] = {}  # unordered pair -> line of its first event
    for offset, event in enumerate(events):
        line = offset + 2
        a, b = _check_event(event, offset, n, source, line)
        pair = (min(a, b), max(a, b))
        if event["type"] == "judgement":
            if pair in judged:
                raise InputDataError(
                    f"pair {pair} judged again (first judged on line {judged[pair]}); a session "
                    "judges each pair once",
                    path=source,
                    line=line,
                )
            judged[pair] = line
        elif pair in asked:
            raise InputDataError(
                f"pair {pair} skipped after it was asked on line {asked[pair]}",
                path=source,
                line=line,
            )
        asked.setdefault(pair, line)
    return LogContents(header=header, events=events, valid_bytes=end, torn=torn)


def _check_event(
    event: dict[str, Any], round_: int, n: int, path: Path, line: int
) -> tuple[int, int]:
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
    if not (
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n for v in pair)
        and pair[0] != pair[1]
    ):
        raise InputDataError(
            f"bad candidate pair {pair!r} for {n} candidates", path=path, line=line
        )
    return int(pair[0]), int(pair[1])
