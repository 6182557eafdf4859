"""The machinery behind :mod:`probrank.cli`: a parser whose errors are one line, argument types
that validate their values, the global options (``--threads``, ``--debug``, ``-v``, ``-q``),
the logging set-up, and the one-line description of any error.

Nothing here imports numpy, torch or pandas: the CLI sizes the thread pools
(:mod:`probrank._threads`) before any of them loads.
"""

from __future__ import annotations

import argparse
import logging
import math
import numbers
import os
import signal
import sys
from collections.abc import Callable, Container, Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from types import FrameType
from typing import Any, NoReturn

from probrank.exceptions import InputDataError, ProbrankError

__all__ = [
    "MAX_DIGITS",
    "MAX_SEED",
    "MAX_THREADS",
    "OneLineParser",
    "Terminated",
    "UsageError",
    "add_global_options",
    "at_least",
    "bounded",
    "describe_error",
    "enum_values",
    "logging_scope",
    "positive_float",
    "positive_int",
    "seed",
    "sigterm_raises",
    "silence_stdout",
    "strict_json",
    "threads_before_parsing",
]

MAX_SEED = 2**32 - 1
"""Largest seed every generator accepts (numpy's legacy ``RandomState`` stops here)."""

MAX_THREADS = 4096
"""Largest ``--threads`` (and threads per worker): more threads than any machine has."""


class UsageError(InputDataError):
    """A command line argparse rejects (unknown option, bad choice, bad value)."""


class Terminated(BaseException):
    """SIGTERM arrived; raised in the main thread so that ``finally`` blocks clean up.

    A ``BaseException``, like ``KeyboardInterrupt``, so that ``except Exception`` in library
    code does not swallow it.
    """


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors raise :class:`UsageError` (one line, no usage block)
    instead of printing the usage and exiting. Sub-parsers inherit the class.

    Attributes:
        epilog_factory: A callable that returns the epilog, called when the help is printed
            (a long epilog built from registries costs time every command would pay), or
            ``None``.
    """

    epilog_factory: Callable[[], str] | None = None

    def format_help(self) -> str:
        """The help, with the epilog of :attr:`epilog_factory` when there is one."""
        if self.epilog_factory is not None and self.epilog is None:
            self.epilog = self.epilog_factory()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        """Raise :class:`UsageError` naming the (sub)command and pointing at its ``--help``."""
        command = self.prog.removeprefix("probrank").strip()
        where = f"{command}: " if command else ""
        hint = f"see '{self.prog} --help'"
        raise UsageError(f"{where}{' '.join(message.split())} ({hint})")


MAX_DIGITS = 30
"""Longest integer an option reads (digits): a longer one is refused with a sentence before
Python converts it (``int`` refuses 4300 digits with an internal error) or any work sees it."""


def _integer(text: str, what: str, limit: str = "") -> int:
    stripped = text.strip()
    digits = stripped.removeprefix("-").removeprefix("+")
    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"must be {what}, got {_shown(text)}{limit}")
    if len(digits.lstrip("0")) > MAX_DIGITS:
        raise argparse.ArgumentTypeError(
            f"must be {what}, got an integer of {len(digits)} digits{limit}"
        )
    return int(stripped)


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:30]) + f"... ({len(text)} characters)"


def at_least(minimum: int, what: str, *, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``>= minimum`` (and ``<= maximum`` when given);
    ``what`` describes it in the error (the bound follows: ``(at most N)``).

    Every integer option has an upper bound: a value no run could use (``--seeds 10**12``) is
    refused before any work, with a sentence, as is an integer of more than
    :data:`MAX_DIGITS` digits.
    """
    limit = "" if maximum is None else f" (at most {maximum})"

    def parse(text: str) -> int:
        value = _integer(text, what, limit)
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {what}, got {_shown(text)}{limit}")
        return value

    parse.__name__ = what.replace(" ", "_")
    return parse


def bounded(maximum: int) -> Callable[[str], int]:
    """argparse ``type``: a positive integer ``<= maximum`` (see :func:`at_least`)."""
    return at_least(1, "a positive integer", maximum=maximum)


positive_int = at_least(1, "a positive integer")
"""argparse ``type``: an integer ``>= 1`` (ASCII digits, at most :data:`MAX_DIGITS`)."""


def seed(text: str) -> int:
    """argparse ``type``: a seed, an integer in ``0 .. 2**32 - 1``."""
    value = _integer(text, f"an integer from 0 to {MAX_SEED}")
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(
            f"must be an integer from 0 to {MAX_SEED}, got {_shown(text)}"
        )
    return value


def positive_float(text: str) -> float:
    """argparse ``type``: a finite number ``> 0`` (no ``nan``, ``inf``)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not text.strip().isascii() or not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {_shown(text)}")
    return value


def _strict(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _strict(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(item) for item in value]
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):  # float, numpy floats
        number = float(value)
        return number if math.isfinite(number) else None
    return value


def strict_json(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as strict JSON text: every command prints its JSON through this.

    NaN and the infinities (an undefined statistic: an ESS of one draw, a rate of nothing per
    second) become ``null``, numpy numbers plain numbers; ``allow_nan=False`` then makes sure
    no ``NaN`` or ``Infinity`` token, which JSON does not have, is ever printed.

    Args:
        value: Dicts, lists, tuples, strings, numbers, booleans and None.
        indent: As in :func:`json.dumps`.
    """
    import json

    return json.dumps(_strict(value), indent=indent, allow_nan=False)


