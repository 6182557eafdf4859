"""Exceptions and warnings raised by probrank.

Every error a user can cause with bad input is an :class:`InputDataError` whose message names
the file, the line and the offending value, so that the CLI can print it as one line.
"""

from __future__ import annotations

__all__ = [
    "ConvergenceWarning",
    "InputDataError",
    "MissingExtraError",
    "NumericsWarning",
    "ProbrankError",
]


class ProbrankError(Exception):
    """Base class of every exception probrank raises on purpose."""


class InputDataError(ProbrankError, ValueError):
    """Bad input: a malformed file, an unknown option or an inconsistent argument.

    Args:
        message: What is wrong, in one line.
        path: The file the input came from, if any.
        line: The 1-based line number in ``path``, if any.
    """

    def __init__(self, message: str, *, path: object | None = None, line: int | None = None):
        self.reason = message
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)


class MissingExtraError(ProbrankError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it
    (``pip install 'probrank[mediqa]'``). Raised by :func:`probrank._extras.require`."""


class NumericsWarning(UserWarning):
    """A computation met an undefined value (e.g. a division by zero) and returned NaN."""


class ConvergenceWarning(UserWarning):
    """An inference routine (SVI, MCMC, EM, Laplace) did not meet its convergence criterion."""
