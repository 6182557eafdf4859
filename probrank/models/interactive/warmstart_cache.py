"""The on-disk cache of warm starts: checksummed entries, refused when damaged or stale.

An entry is ``<cache>/interactive-warmstart/<key>.pt``, written atomically and read with
``torch.load(..., weights_only=True)``, so every command after the first reuses the networks.
The key is a hash of the warm start's identity
(:func:`~probrank.models.interactive.warmstart.warm_start_identity`). Each entry carries a header
with that identity, the name, shape and dtype of every tensor and a SHA-256 checksum of the
tensors and numbers::

    {"header": {"format": "probrank-warmstart", "version": 2, "identity": {...},
                "tensors": {"members.0.output.weight": {"shape": [1, 10], "dtype": ...}, ...},
                "checksum": <hex>, "written_by": {...}},
     "members": [state dicts], "validation_accuracy": ..., "epochs": ..., "swag": {...}}

An entry that is truncated, corrupted, stale (another identity), of another format, or whose
tensors do not fit the network is never used: one :class:`~probrank.encoders.cache.CacheWarning`
names it and why, it is deleted, and the caller trains the networks again (and caches them
anew).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor

from probrank._files import write_atomically
from probrank.encoders.cache import CacheWarning

__all__ = ["WARM_START_FORMAT", "WARM_START_VERSION", "load_entry", "save_entry"]

WARM_START_FORMAT = "probrank-warmstart"
WARM_START_VERSION = 2
"""Bumped whenever the training code changes what a given identity trains."""

T = TypeVar("T")


class _BadEntry(Exception):
    """Why a cache entry cannot be used (internal)."""


def _named_tensors(payload: dict[str, Any]) -> dict[str, Tensor]:
    """Every tensor of an entry under a dotted name (``members.0.output.weight``, ``swag.mean``)."""
    found: dict[str, Tensor] = {}
    for index, state in enumerate(payload["members"]):
        for name, tensor in state.items():
            found[f"members.{index}.{name}"] = tensor
    swag = payload.get("swag")
    if swag is not None:
        for name in ("mean", "variance", "deviations"):
            found[f"swag.{name}"] = swag[name]
    return found


def _numbers(payload: dict[str, Any]) -> dict[str, Any]:
    """The entry's numbers other than tensors (covered by the checksum too)."""
    swag = payload.get("swag")
    return {
        "validation_accuracy": payload["validation_accuracy"],
        "epochs": payload["epochs"],
        "swag": None if swag is None else [swag["num_snapshots"], swag["scale"]],
    }


def _checksum(tensors: dict[str, Tensor], numbers: dict[str, Any]) -> str:
    """SHA-256 hex digest of the numbers and of each tensor's name, shape, dtype and bytes."""
    digest = hashlib.sha256(WARM_START_FORMAT.encode() + b"\0")
    digest.update(json.dumps(numbers, sort_keys=True).encode())
    for name in sorted(tensors):
        tensor = tensors[name].detach().contiguous().cpu()
        digest.update(json.dumps([name, list(tensor.shape), str(tensor.dtype)]).encode())
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


def _layout(tensors: dict[str, Tensor]) -> dict[str, dict[str, Any]]:
    return {n: {"shape": list(t.shape), "dtype": str(t.dtype)} for n, t in tensors.items()}


def _entry_path(cache_dir: str | Path, key: str) -> Path:
    return Path(cache_dir) / "interactive-warmstart" / f"{key}.pt"


def save_entry(
    cache_dir: str | Path | None, key: str, identity: dict[str, Any], payload: dict[str, Any]
) -> None:
    """Write ``payload`` (members, numbers, optional SWAG) under ``key`` with its header.

    Args:
        cache_dir: The cache folder (None: nothing is written).
        key: The entry's key.
        identity: What the networks depend on (stored in the header, checked on reading).
        payload: :func:`~probrank.models.interactive.warmstart.warm_start_payload`'s dict.
    """
    if cache_dir is None:
        return
    path = _entry_path(cache_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)  # the cache's own folder
    entry = dict(payload)
    tensors = _named_tensors(entry)
    from probrank import __version__

    entry["header"] = {
        "format": WARM_START_FORMAT,
        "version": WARM_START_VERSION,
        "identity": identity,
        "tensors": _layout(tensors),
        "checksum": _checksum(tensors, _numbers(entry)),
        "written_by": {"probrank": str(__version__), "torch": str(torch.__version__)},
    }
    write_atomically(path, lambda temp: torch.save(entry, temp))


