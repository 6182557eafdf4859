"""Files that appear whole or not at all: results, caches, figures and reports.

Every writer in probrank goes through :func:`write_atomically`: the content is written to a
temporary file in the target's folder and renamed over the target, so an interrupted run
leaves either the previous file or the new one, never a truncated one, and never a stray
temporary file. (Text files read back by the data layer use
:func:`probrank.data._io.atomic_write`, which also fsyncs and gzips.)

Figures written to files are made with :func:`new_figure`, detached from pyplot: writing one
neither selects a backend (``matplotlib.use``) nor adds to pyplot's open figures, so running an
experiment or the demo from a notebook leaves the notebook's inline backend as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["new_figure", "save_figure", "write_atomically", "write_text_atomically"]


def write_atomically(path: str | os.PathLike[str], write: Callable[[str], object]) -> Path:
    """Call ``write(temporary_path)``, then rename the temporary file over ``path``.

    The folder is created if needed; the file gets mode 0644 (``mkstemp`` makes it 0600).

    Args:
        path: The target file.
        write: Writes the whole content to the path it is given.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(handle)
    try:
        write(temp)
        os.chmod(temp, 0o644)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target


def write_text_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (see :func:`write_atomically`)."""
    return write_atomically(path, lambda temp: Path(temp).write_text(text, encoding="utf-8"))


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
