"""The ``[encoder]`` table of an experiment config, as a :class:`TransformerEncoder`.

Every protocol reads the same keys: ``name_or_path`` (alias ``model``; default the offline
all-MiniLM-L6-v2), ``mode``, ``pooling``, ``max_length``, ``batch_size``, ``cache_dir`` and
``show_progress`` (alias ``progress``). Values a table omits come from the protocol's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probrank.encoders.cache import resolve_cache_dir
from probrank.encoders.transformer import TransformerEncoder

__all__ = ["encoder_cache_dir", "encoder_from_config"]


def encoder_cache_dir(
    table: Mapping[str, Any] | None, config_path: str | Path | None
) -> Path | None:
    """The absolute encoder-cache folder of an ``[encoder]`` table (``None``: no cache).

    A relative ``cache_dir`` (default ``.probrank-cache``) is resolved against the project root
    of ``config_path`` when one is given, else against the working directory; ``""`` disables
    the cache.
    """
    configured = (table or {}).get("cache_dir", ".probrank-cache")
    if config_path is not None:
        return resolve_cache_dir(configured, config_path)
    return Path(configured).expanduser().absolute() if configured else None


def encoder_from_config(
    table: Mapping[str, Any] | None,
    config_path: str | Path | None = None,
    *,
    freeze: bool = True,
    show_progress: bool | None = None,
    mode: str = "bi",
    pooling: str = "mean",
    max_length: int = 256,
) -> TransformerEncoder:
    """The encoder an ``[encoder]`` table describes.

    Args:
        table: The table (None: all defaults).
        config_path: The config file (resolves a relative ``cache_dir``, see
            :func:`encoder_cache_dir`).
        freeze: False for end-to-end fine-tuning (no cache then).
        show_progress: Overrides the table's ``show_progress`` / ``progress`` (default True).
        mode: Default ``mode``.
        pooling: Default ``pooling``.
        max_length: Default ``max_length`` (capped at the model's positions; a ``max_length``
            in the table is checked against them).
    """
    table = table or {}
    if show_progress is None:
        show_progress = bool(table.get("show_progress", table.get("progress", True)))
    return TransformerEncoder(
        table.get("name_or_path") or table.get("model") or None,
        mode=table.get("mode", mode),
        pooling=table.get("pooling", pooling),
        max_length=int(table["max_length"]) if "max_length" in table else None,
        default_max_length=max_length,
        batch_size=int(table.get("batch_size", 32)),
        freeze=freeze,
        cache_dir=encoder_cache_dir(table, config_path) if freeze else None,
        show_progress=show_progress,
    )
