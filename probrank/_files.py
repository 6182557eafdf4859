"""Files that appear whole or not at all: runs, results, caches, checkpoints, figures, reports.

Every file probrank writes goes through this module, through :func:`atomic_open` (a stream),
:func:`write_atomically` (a callback that writes to a path: ``torch.save``, ``savefig``),
:func:`write_text_atomically` or :func:`write_bytes_atomically`. They all follow one set of
rules:

* **Atomic.** The content goes to a temporary file in the target's own folder, which is flushed
  and fsynced, then renamed over the target; the folder is fsynced after the rename. An
  interrupted write (an exception, ``KeyboardInterrupt``, ``kill -9``, a power cut) leaves the
  previous file or the new one, never a mix.
* **Links and devices.** A symbolic link is followed: the file it points to is replaced
  atomically (in the link target's folder) and the link stays a link. A target that is not a
  regular file (``/dev/null``, a FIFO, a terminal), ``/dev/stdout``, ``/dev/stderr`` and paths
  under ``/dev/fd/`` or ``/proc/`` (which may name a shell's redirection to a regular file) are
  written in place, as ``open(path, "w")`` would; they are never replaced. An existing folder
  is an error. (A file with several hard links gets a new inode: the other names keep the old
  content, as with any rename-based writer.)
* **Permissions.** A new file gets ``0o666 & ~umask``, as :func:`open` gives it; a file that is
  replaced keeps its permission bits.
* **No strays.** Temporary files are named ``.<name>.probrank-<pid>-<random>.tmp`` and hold an
  advisory lock while they are written; the next write to the same target removes those whose
  process is gone and that nobody holds (left by ``kill -9`` or a crash). A failed write removes
  its own temporary file at once.
* **Missing folders are errors.** The target's folder must exist: a missing one is an
  :class:`~probrank.exceptions.InputDataError` naming the path (user-given output paths are
  never created silently). Code that owns a cache or results folder creates it explicitly
  before writing.
* **Gzip.** A target whose name ends in ``.gz`` is gzip-compressed (with a zero timestamp, so
  the same content gives the same bytes).

Figures written to files are made with :func:`new_figure`, detached from pyplot: writing one
neither selects a backend (``matplotlib.use``) nor adds to pyplot's open figures, so running an
experiment or the demo from a notebook leaves the notebook's inline backend as it was.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Literal, NamedTuple, cast

from probrank.exceptions import InputDataError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "atomic_open",
    "check_output_folder",
    "check_output_path",
    "fsync_directory",
    "new_figure",
    "remove_stale_temporaries",
    "save_figure",
    "temporary_path",
    "write_atomically",
    "write_bytes_atomically",
    "write_text_atomically",
]

_TAG = ".probrank-"
_SUFFIX = ".tmp"
_IN_PLACE_ROOTS = ("/proc/", "/dev/fd/")
_STANDARD_STREAMS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_DESCRIPTOR_PATH = re.compile(r"/(?:dev|proc/self|proc/thread-self|proc/(\d+))/fd/(\d+)")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


# -- temporary files ---------------------------------------------------------------------------


def _temporary_prefix(name: str) -> str:
    """``.<name>.probrank-`` (a hash stands in for a name too long to fit in a file name)."""
    if len(os.fsencode(name)) > 180:
        import hashlib

        name = hashlib.sha256(os.fsencode(name)).hexdigest()[:32]
    return "." + name + _TAG


def temporary_path(target: str | os.PathLike[str]) -> Path:
    """A fresh temporary name beside ``target``: ``.<name>.probrank-<pid>-<random>.tmp``.

    Args:
        target: The file the temporary file will become (its folder is used as is).
    """
    target = Path(target)
    token = os.urandom(4).hex()
    return target.with_name(f"{_temporary_prefix(target.name)}{os.getpid()}-{token}{_SUFFIX}")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. EPERM: it exists, it is someone else's
        return True
    return True


def _is_held(path: Path) -> bool:
    """Whether a writer holds the advisory lock on ``path`` (probed without waiting)."""
    if fcntl is None:  # pragma: no cover
        return False
    try:
        fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    except OSError:
        return True  # cannot tell: leave it alone
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # also drops the probe's own lock
    return False


def remove_stale_temporaries(target: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files of earlier writes to ``target`` whose writer is gone.

    A temporary file is stale when the process named in it no longer runs and no process holds
    its lock (so neither a recycled pid nor a writer in another pid namespace loses its file).

    Args:
        target: The file whose temporary files are looked for (in its folder).

    Returns:
        The files removed.
    """
    target = Path(target)
    prefix = _temporary_prefix(target.name)
    pattern = re.compile(r"(\d+)-[0-9a-f]{8}" + re.escape(_SUFFIX))
    removed: list[Path] = []
    try:
        entries = [e.name for e in os.scandir(target.parent) if e.name.startswith(prefix)]
    except OSError:
        return removed
    for name in entries:
        match = pattern.fullmatch(name[len(prefix) :])
        if match is None or _pid_alive(int(match.group(1))):
            continue
        stray = target.parent / name
        if _is_held(stray):
            continue
        try:
            stray.unlink()
        except OSError:
            continue
        removed.append(stray)
    return removed