def enum_values(kind: type[Enum]) -> list[str]:
    """The values of a ``str`` enum, in definition order (for ``choices``)."""
    return [member.value for member in kind]


def add_global_options(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    """Add ``--threads``, ``--debug``, ``-v/--verbose`` and ``-q/--quiet``, accepted before and
    after the subcommand.

    The top-level parser holds the defaults; on a sub-parser the options default to
    ``SUPPRESS`` so that an option given before the subcommand is not overwritten. An option
    string the sub-parser already has is left to it (``probrank eval -q`` is trec_eval's
    per-topic output; ``probrank -q eval`` or ``probrank eval --quiet`` is quiet).
    """
    suppress = {} if top_level else {"default": argparse.SUPPRESS}
    parser.add_argument(
        "--threads",
        type=bounded(MAX_THREADS),
        metavar="N",
        help="threads of every pool (torch, BLAS, OpenMP); default $PROBRANK_THREADS, "
        "$OMP_NUM_THREADS or the usable CPUs",
        **({"default": None} if top_level else suppress),
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="print the traceback of an error",
        **({"default": False} if top_level else suppress),
    )
    taken = parser._option_string_actions
    for flags, dest, text in (
        (("-v", "--verbose"), "verbose", "log more (-v: debug messages)"),
        (("-q", "--quiet"), "quiet", "log warnings and errors only, no progress bars"),
    ):
        free = [flag for flag in flags if flag not in taken]
        parser.add_argument(
            *free,
            dest=dest,
            action="count",
            help=text,
            **({"default": 0} if top_level else suppress),
        )


def threads_before_parsing(
    argv: Sequence[str], commands: Container[str]
) -> tuple[int | None, str | None]:
    """The ``--threads`` value and the subcommand of ``argv``, read before the parser is built.

    The thread pools must be sized before the modules that define the option choices load
    numpy or torch. A value that is not a positive integer is left to the parser's error (None
    here); the last ``--threads`` wins, as in argparse.

    Returns:
        ``(threads or None, command name or None)``.
    """
    threads: int | None = None
    command: str | None = None
    items = list(argv)
    index = 0
    while index < len(items):
        item = items[index]
        if item == "--":
            break
        value: str | None = None
        if item == "--threads" and index + 1 < len(items):
            value = items[index + 1]
            index += 1
        elif item.startswith("--threads="):
            value = item.partition("=")[2]
        elif command is None and not item.startswith("-") and item in commands:
            command = item
        if value is not None:
            text = value.strip()
            number = text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS
            threads = int(text) if number and 0 < int(text) <= MAX_THREADS else None
        index += 1
    return threads, command


_QUIET_BARS = ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")
"""Variables that turn progress bars off: ours and tqdm's (:mod:`probrank._progress`), and
Hugging Face's (read when transformers loads, which is after the CLI has parsed)."""


@contextmanager
def logging_scope(verbosity: int) -> Iterator[logging.Logger]:
    """Log the ``probrank`` loggers to stderr for a block, at a level set by ``verbosity``.

    ``verbosity`` is ``-v`` count minus ``-q`` count: below 0 warnings and errors only (and no
    progress bars: :data:`_QUIET_BARS`), 0 informational messages, above 0 debug messages
    too. Messages read ``probrank: <message>`` (``-v``: with the logger's name and level).
    Everything is put back afterwards.
    """
    logger = logging.getLogger("probrank")
    level = logging.WARNING if verbosity < 0 else logging.INFO if verbosity == 0 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    form = "probrank: %(message)s" if verbosity <= 0 else "%(name)s: %(levelname)s: %(message)s"
    handler.setFormatter(logging.Formatter(form))
    saved = (logger.level, logger.propagate)
    saved_env = {name: os.environ.get(name) for name in _QUIET_BARS}
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    if verbosity < 0:
        os.environ.update(dict.fromkeys(_QUIET_BARS, "1"))
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 600 else line[:597] + "..."


def describe_error(exc: BaseException) -> str:
    """One line saying what went wrong, naming the file where the error has one.

    ``InputDataError`` keeps its ``file:line: what`` message; an ``OSError`` becomes
    ``file: reason``; ``MemoryError`` says so; anything else is ``TypeName: message``.
    """
    if isinstance(exc, ProbrankError):
        return _one_line(str(exc))
    if isinstance(exc, MemoryError):
        detail = _one_line(str(exc))
        return "out of memory (MemoryError" + (f": {detail})" if detail else ")")
    if isinstance(exc, OSError) and exc.filename is not None:
        reason = exc.strerror or type(exc).__name__
        names = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 else "")
        return _one_line(f"{names}: {reason}")
    message = _one_line(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def silence_stdout() -> None:
    """Point stdout at ``/dev/null`` after a broken pipe, so that the interpreter's final flush
    does not print a second error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (tests)
        pass


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` in the main thread (so the
    process ends through ``finally`` blocks with a message, not as a signal death)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
