"""Progress bars: one constructor for every bar of the package, silenced by ``-q``.

:func:`progress_bar` is ``tqdm.auto.tqdm`` (a notebook widget in Jupyter, text elsewhere) whose
``disable`` is also set when ``$TQDM_DISABLE`` is true, which ``probrank -q`` sets for its run
(tqdm itself reads that variable only for bars that do not pass ``disable``). Library callers
keep their own ``progress=`` / ``show_progress=`` switches.
"""

from __future__ import annotations

import os
from typing import Any

from tqdm.auto import tqdm

__all__ = ["progress_bar", "progress_enabled"]

_TRUE = {"1", "true", "yes", "on"}


def progress_enabled() -> bool:
    """False when ``$TQDM_DISABLE`` is true (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in _TRUE


def progress_bar(iterable: Any = None, *, disable: bool | None = False, **kwargs: Any) -> Any:
    """A ``tqdm.auto.tqdm`` bar, disabled when ``disable`` or when bars are off.

    Args:
        iterable: As for tqdm (None: a bar updated by hand, ``total=`` gives its length).
        disable: As for tqdm (None: only on a non-terminal, tqdm's rule).
        **kwargs: As for tqdm (``desc``, ``total``, ``unit``, ...).
    """
    off = True if not progress_enabled() else disable
    return tqdm(iterable, disable=off, **kwargs)