def load_entry(
    cache_dir: str | Path | None,
    key: str,
    identity: dict[str, Any],
    restore: Callable[[dict[str, Any]], T],
) -> T | None:
    """The cached entry of ``key`` turned into networks by ``restore``, or None.

    None when there is no cache or no entry, or when the entry cannot be used: then one
    :class:`~probrank.encoders.cache.CacheWarning` names it and why, and it is deleted.

    Args:
        cache_dir: The cache folder (None: no cache).
        key: The entry's key.
        identity: The identity the entry must have been written for.
        restore: Builds the result from the entry's payload; raises ``RuntimeError``,
            ``KeyError``, ``TypeError`` or ``ValueError`` when the tensors do not fit.
    """
    if cache_dir is None:
        return None
    path = _entry_path(cache_dir, key)
    try:
        before = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        before = None
        bad: _BadEntry | None = _BadEntry(f"unreadable ({error.strerror})")
    else:
        try:
            return _read(path, identity, restore)
        except _BadEntry as error:
            bad = error
    warnings.warn(
        f"warm-start cache entry {path}: {bad}; ignored, the networks are trained again",
        CacheWarning,
        stacklevel=3,
    )
    try:  # delete it unless another process has just replaced it
        now = path.stat()
        if before is not None and (now.st_ino, now.st_mtime_ns) == (
            before.st_ino,
            before.st_mtime_ns,
        ):
            path.unlink()
    except OSError:
        pass
    return None


def _read(path: Path, identity: dict[str, Any], restore: Callable[[dict[str, Any]], T]) -> T:
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # truncated, garbage, not a torch file: any failure is damage
        raise _BadEntry(f"unreadable ({type(error).__name__})") from None
    if not isinstance(payload, dict):
        raise _BadEntry("not a warm-start cache entry")
    header = payload.get("header")
    if not isinstance(header, dict):
        raise _BadEntry("no header (written by an older probrank)")
    if header.get("format") != WARM_START_FORMAT or header.get("version") != WARM_START_VERSION:
        raise _BadEntry(
            f"format {header.get('format')!r} version {header.get('version')!r}, expected "
            f"{WARM_START_FORMAT!r} version {WARM_START_VERSION}"
        )
    if header.get("identity") != identity:
        raise _BadEntry("stale: " + _difference(header.get("identity"), identity))
    try:
        tensors = _named_tensors(payload)
        numbers = _numbers(payload)
    except (KeyError, TypeError, AttributeError) as error:
        raise _BadEntry(f"malformed ({type(error).__name__}: {error})") from None
    if not all(isinstance(t, Tensor) for t in tensors.values()):
        raise _BadEntry("a value that should be a tensor is not one")
    layout = _layout(tensors)
    if header.get("tensors") != layout:
        stored = header.get("tensors")
        listed: dict[str, Any] = stored if isinstance(stored, dict) else {}
        names = sorted(n for n in set(layout) | set(listed) if layout.get(n) != listed.get(n))
        first = names[0]
        raise _BadEntry(
            f"tensor {first} is {layout.get(first)}, the header says {listed.get(first)}"
        )
    if header.get("checksum") != _checksum(tensors, numbers):
        raise _BadEntry("checksum mismatch")
    try:
        return restore(payload)
    except (RuntimeError, KeyError, TypeError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise _BadEntry(f"does not fit the network: {reason[:200]}") from None


def _difference(stored: object, expected: dict[str, Any]) -> str:
    """Which identity fields of a stale entry differ, e.g. ``threads 4 (expected 1)``."""
    if not isinstance(stored, dict):
        return "no identity in the header"
    changed = [
        f"{name} {stored.get(name)!r} (expected {expected.get(name)!r})"
        for name in sorted(set(stored) | set(expected))
        if stored.get(name) != expected.get(name)
    ]
    shown = [c if len(c) < 160 else c.split(" ", 1)[0] + " differs" for c in changed[:3]]
    return "written for " + ", ".join(shown) + (", ..." if len(changed) > 3 else "")
