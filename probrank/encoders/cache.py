"""On-disk cache of frozen encoder outputs, keyed by model, revision, settings and text hash.

Entries live in shards ``<root>/<model key>/shard-<hash>.pt``, each a ``{"keys": [...],
"values": Tensor}`` dict written atomically (temporary file + rename) and read back with
``torch.load(..., weights_only=True)``. A shard is never rewritten, so two processes that fill
the same cache at once at worst encode some texts twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from probrank._files import write_atomically

__all__ = ["EmbeddingCache", "project_root", "resolve_cache_dir", "text_key"]


def text_key(*parts: str) -> str:
    """SHA-256 hex digest of ``parts`` joined unambiguously (length-prefixed)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
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


class EmbeddingCache:
    """A key -> vector store for one model and one set of encoding settings.

    Args:
        root: Cache folder.
        namespace: Model name, revision and settings, made into a folder name.
    """

    def __init__(self, root: str | Path, namespace: str) -> None:
        self.folder = Path(root) / namespace
        self._store: dict[str, Tensor] | None = None

    def _load(self) -> dict[str, Tensor]:
        if self._store is None:
            store: dict[str, Tensor] = {}
            if self.folder.is_dir():
                for shard in sorted(self.folder.glob("shard-*.pt")):
                    content = torch.load(shard, weights_only=True)
                    store.update(zip(content["keys"], content["values"], strict=True))
            self._store = store
        return self._store

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

    def put(self, keys: Sequence[str], values: Tensor) -> None:
        """Add `n x d` ``values`` under ``keys`` and write them as one new shard."""
        if not keys:
            return
        values = values.detach().to("cpu", torch.float32).contiguous()
        self._load().update(zip(keys, values, strict=True))
        name = "shard-" + text_key(*keys)[:24] + ".pt"
        payload = {"keys": list(keys), "values": values}
        write_atomically(self.folder / name, lambda temp: torch.save(payload, temp))
