"""The lower part of a cross-encoder, run once: token states after ``k`` frozen layers, cached.

Fine-tuning only the top ``n - k`` layers of an ``n``-layer encoder (with a head) costs a
fraction of end-to-end fine-tuning when the lower ``k`` layers' output is computed once and
read back at every epoch. :class:`HiddenStateEncoder` tokenises (context, response) pairs as a
cross-encoder (``[CLS] context [SEP] response [SEP]``, the context truncated from the left:
:mod:`probrank.encoders.pair_tokens`), runs the embeddings and layers ``1..k`` in evaluation
mode, and returns every token's state (:class:`~probrank.encoders.packed_states.PackedStates`),
cached on disk when a cache folder is given (:mod:`probrank.encoders.hidden_cache`). Its
:meth:`~HiddenStateEncoder.top_layers` builds the trainable rest, layers ``k+1..n`` initialised
from the same pretrained weights (:class:`~probrank.encoders.top_layers.TopLayers`).

``frozen_layers = 0`` caches the embedding output and leaves every layer trainable (end-to-end
fine-tuning of the transformer layers, e.g. on a GPU); ``frozen_layers = n`` caches the last
layer and leaves only pooling and the head (a frozen cross-encoder). BERT-style models
(``model.embeddings``, ``model.encoder.layer``) are supported.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import Enum
from pathlib import Path

import torch
from torch import Tensor

from probrank._options import parse_enum
from probrank._progress import progress_bar
from probrank.encoders.cache import text_key
from probrank.encoders.hidden_cache import HiddenStateCache
from probrank.encoders.layer_stack import run_layers
from probrank.encoders.packed_states import PackedStates
from probrank.encoders.pair_tokens import PairTokens, cross_encoder_tokens
from probrank.encoders.top_layers import SpectralMode, TopLayers
from probrank.encoders.transformer import Pooling, default_model_path, model_revision
from probrank.exceptions import InputDataError

__all__ = ["HIDDEN_SHARD_SIZE", "HiddenStateEncoder", "StateDtype"]

HIDDEN_SHARD_SIZE = 2048
"""Pairs encoded and written to the disk cache at a time (one shard each)."""


class StateDtype(str, Enum):
    """How cached hidden states are stored."""

    FLOAT16 = "float16"
    """Half precision: half the disk and memory; each value within ``2**-11`` relative
    (:data:`probrank.encoders.hidden_cache.FLOAT16_RELATIVE_ERROR`)."""
    FLOAT32 = "float32"
    """Single precision: the encoder's own values."""


_TORCH_DTYPES = {StateDtype.FLOAT16: torch.float16, StateDtype.FLOAT32: torch.float32}


