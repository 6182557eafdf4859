"""On-disk cache of token-level hidden states (a lower encoder's output), checksummed.

The sibling of the embedding cache (:mod:`probrank.encoders.cache`) for
:class:`~probrank.encoders.hidden_states.HiddenStateEncoder`: per (context, response) pair the
states of every token after the frozen layers, packed without padding
(:class:`~probrank.encoders.packed_states.PackedStates`). Shards live under the same cache root,
``<root>/<namespace>/hidden-<hash>.pt``, and are read back with
``torch.load(..., weights_only=True)``::

    {"header": {"format": "probrank-hidden-state-cache", "version": 1,
                "identity": {"model": ..., "revision": ..., "frozen_layers": k, "max_length": ...,
                             "dtype": "float16", ...},
                "shape": [total, h], "dtype": "torch.float16", "count": n,
                "checksum": <SHA-256 hex>, "written_by": {"probrank": ..., "torch": ...}},
     "keys": [n key strings], "lengths": <n int64 tensor>, "states": <total x h tensor>}

The attention mask of entry ``i`` is ``arange(L) < lengths[i]`` (padding is never stored). The
checksum is a SHA-256 over :func:`probrank.encoders.cache.shard_checksum` of the keys with the
states and of the keys with the lengths (:func:`hidden_shard_checksum`).

Integrity, as in the embedding cache: a shard that cannot be read, whose checksum, shape, dtype
or lengths do not match its header, or that was written for another model, revision, layer
count, length limit or dtype is never used; its entries are recomputed, the shard is deleted,
and one :class:`~probrank.encoders.cache.CacheWarning` per cache object says how many shards
were dropped and why. Shards are written whole (:func:`probrank._files.write_atomically`).

Storage in float16 (the default of the encoder) halves the disk and memory; the conversion
rounds to nearest, so every stored value ``x16`` of a state ``x`` obeys
``|x16 - x| <= 2**-11 |x| + 2**-25`` (:data:`FLOAT16_RELATIVE_ERROR`,
:data:`FLOAT16_ABSOLUTE_ERROR`; a test checks it on encoder states).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank._files import write_atomically
from probrank.encoders.cache import (
    drop_shard,
    identity_changes,
    shard_checksum,
    text_key,
    warn_dropped,
    written_by,
)
from probrank.encoders.packed_states import PackedStates

__all__ = [
    "FLOAT16_ABSOLUTE_ERROR",
    "FLOAT16_RELATIVE_ERROR",
    "HIDDEN_CACHE_FORMAT",
    "HIDDEN_CACHE_VERSION",
    "HiddenStateCache",
    "hidden_shard_checksum",
]

HIDDEN_CACHE_FORMAT = "probrank-hidden-state-cache"
HIDDEN_CACHE_VERSION = 1

FLOAT16_RELATIVE_ERROR = 2.0**-11
"""Unit roundoff of float16 (round to nearest), the relative error of a stored normal value."""
FLOAT16_ABSOLUTE_ERROR = 2.0**-25
"""Half the spacing of float16 subnormals, the absolute error of a stored tiny value."""

_DTYPES = {"float16": torch.float16, "float32": torch.float32}


def hidden_shard_checksum(keys: Sequence[str], states: Tensor, lengths: Tensor) -> str:
    """SHA-256 hex digest of a hidden-state shard.

    Args:
        keys: `n` keys.
        states: `total x h` CPU states.
        lengths: `n` int64 lengths.
    """
    digest = hashlib.sha256(HIDDEN_CACHE_FORMAT.encode() + b"\0")
    digest.update(shard_checksum(keys, states).encode())
    digest.update(shard_checksum(keys, lengths.reshape(-1, 1)).encode())
    return digest.hexdigest()


class _BadShard(Exception):
    """Why a shard cannot be used (internal)."""


class HiddenStateCache:
    """A key -> token states store for one model, layer count and set of settings.

    Args:
        root: Cache folder (shared with the embedding cache).
        namespace: Folder name for these settings.
        identity: What determines the states (JSON values; must include ``"dtype"``,
            ``"float16"`` or ``"float32"``). A shard whose header differs is stale.
        hidden_size: The width ``h`` of every state.

    Attributes:
        folder: ``root / namespace``.
        dropped: ``(shard, reason)`` of the shards found damaged or stale (and deleted).
    """

    def __init__(
        self, root: str | Path, namespace: str, *, identity: Mapping[str, Any], hidden_size: int
    ) -> None:
        self.folder = Path(root) / namespace
        self.identity = dict(json.loads(json.dumps(dict(identity), sort_keys=True)))
        name = self.identity.get("dtype")
        if name not in _DTYPES:
            raise ValueError(f"identity['dtype'] must be one of {sorted(_DTYPES)}, got {name!r}")
        self.dtype = _DTYPES[name]
        self.hidden_size = int(hidden_size)
        self.dropped: list[tuple[Path, str]] = []
        self._store: dict[str, Tensor] | None = None

    # -- reading ---------------------------------------------------------------------------

    def _load(self) -> dict[str, Tensor]:
        if self._store is None:
            store: dict[str, Tensor] = {}
            if self.folder.is_dir():
                for shard in sorted(self.folder.glob("hidden-*.pt")):
                    try:
                        before = shard.stat()
                    except OSError:  # deleted by another process since the glob
                        continue
                    try:
                        keys, states, lengths = self._read(shard)
                    except _BadShard as bad:
                        drop_shard(self.dropped, shard, str(bad), before)
                        continue
                    pieces = torch.split(states, lengths.tolist())
                    store.update(zip(keys, pieces, strict=True))
            self._store = store
            self._warn()
        return self._store

    def _read(self, shard: Path) -> tuple[list[str], Tensor, Tensor]:
        try:
            content = torch.load(shard, map_location="cpu", weights_only=True)
        except Exception as error:  # truncated, garbage, not a torch file: any failure is damage
            raise _BadShard(f"unreadable ({type(error).__name__})") from None
        if not isinstance(content, dict) or not isinstance(content.get("header"), dict):
            raise _BadShard("not a hidden-state shard")
        header = content["header"]
        if (
            header.get("format") != HIDDEN_CACHE_FORMAT
            or header.get("version") != HIDDEN_CACHE_VERSION
        ):
            raise _BadShard(
                f"format {header.get('format')!r} version {header.get('version')!r}, expected "
                f"{HIDDEN_CACHE_FORMAT!r} version {HIDDEN_CACHE_VERSION}"
            )
        if header.get("identity") != self.identity:
            raise _BadShard("stale: written for other settings " + _difference(header, self))
        keys, states, lengths = content.get("keys"), content.get("states"), content.get("lengths")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise _BadShard("keys are not a list of strings")
        if not isinstance(states, Tensor) or not isinstance(lengths, Tensor):
            raise _BadShard("states or lengths are not tensors")
        shape = [int(s) for s in states.shape]
        if (
            header.get("shape") != shape
            or states.dim() != 2
            or shape[1] != self.hidden_size
            or header.get("count") != len(keys)
        ):
            raise _BadShard(
                f"states of shape {shape} for {len(keys)} keys, header says "
                f"{header.get('shape')!r} for {header.get('count')!r}; width {self.hidden_size} "
                "expected"
            )
        if states.dtype != self.dtype or header.get("dtype") != str(self.dtype):
            raise _BadShard(
                f"dtype {states.dtype} (header {header.get('dtype')!r}), not {self.dtype}"
            )
        if (
            lengths.dtype != torch.long
            or lengths.shape != (len(keys),)
            or bool((lengths < 1).any())
            or int(lengths.sum()) != shape[0]
        ):
            raise _BadShard("lengths do not match the states")
        if header.get("checksum") != hidden_shard_checksum(keys, states, lengths):
            raise _BadShard("checksum mismatch")
        return keys, states, lengths

    def _warn(self) -> None:
        warn_dropped(self.dropped, f"hidden-state cache {self.folder}", "states", stacklevel=3)

    # -- the store -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._load())

    def missing(self, keys: Sequence[str]) -> list[str]:
        """Keys of ``keys`` not in the cache, de-duplicated, in first-seen order."""
        store = self._load()
        return list(dict.fromkeys(k for k in keys if k not in store))

    def get(self, keys: Sequence[str]) -> PackedStates:
        """The packed states of ``keys`` (all must be present), in that order (a copy)."""
        store = self._load()
        pieces = [store[k] for k in keys]
        lengths = torch.tensor([p.shape[0] for p in pieces], dtype=torch.long)
        states = torch.cat(pieces) if pieces else torch.zeros(0, self.hidden_size, dtype=self.dtype)
        return PackedStates(states, lengths)

    def release(self) -> None:
        """Forget the states read so far (they are read again from disk when needed)."""
        self._store = None

    def put(self, keys: Sequence[str], packed: PackedStates) -> None:
        """Add the states of ``keys`` and write them as one new shard.

        Args:
            keys: `n` keys.
            packed: Their `n` sequences' states (converted to the cache's dtype).

        Raises:
            ValueError: ``packed`` does not hold `n` sequences of width ``hidden_size``.
        """
        if not keys:
            return
        keys = list(keys)
        if len(packed) != len(keys) or packed.hidden_size != self.hidden_size:
            raise ValueError(
                f"{len(keys)} keys but {len(packed)} sequences of width {packed.hidden_size} "
                f"(the cache holds width {self.hidden_size})"
            )
        states = packed.states.detach().to("cpu", self.dtype).contiguous()
        lengths = packed.lengths.detach().to("cpu", torch.long).contiguous()
        store = self._load()
        store.update(zip(keys, torch.split(states, lengths.tolist()), strict=True))
        header = {
            "format": HIDDEN_CACHE_FORMAT,
            "version": HIDDEN_CACHE_VERSION,
            "identity": self.identity,
            "shape": [int(s) for s in states.shape],
            "dtype": str(states.dtype),
            "count": len(keys),
            "checksum": hidden_shard_checksum(keys, states, lengths),
            "written_by": written_by(),
        }
        payload = {"header": header, "keys": keys, "lengths": lengths, "states": states}
        self.folder.mkdir(parents=True, exist_ok=True)
        name = "hidden-" + text_key(*keys)[:24] + ".pt"
        write_atomically(self.folder / name, lambda temp: torch.save(payload, temp))


def _difference(header: Mapping[str, Any], cache: HiddenStateCache) -> str:
    stored = header.get("identity")
    if not isinstance(stored, dict):
        return "(no identity in the header)"
    return "(" + identity_changes(stored, cache.identity) + ")"
