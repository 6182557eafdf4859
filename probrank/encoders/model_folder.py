"""A local transformer model folder, checked before transformers loads it.

transformers reads ``config.json`` lazily and fails, on a damaged one, deep inside the
tokenizer or the model with its own error types (a ``ValueError`` about a tokenizer class, a
``RuntimeError`` about tensor sizes when a text is longer than the model's positions). These
checks read the config first, as plain JSON, and say in one sentence which file and which
field is wrong; they load no weights and import no torch.

* :func:`read_model_config` reads ``config.json``: a JSON object with a ``model_type``
  transformers knows and positive integer sizes (``hidden_size``, ``vocab_size``,
  ``max_position_embeddings``, ...).
* :func:`max_positions` is the longest input the model embeds: ``max_position_embeddings``
  (less the padding offset of the RoBERTa family), capped by the tokenizer's
  ``model_max_length`` when ``tokenizer_config.json`` gives a sane one.
* :func:`check_model_folder` does both and checks a token limit against them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from probrank.exceptions import InputDataError

__all__ = ["check_model_folder", "max_positions", "read_model_config"]

CONFIG_NAME = "config.json"
_SIZES = (
    "hidden_size",
    "vocab_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
)
"""Fields of ``config.json`` that, when present, must be positive integers."""
_LIMIT = 10**7
"""A size or token limit above this is not a real model's (tokenizers use 1e30 for "none")."""
_OFFSET_PADDING = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "bart"})
"""Model types whose position ids start after the padding index (512 usable of 514)."""


def _known_model_types() -> frozenset[str] | None:
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except ImportError:  # pragma: no cover - transformers is a core dependency
        return None
    return frozenset(CONFIG_MAPPING_NAMES)


def _positive_size(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and 0 < value <= _LIMIT


def _read_json(file: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputDataError("not UTF-8 text", path=file) from None
    except json.JSONDecodeError as exc:
        raise InputDataError(f"invalid JSON ({exc.msg}, line {exc.lineno})", path=file) from None
    except (RecursionError, ValueError):  # nested too deeply, an integer of 4300+ digits
        raise InputDataError(
            "invalid JSON (nested too deeply or a huge number)", path=file
        ) from None
    except OSError as exc:
        raise InputDataError(f"cannot read: {exc.strerror}", path=file) from None


def read_model_config(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """``config.json`` of a local model folder, checked field by field.

    Args:
        folder: The model folder.

    Returns:
        The config as a dict.

    Raises:
        InputDataError: no folder or no ``config.json``, invalid JSON, not an object, a missing
            or unknown ``model_type``, or a size that is not a positive integer (the message
            names the file and the field).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputDataError("not a local transformer model folder (no such folder)", path=folder)
    file = folder / CONFIG_NAME
    if not file.is_file():
        raise InputDataError("not a local transformer model folder (no config.json)", path=folder)
    config = _read_json(file)
    if not isinstance(config, dict):
        raise InputDataError(f"expected a JSON object, got {type(config).__name__}", path=file)
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise InputDataError("field 'model_type' is missing or not a string", path=file)
    known = _known_model_types()
    if known is not None and model_type not in known:
        raise InputDataError(
            f"field 'model_type' is {model_type[:60]!r}, a model type transformers does not know",
            path=file,
        )
    for name in _SIZES:
        if name in config and not _positive_size(config[name]):
            shown = repr(config[name])
            shown = shown if len(shown) <= 40 else shown[:30] + "..."
            raise InputDataError(
                f"field {name!r} must be a positive integer <= {_LIMIT}, got {shown}", path=file
            )
    return config


def max_positions(folder: str | os.PathLike[str]) -> int | None:
    """The longest input (tokens) the model in ``folder`` embeds, or None when unbounded.

    Raises:
        InputDataError: see :func:`read_model_config`.
    """
    limit = _limit(Path(folder))
    return None if limit is None else limit[0]


def _limit(folder: Path) -> tuple[int, Path, str] | None:
    """The token limit, the file and the field it comes from (the smallest of them)."""
    config = read_model_config(folder)
    limits: list[tuple[int, Path, str]] = []
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int):
        offset = 0
        if config["model_type"] in _OFFSET_PADDING:
            pad = config.get("pad_token_id", 1)
            offset = (pad if isinstance(pad, int) and 0 <= pad < positions else 1) + 1
        limits.append((max(positions - offset, 1), folder / CONFIG_NAME, "max_position_embeddings"))
    tokenizer = folder / "tokenizer_config.json"
    if tokenizer.is_file():
        settings = _read_json(tokenizer)
        limit = settings.get("model_max_length") if isinstance(settings, dict) else None
        if _positive_size(limit):
            limits.append((int(limit), tokenizer, "model_max_length"))  # type: ignore[arg-type]
    return min(limits, key=lambda item: item[0]) if limits else None


def check_model_folder(
    folder: str | os.PathLike[str], *, max_length: int | None = None, option: str = "max_length"
) -> dict[str, Any]:
    """Check a model folder's config and, given, a token limit against its positions.

    Args:
        folder: The model folder.
        max_length: Tokens per sequence the caller will ask for (None: not checked).
        option: How the caller names the token limit (``--max-length`` on the command line).

    Returns:
        The config (see :func:`read_model_config`).

    Raises:
        InputDataError: a damaged config, or ``max_length`` beyond the model's positions.
    """
    config = read_model_config(folder)
    if max_length is not None:
        limit = _limit(Path(folder))
        if limit is not None and max_length > limit[0]:
            raise InputDataError(
                f"{option} {max_length} is more than the {limit[0]} positions the model embeds "
                f"(field {limit[2]!r})",
                path=limit[1],
            )
    return config
