"""On-disk cache of frozen encoder outputs, keyed by model, revision, settings and text hash.

Entries live in shards ``<root>/<namespace>/shard-<hash>.pt``, each a dict written atomically
(temporary file + rename) and read back with ``torch.load(..., weights_only=True)``::

    {"header": {"format": "probrank-embedding-cache", "version": 2,
                "identity": {"model": ..., "revision": ..., <settings that shape the vectors>},
                "shape": [n, d], "dtype": "torch.float32", "checksum": <SHA-256 hex>,
                "written_by": {"probrank": ..., "torch": ...}},
     "keys": [n key strings], "values": <n x d float32 tensor>}

The checksum is a SHA-256 of the keys, the shape, the dtype and the tensor's bytes
(:func:`shard_checksum`).

Integrity. A shard that cannot be read (missing, truncated, garbage), whose checksum does not
match, whose shape or dtype is not what its header and the cache expect, or that was written
for another model, revision or settings (stale; also a shard of an older probrank without a
header) is never used: its entries count as missing and are recomputed, the shard is deleted
(the recomputed vectors are written as a new shard, under the same name when the same texts are
encoded), and a single :class:`CacheWarning` per cache object names how many shards were
dropped and why. No damaged entry raises a traceback.

A shard is written whole or not at all (:func:`probrank._files.write_atomically`) and never
modified in place, so two processes that fill the same cache at once at worst encode some texts
twice, and a run killed while writing leaves no partial shard.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank._files import write_atomically

__all__ = [
    "CACHE_FORMAT",
    "CACHE_VERSION",
    "CacheWarning",
    "EmbeddingCache",
    "drop_shard",
    "identity_changes",
    "project_root",
    "resolve_cache_dir",
    "shard_checksum",
    "text_key",
    "warn_dropped",
    "written_by",
]

CACHE_FORMAT = "probrank-embedding-cache"
CACHE_VERSION = 2
_DTYPE = torch.float32


class CacheWarning(UserWarning):
    """A cache entry was truncated, corrupted or stale: it was ignored and is recomputed."""


def text_key(*parts: str) -> str:
    """SHA-256 hex digest of ``parts`` joined unambiguously (length-prefixed)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def shard_checksum(keys: Sequence[str], values: Tensor) -> str:
    """SHA-256 hex digest of a shard's keys, shape, dtype and tensor bytes.

    Args:
        keys: `n` keys.
        values: `n x d` CPU tensor.
    """
    digest = hashlib.sha256(CACHE_FORMAT.encode() + b"\0")
    digest.update(len(keys).to_bytes(8, "little"))
    for key in keys:
        data = key.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    digest.update(json.dumps([list(values.shape), str(values.dtype)]).encode())
    digest.update(values.detach().contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()


def project_root(start: str | Path) -> Path | None:
    """The nearest folder at or above ``start`` (a file or folder) holding ``pyproject.toml``
    or ``.git``; ``None`` when there is none."""
    path = Path(start).resolve()
    for folder in [path, *path.parents] if path.is_dir() else list(path.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return None


def resolve_cache_dir(cache_dir: str | Path | None, config_path: str | Path) -> Path | None:
    """Where a config's ``cache_dir`` points.

    Absolute paths are kept; relative ones are resolved against the project root of the
    config file (see :func:`project_root`), or the config's own folder outside a project, so
    that the same config finds the same cache from any working directory. ``None`` or ``""``
    disables the cache.

    Args:
        cache_dir: The configured value.
        config_path: The config file it was read from.

    Returns:
        An absolute folder, or ``None``.
    """
    if cache_dir is None or str(cache_dir) == "":
        return None
    path = Path(cache_dir).expanduser()
    if path.is_absolute():
        return path
    config_path = Path(config_path)
    base = project_root(config_path) or config_path.resolve().parent
    return base / path


class _BadShard(Exception):
    """Why a shard cannot be used (internal)."""


def _canonical(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` as it reads back from JSON (tuples become lists), so headers compare equal."""
    try:
        return dict(json.loads(json.dumps(dict(value), sort_keys=True)))
    except (TypeError, ValueError) as error:
        raise TypeError(f"cache identity must be JSON-serialisable: {error}") from None


class EmbeddingCache:
    """A key -> vector store for one model and one set of encoding settings.

    Args:
        root: Cache folder.
        namespace: Model name, revision and settings, made into a folder name.
        identity: What determines the vectors (model id, revision, pooling, ...; JSON values).
            Written into every shard's header; a shard whose header differs is stale.
        dim: The width ``d`` every vector must have (None: any, as long as the shard is
            consistent).

    Attributes:
        folder: ``root / namespace``.
        dropped: ``(shard, reason)`` of the shards found damaged or stale (and deleted).
    """

    def __init__(
        self,
        root: str | Path,
        namespace: str,
        *,
        identity: Mapping[str, Any] | None = None,
        dim: int | None = None,
    ) -> None:
        self.folder = Path(root) / namespace
        self.identity = _canonical(identity or {})
        self.dim = dim
        self.dropped: list[tuple[Path, str]] = []
        self._store: dict[str, Tensor] | None = None

    # -- reading -------------------------------------------------------------------------------

    def _load(self) -> dict[str, Tensor]:
        if self._store is None:
            store: dict[str, Tensor] = {}
            if self.folder.is_dir():
                for shard in sorted(self.folder.glob("shard-*.pt")):
                    try:
                        before = shard.stat()
                    except OSError:  # e.g. deleted by another process since the glob
                        continue
                    try:
                        keys, values = self._read(shard)
                    except _BadShard as bad:
                        self._drop(shard, str(bad), before)
                        continue
                    store.update(zip(keys, values, strict=True))
            self._store = store
            self._warn()
        return self._store

    def _read(self, shard: Path) -> tuple[list[str], Tensor]:
        try:
            content = torch.load(shard, map_location="cpu", weights_only=True)
        except Exception as error:  # truncated, garbage, not a torch file: any failure is damage
            raise _BadShard(f"unreadable ({type(error).__name__})") from None
        if not isinstance(content, dict):
            raise _BadShard("not a cache shard")
        header = content.get("header")
        if not isinstance(header, dict):
            raise _BadShard("no header (written by an older probrank)")
        if header.get("format") != CACHE_FORMAT or header.get("version") != CACHE_VERSION:
            raise _BadShard(
                f"format {header.get('format')!r} version {header.get('version')!r}, "
                f"expected {CACHE_FORMAT!r} version {CACHE_VERSION}"
            )
        identity = header.get("identity")
        if identity != self.identity:
            raise _BadShard("stale: " + _difference(identity, self.identity))
        keys, values = content.get("keys"), content.get("values")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise _BadShard("keys are not a list of strings")
        if not isinstance(values, Tensor):
            raise _BadShard("values are not a tensor")
        shape = [int(s) for s in values.shape]
        if header.get("shape") != shape or values.dim() != 2 or shape[0] != len(keys):
            raise _BadShard(
                f"shape {shape} with {len(keys)} keys, header says {header.get('shape')!r}"
            )
        if self.dim is not None and shape[1] != self.dim:
            raise _BadShard(f"vectors of width {shape[1]}, expected {self.dim}")
        if values.dtype != _DTYPE or header.get("dtype") != str(_DTYPE):
            raise _BadShard(f"dtype {values.dtype} (header {header.get('dtype')!r}), not {_DTYPE}")
        if header.get("checksum") != shard_checksum(keys, values):
            raise _BadShard("checksum mismatch")
        return keys, values

    def _drop(self, shard: Path, reason: str, before: os.stat_result) -> None:
        drop_shard(self.dropped, shard, reason, before)

    def _warn(self) -> None:
        warn_dropped(self.dropped, f"embedding cache {self.folder}", "vectors", stacklevel=2)

    # -- the store -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._load())

    def missing(self, keys: Sequence[str]) -> list[str]:
        """Keys of ``keys`` not in the cache, de-duplicated, in first-seen order."""
        store = self._load()
        return list(dict.fromkeys(k for k in keys if k not in store))

    def get(self, keys: Sequence[str]) -> Tensor:
        """`n x d` vectors of ``keys`` (all must be present)."""
        store = self._load()
        return torch.stack([store[k] for k in keys])

    def shard_path(self, keys: Sequence[str]) -> Path:
        """The file :meth:`put` writes for ``keys``: ``shard-<hash of the keys>.pt`` (the same
        keys in the same order always give the same file)."""
        return self.folder / ("shard-" + text_key(*keys)[:24] + ".pt")

    def put(self, keys: Sequence[str], values: Tensor) -> Path | None:
        """Add `n x d` ``values`` under ``keys`` and write them as one new shard.

        Returns:
            The shard written (:meth:`shard_path`), or None for no keys.

        Raises:
            ValueError: ``values`` is not `len(keys) x d` (with ``d = dim`` when set).
        """
        if not keys:
            return None
        keys = list(keys)
        values = values.detach().to("cpu", _DTYPE).contiguous()
        if values.dim() != 2 or values.shape[0] != len(keys):
            raise ValueError(f"{len(keys)} keys but values of shape {tuple(values.shape)}")
        if self.dim is not None and values.shape[1] != self.dim:
            raise ValueError(f"vectors of width {values.shape[1]}, the cache holds {self.dim}")
        self._load().update(zip(keys, values, strict=True))
        header = {
            "format": CACHE_FORMAT,
            "version": CACHE_VERSION,
            "identity": self.identity,
            "shape": [int(s) for s in values.shape],
            "dtype": str(values.dtype),
            "checksum": shard_checksum(keys, values),
            "written_by": written_by(),
        }
        payload = {"header": header, "keys": keys, "values": values}
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.shard_path(keys)
        write_atomically(path, lambda temp: torch.save(payload, temp))
        return path


def drop_shard(
    dropped: list[tuple[Path, str]], shard: Path, reason: str, before: os.stat_result
) -> None:
    """Record a damaged or stale ``shard`` in ``dropped`` and delete it, unless another process
    has replaced it since it was stat'ed (``before``). Shared with the hidden-state cache."""
    dropped.append((shard, reason))
    try:
        now = shard.stat()
        if (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns):
            shard.unlink()
    except OSError:
        pass


def warn_dropped(dropped: list[tuple[Path, str]], what: str, content: str, stacklevel: int) -> None:
    """One :class:`CacheWarning` for the shards of ``dropped`` (none: no warning), naming the
    first; ``what`` names the cache, ``content`` what is recomputed. ``stacklevel`` counts
    from the caller, as if it had called :func:`warnings.warn` itself."""
    if not dropped:
        return
    shard, reason = dropped[0]
    more = f" (and {len(dropped) - 1} more)" if len(dropped) > 1 else ""
    warnings.warn(
        f"{what}: ignored {len(dropped)} damaged or stale shard(s): {shard.name}: "
        f"{reason}{more}; their {content} are recomputed",
        CacheWarning,
        stacklevel=stacklevel + 1,
    )


def identity_changes(stored: Mapping[str, Any], expected: Mapping[str, Any]) -> str:
    """The identity fields that differ, at most three, e.g. ``revision 'a1' (expected 'b2')``."""
    changed = [
        f"{name} {stored.get(name)!r} (expected {expected.get(name)!r})"
        for name in sorted(set(stored) | set(expected))
        if stored.get(name) != expected.get(name)
    ]
    return ", ".join(changed[:3]) + (", ..." if len(changed) > 3 else "")


def _difference(stored: object, expected: dict[str, Any]) -> str:
    """Which identity fields of a stale shard differ, e.g. ``revision 'a1' (expected 'b2')``."""
    if not isinstance(stored, dict):
        return "no model identity in the header"
    return "written for " + identity_changes(stored, expected)


def written_by() -> dict[str, str]:
    from probrank import __version__

    # plain ``str``: ``torch.__version__`` is a ``TorchVersion``, a class that
    # ``torch.load(weights_only=True)`` refuses to unpickle (every shard would read as damaged)
    return {"probrank": str(__version__), "torch": str(torch.__version__)}