def fsync_directory(path: str | os.PathLike[str]) -> None:
    """Make a rename or a new name in folder ``path`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    except OSError:  # pragma: no cover - platforms without folder descriptors
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- where to write ----------------------------------------------------------------------------


class _Target(NamedTuple):
    given: Path  # as the caller named it (for messages and in-place writes)
    final: Path  # the regular file that is replaced (links resolved)
    in_place: bool  # a device, FIFO or /dev, /proc path: written straight, never replaced
    gzip: bool


def _resolve(path: str | os.PathLike[str]) -> _Target:
    given = Path(path)
    compress = given.name.endswith(".gz")
    try:
        status: os.stat_result | None = os.stat(given)  # follows links
    except FileNotFoundError:
        status = None
    except NotADirectoryError:
        raise InputDataError("a parent of the output path is not a folder", path=given) from None
    except OSError as error:  # a loop of links, no permission, a name too long
        raise InputDataError(f"cannot write: {error.strerror}", path=given) from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise InputDataError("is a folder, not a file", path=given)
    absolute = os.path.abspath(given)
    in_place = (
        (status is not None and not stat.S_ISREG(status.st_mode))
        or absolute.startswith(_IN_PLACE_ROOTS)
        or absolute in _STANDARD_STREAMS  # links to /proc/self/fd/N, maybe a regular file
    )
    if in_place:
        return _Target(given, given, True, compress)
    final = Path(os.path.realpath(given))
    if not final.parent.is_dir():
        where = final.parent if given.is_symlink() else given.parent  # the folder named
        raise InputDataError(f"output folder {str(where)!r} does not exist", path=given)
    return _Target(given, final, False, compress)


def check_output_path(path: str | os.PathLike[str]) -> None:
    """Check, before any work, that the writers could write ``path``; write nothing.

    For commands that write their output at the end of a long computation: a missing folder,
    a folder in place of the file or an unusable path is an error at once, not after it.

    Raises:
        InputDataError: what :func:`atomic_open` would raise for ``path`` before writing.
    """
    _resolve(path)


def check_output_folder(path: str | os.PathLike[str], *, what: str = "output folder") -> Path:
    """Check, before any work, that ``path`` names a folder to write into; create nothing.

    For everything that writes a folder of files (a saved model, a run folder, a cache): an
    empty name is refused (``Path("")`` is the working folder, which a caller never means by
    leaving a name empty), as are an existing file in the folder's place and a parent that is
    a file. A folder that does not exist yet is fine (its owner creates it when it writes).

    Args:
        path: The folder.
        what: How the message names it (``"model folder"``, ``"cache folder"``, ...).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        InputDataError: an empty name, a file in place of the folder or of a parent.
    """
    text = os.fspath(path)
    if not str(text).strip():
        raise InputDataError(
            f'the {what} name is empty: give a folder ("" would write into the working '
            'folder; use "." for that)'
        )
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise InputDataError(f"the path is a file, not a {what}", path=folder)
    for parent in folder.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputDataError(f"a parent of the {what} is a file: {parent}", path=folder)
            break
    return folder


@contextmanager
def _replacing(target: _Target) -> Iterator[tuple[int, Path]]:
    """A locked temporary file beside ``target.final``, renamed over it on a clean exit."""
    final = target.final
    remove_stale_temporaries(final)
    try:
        mode = stat.S_IMODE(os.stat(final).st_mode) & 0o777
    except OSError:
        mode = None  # a new file: 0o666 & ~umask from os.open
    while True:
        temp = temporary_path(final)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o666)
            break
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue
        except OSError as error:
            raise InputDataError(
                f"cannot write in {str(final.parent)!r}: {error.strerror}", path=target.given
            ) from None
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # "being written": not stale
            except OSError:  # a file system without locks: the pid alone protects it
                pass
        yield fd, temp
        if mode is not None:
            os.chmod(temp, mode)
        _fsync_file(temp)
        os.replace(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    fsync_directory(final.parent)


def _descriptor(path: Path) -> int | None:
    """The descriptor of this process that ``path`` names (``/dev/stdout``, ``/dev/fd/3``)."""
    absolute = os.path.abspath(path)
    if absolute in _STANDARD_STREAMS:
        return _STANDARD_STREAMS[absolute]
    match = _DESCRIPTOR_PATH.fullmatch(absolute)
    if match is None or (match.group(1) is not None and int(match.group(1)) != os.getpid()):
        return None
    return int(match.group(2))


def _open_in_place(target: _Target) -> IO[bytes]:
    """``target`` opened for writing where it is, never replaced (closed by the caller).

    A path naming one of this process's descriptors writes to (a duplicate of) that descriptor,
    at its offset, after what Python has buffered for stdout and stderr: reopening it would
    truncate a shell's ``> out`` redirection and start again at offset 0.
    """
    fd = _descriptor(target.given)
    try:
        if fd is None:
            return open(target.given, "wb")
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        return os.fdopen(os.dup(fd), "wb")
    except OSError as error:
        raise InputDataError(f"cannot write: {error.strerror}", path=target.given) from None


@contextmanager
def _layers(raw: IO[bytes], target: _Target, text: bool, encoding: str) -> Iterator[IO[Any]]:
    """Gzip and text layers over ``raw``, closed (text flushed, gzip trailer written) on success.

    ``raw`` itself is left to the caller: closing the layers never closes its descriptor.
    """
    stream: IO[Any] = raw
    if target.gzip:
        name = target.given.name[: -len(".gz")]
        stream = cast(IO[bytes], gzip.GzipFile(filename=name, mode="wb", fileobj=raw, mtime=0))
    if text:
        stream = io.TextIOWrapper(stream, encoding=encoding, newline="\n")
    try:
        yield stream
    except BaseException:
        try:  # the content is discarded; close the layers quietly so no finaliser writes later
            stream.close()
        except Exception:
            pass
        raise
    stream.close()


# -- the writers -------------------------------------------------------------------------------


@contextmanager
def atomic_open(
    path: str | os.PathLike[str], mode: Literal["w", "wb"] = "w", *, encoding: str = "utf-8"
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it appears whole or not at all (see the module doc).

    Text mode writes ``\\n`` line ends. A name ending in ``.gz`` is gzip-compressed. If the
    ``with`` body raises, the target is left as it was.

    Args:
        path: The target file (a link is followed; a device is written in place).
        mode: ``"w"`` (text) or ``"wb"`` (bytes).
        encoding: Text encoding (text mode).

    Yields:
        The stream to write to.

    Raises:
        InputDataError: The folder is missing, the path is a folder, or the file cannot be
            created (the message names the path).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', not {mode!r}")
    target = _resolve(path)
    if target.in_place:
        with _open_in_place(target) as raw, _layers(raw, target, mode == "w", encoding) as out:
            yield out
        return
    with _replacing(target) as (fd, _):
        with os.fdopen(fd, "wb", closefd=False) as raw:
            with _layers(raw, target, mode == "w", encoding) as out:
                yield out


def write_atomically(path: str | os.PathLike[str], write: Callable[[str], object]) -> Path:
    """Call ``write(temporary_path)``, then rename the temporary file over ``path``.

    For writers that take a path (``torch.save``, ``Figure.savefig``). Everything in the module
    doc holds: a link is followed, a device gets ``write(path)`` directly, the folder must
    exist, and a ``.gz`` name gets what ``write`` wrote gzip-compressed.

    Args:
        path: The target file.
        write: Writes the whole content to the path it is given.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        InputDataError: See :func:`atomic_open`.
    """
    target = _resolve(path)
    if not target.gzip and not target.in_place:
        with _replacing(target) as (_, temp):
            write(str(temp))
        return target.given
    # ``write`` fills a scratch file, copied (and compressed for .gz) into the target, so that a
    # device or a descriptor is written exactly as atomic_open writes it
    import shutil
    import tempfile

    with atomic_open(path, "wb") as out:
        folder = Path(tempfile.gettempdir()) if target.in_place else target.final.parent
        scratch = temporary_path(folder / target.final.name)
        try:
            write(str(scratch))
            with open(scratch, "rb") as plain:
                shutil.copyfileobj(plain, out)
        finally:
            scratch.unlink(missing_ok=True)
    return target.given


def write_text_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "w") as out:
        out.write(text)
    return Path(path)


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "wb") as out:
        out.write(data)
    return Path(path)


def save_figure(
    figure: Any, path: str | os.PathLike[str], *, dpi: int = 120, tight: bool = True
) -> Path:
    """Save a matplotlib figure as PNG atomically, then close it (also on failure).

    Args:
        figure: The ``matplotlib.figure.Figure``.
        path: The PNG file.
        dpi: Resolution.
        tight: Crop to the drawn area (``bbox_inches="tight"``).
    """
    import matplotlib.pyplot as plt

    options: dict[str, Any] = {"dpi": dpi, "format": "png"}
    if tight:
        options["bbox_inches"] = "tight"
    try:
        return write_atomically(path, lambda temp: figure.savefig(temp, **options))
    finally:
        plt.close(figure)


def new_figure(
    nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], squeeze: bool = True
) -> tuple[Any, Any]:
    """A figure and its axes, made without pyplot (see the module doc).

    Args:
        nrows: Rows of axes.
        ncols: Columns of axes.
        figsize: Width and height in inches.
        squeeze: As in :func:`matplotlib.pyplot.subplots`.

    Returns:
        ``(figure, axes)`` as :meth:`matplotlib.figure.Figure.subplots` gives them.
    """
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize)
    return figure, figure.subplots(nrows, ncols, squeeze=squeeze)