class HiddenStateEncoder:
    """Embeddings and the first ``frozen_layers`` layers of a pretrained cross-encoder, frozen.

    Args:
        name_or_path: A local model folder (default: the packaged all-MiniLM-L6-v2), loaded
            with ``local_files_only=True``.
        frozen_layers: ``k``, the layers run here (0: the embeddings only; at most ``n``;
            None: ``n - 1``, leaving one layer to train).
        max_length: Tokens per pair, special tokens included (the context is cut from the left).
        batch_size: Pairs per forward pass.
        dtype: :class:`StateDtype` of the returned and cached states (default float16).
        device: Torch device (default CUDA when present, else CPU).
        cache_dir: Cache folder (None: no disk cache).
        show_progress: Show a bar while encoding.

    Raises:
        InputDataError: not a local model folder, not a BERT-style model, or a bad setting.
    """

    def __init__(
        self,
        name_or_path: str | Path | None = None,
        *,
        frozen_layers: int | None = None,
        max_length: int = 128,
        batch_size: int = 32,
        dtype: str | StateDtype = StateDtype.FLOAT16,
        device: str | torch.device | None = None,
        cache_dir: str | Path | None = None,
        show_progress: bool = True,
    ) -> None:
        from transformers import AutoModel, AutoTokenizer

        path = Path(name_or_path) if name_or_path is not None else default_model_path()
        if not (path / "config.json").is_file():
            raise InputDataError("not a local transformer model folder (no config.json)", path=path)
        if max_length < 4 or batch_size < 1:
            raise InputDataError(
                f"max_length must be >= 4 and batch_size >= 1, got {max_length}, {batch_size}"
            )
        self.path = path
        self.dtype = parse_enum(StateDtype, dtype, "dtype")
        self.max_length = int(max_length)
        self.batch_size = int(batch_size)
        self.show_progress = show_progress
        self.device = torch.device(
            device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu")
        )
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(path), local_files_only=True)
        layers = getattr(getattr(self.model, "encoder", None), "layer", None)
        if not hasattr(self.model, "embeddings") or layers is None:
            raise InputDataError(
                "not a BERT-style model (no embeddings / encoder.layer)", path=path
            )
        self.num_layers = len(layers)
        if frozen_layers is None:
            frozen_layers = self.num_layers - 1
        if isinstance(frozen_layers, bool) or not 0 <= int(frozen_layers) <= self.num_layers:
            raise InputDataError(
                f"frozen_layers must be in 0..{self.num_layers}, got {frozen_layers!r}"
            )
        self.frozen_layers = int(frozen_layers)
        self.model.eval().requires_grad_(False).to(self.device)
        self.revision = model_revision(path)
        identity = {
            "model": path.name,
            "revision": self.revision,
            "frozen_layers": self.frozen_layers,
            "max_length": self.max_length,
            "dtype": self.dtype.value,
            "input": "cross [CLS] context [SEP] response [SEP], context cut from the left",
        }
        namespace = f"{path.name}-hidden-{text_key(json.dumps(identity, sort_keys=True))[:16]}"
        self.cache = (
            HiddenStateCache(cache_dir, namespace, identity=identity, hidden_size=self.hidden_size)
            if cache_dir is not None
            else None
        )
        self.num_encoded = 0
        """Pairs passed through the lower layers so far (cache hits do not count)."""

    @property
    def hidden_size(self) -> int:
        """``h``, the width of a token state."""
        return int(self.model.config.hidden_size)

    def tokenize(self, contexts: Sequence[str], responses: Sequence[str]) -> list[PairTokens]:
        """`n` pairs as cross-encoder token ids (see :mod:`probrank.encoders.pair_tokens`)."""
        return cross_encoder_tokens(self.tokenizer, contexts, responses, self.max_length)

    @torch.no_grad()
    def states_of_tokens(self, tokens: Sequence[PairTokens]) -> PackedStates:
        """Run the frozen part on tokenised pairs (no cache).

        Args:
            tokens: `n` tokenised pairs.

        Returns:
            Their states after layer ``frozen_layers``, in the order of ``tokens``, in
            :attr:`dtype`, on the CPU.
        """
        order = sorted(range(len(tokens)), key=lambda i: -len(tokens[i]))
        pieces: list[Tensor | None] = [None] * len(tokens)
        starts = range(0, len(order), self.batch_size)
        bar = progress_bar(
            starts,
            desc=f"encoding pairs to layer {self.frozen_layers}",
            unit="batch",
            disable=not self.show_progress or len(starts) <= 1,
        )
        for start in bar:
            rows = order[start : start + self.batch_size]
            width = max(len(tokens[i]) for i in rows)
            ids = torch.zeros(len(rows), width, dtype=torch.long)
            types = torch.zeros(len(rows), width, dtype=torch.long)
            mask = torch.zeros(len(rows), width, dtype=torch.long)
            for j, i in enumerate(rows):
                n = len(tokens[i])
                ids[j, :n] = torch.tensor(tokens[i].input_ids)
                types[j, :n] = torch.tensor(tokens[i].token_type_ids)
                mask[j, :n] = 1
            states = self.lower(ids.to(self.device), types.to(self.device), mask.to(self.device))
            states = states.to("cpu", _TORCH_DTYPES[self.dtype])
            for j, i in enumerate(rows):
                pieces[i] = states[j, : len(tokens[i])].clone()
            self.num_encoded += len(rows)
        done = [p for p in pieces if p is not None]
        if not done:
            return PackedStates(torch.zeros(0, self.hidden_size), torch.zeros(0))
        return PackedStates(torch.cat(done), torch.tensor([p.shape[0] for p in done]))

    def lower(self, input_ids: Tensor, token_type_ids: Tensor, mask: Tensor) -> Tensor:
        """Embeddings and layers ``1..k`` of a padded batch.

        Args:
            input_ids: `b x L` token ids.
            token_type_ids: `b x L` segment ids.
            mask: `b x L` attention mask (1 on tokens).

        Returns:
            `b x L x h` states (float32; padding rows are not meaningful).
        """
        states = self.model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        return run_layers(
            self.model.encoder.layer[: self.frozen_layers], self.model.config, states, mask
        )

    def encode_pairs(self, contexts: Sequence[str], responses: Sequence[str]) -> PackedStates:
        """Token states of `n` (context, response) pairs after the frozen layers.

        Args:
            contexts: `n` context strings.
            responses: `n` response strings.

        Returns:
            The `n` pairs' states in input order (from the disk cache where present).
        """
        tokens = self.tokenize(contexts, responses)
        if self.cache is None:
            return self.states_of_tokens(tokens)
        keys = [text_key("tokens", json.dumps([t.input_ids, t.token_type_ids])) for t in tokens]
        index: dict[str, int] = {}
        for i, key in enumerate(keys):
            index.setdefault(key, i)
        todo = self.cache.missing(keys)
        # written shard by shard, so that an interrupted run keeps what it has encoded
        for start in range(0, len(todo), HIDDEN_SHARD_SIZE):
            chunk = todo[start : start + HIDDEN_SHARD_SIZE]
            self.cache.put(chunk, self.states_of_tokens([tokens[index[k]] for k in chunk]))
        packed = self.cache.get(keys)
        self.cache.release()
        return packed

    def top_layers(
        self,
        *,
        pooling: str | Pooling = Pooling.MEAN,
        spectral_bound: float | None = None,
        spectral_mode: str | SpectralMode = SpectralMode.RELATIVE,
        seed: int = 0,
    ) -> TopLayers:
        """A fresh trainable copy of layers ``k+1..n`` with pooling.

        Args:
            pooling: :class:`~probrank.encoders.transformer.Pooling` of the last states.
            spectral_bound: Bound ``c`` on the dense layers' spectral norms (None: none).
            spectral_mode: ``"relative"`` (``c`` times each pretrained weight's norm) or
                ``"absolute"`` (:class:`~probrank.encoders.top_layers.SpectralMode`).
            seed: Seed of the power-iteration vectors.

        Returns:
            A :class:`~probrank.encoders.top_layers.TopLayers` on ``self.device``, in training
            mode.
        """
        return TopLayers(
            self.model.encoder.layer[self.frozen_layers :],
            self.model.config,
            pooling=pooling,
            spectral_bound=spectral_bound,
            spectral_mode=spectral_mode,
            seed=seed,
        ).to(self.device)
