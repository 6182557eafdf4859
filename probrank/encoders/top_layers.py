"""The trainable top of an encoder: layers ``k+1..n`` of a pretrained model, pooling, a head.

:class:`TopLayers` takes the token states a frozen lower part produced
(:class:`~probrank.encoders.hidden_states.HiddenStateEncoder`, usually read from its cache) and
runs copies of the remaining pretrained layers, then pools one vector per sequence. Spectral
normalisation can bound the spectral norm of every dense layer of those blocks (query, key,
value, attention output, intermediate and output projections), as SNGP does to the residual
blocks of its network (:mod:`probrank.nn.spectral`, ``W -> W / max(1, sigma(W) / c)``). A
pretrained transformer's dense layers have spectral norms far above 1 (all-MiniLM-L6-v2: 2.3 to
11.7), so a bound of ``c < 1`` would change the pretrained function before any training;
:class:`SpectralMode` ``relative`` bounds each weight by ``c`` times its own pretrained norm
instead (``c = 1``: the pretrained weights are untouched and fine-tuning cannot raise any
layer's norm above them).

:class:`TopLayerRanker` chains the top layers and any probrank relevance head
(:mod:`probrank.nn.heads`): ``states -> pooled `b x h` features -> head -> `b` logits``. Its
:meth:`~TopLayerRanker.pooled` gives the features of many sequences at once (to complete a GP
head's Laplace posterior or score a checkpoint) and :meth:`~TopLayerRanker.sample_logits` the
logits of MC-dropout passes through the top layers and the head.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from enum import Enum
from typing import Any

import torch
from torch import Tensor, nn

from probrank._options import parse_enum
from probrank.encoders.layer_stack import run_layers
from probrank.encoders.packed_states import PackedStates
from probrank.encoders.transformer import Pooling
from probrank.exceptions import InputDataError
from probrank.nn.spectral import BoundedSpectralNorm, spectral_normalize

__all__ = ["SpectralMode", "TopLayerRanker", "TopLayers", "dense_layers", "pool_states"]


class SpectralMode(str, Enum):
    """What the spectral bound ``c`` of the top layers' dense weights refers to."""

    RELATIVE = "relative"
    """Each weight's bound is ``c`` times its pretrained spectral norm."""
    ABSOLUTE = "absolute"
    """Every weight's bound is ``c`` (SNGP's form for layers trained from scratch)."""


def pool_states(states: Tensor, mask: Tensor, pooling: Pooling) -> Tensor:
    """One vector per sequence.

    Args:
        states: `b x L x h` token states.
        mask: `b x L` attention mask (1 on tokens).
        pooling: :class:`~probrank.encoders.transformer.Pooling` (``cls``: the first token;
            ``mean``: the mean over tokens).

    Returns:
        `b x h` pooled vectors.
    """
    if pooling is Pooling.CLS:
        return states[:, 0]
    weights = mask.unsqueeze(-1).to(states.dtype)
    return (states * weights).sum(1) / weights.sum(1).clamp_min(1.0)


def dense_layers(module: nn.Module) -> list[nn.Linear]:
    """The ``nn.Linear`` layers of ``module``, in registration order."""
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


class TopLayers(nn.Module):
    """Copies of pretrained transformer layers, then pooling.

    Args:
        layers: The pretrained layers ``k+1..n`` (copied; the originals are not changed).
        config: The model's config (for the attention mask's form).
        pooling: :class:`~probrank.encoders.transformer.Pooling` (default mean).
        spectral_bound: Bound ``c > 0`` on each dense layer's spectral norm; None: no
            spectral normalisation.
        spectral_mode: :class:`SpectralMode` (default ``relative``).
        seed: Seed of the power-iteration vectors.

    Raises:
        InputDataError: a bad pooling, mode or bound.
    """

    def __init__(
        self,
        layers: Iterable[nn.Module],
        config: Any,
        *,
        pooling: str | Pooling = Pooling.MEAN,
        spectral_bound: float | None = None,
        spectral_mode: str | SpectralMode = SpectralMode.RELATIVE,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.pooling = parse_enum(Pooling, pooling, "pooling")
        self.spectral_mode = parse_enum(SpectralMode, spectral_mode, "spectral_mode")
        self.config = config
        self.layers = nn.ModuleList(copy.deepcopy(layer) for layer in layers)
        self.layers.requires_grad_(True)
        self.spectral_bound = None if spectral_bound is None else float(spectral_bound)
        self.bounds: list[float] = []
        """The bound of each dense layer (``dense_layers(self)`` order; empty without)."""
        if self.spectral_bound is not None:
            if not self.spectral_bound > 0:
                raise InputDataError(f"spectral_bound must be positive, got {spectral_bound}")
            generator = torch.Generator().manual_seed(seed)
            for linear in dense_layers(self.layers):
                bound = self.spectral_bound
                if self.spectral_mode is SpectralMode.RELATIVE:
                    sigma = torch.linalg.matrix_norm(linear.weight.detach().double(), ord=2)
                    bound *= float(sigma)
                spectral_normalize(
                    linear, bound, generator=generator.manual_seed(seed + len(self.bounds))
                )
                self.bounds.append(bound)
        self.train()

    @property
    def num_layers(self) -> int:
        """Transformer layers here (``n - k``)."""
        return len(self.layers)

    def forward(self, states: Tensor, mask: Tensor) -> Tensor:
        """`b x L x h` states after layer ``k`` and the `b x L` mask -> `b x h` pooled vectors."""
        states = run_layers(self.layers, self.config, states, mask)
        return pool_states(states, mask, self.pooling)


class TopLayerRanker(nn.Module):
    """Top layers followed by a relevance head: token states -> `b` logits.

    Args:
        top: The :class:`TopLayers`.
        head: A head of :mod:`probrank.nn.heads` (any module mapping `b x h` to `b` logits).
    """

    def __init__(self, top: TopLayers, head: nn.Module) -> None:
        super().__init__()
        self.top = top
        self.head = head

    def forward(self, states: Tensor, mask: Tensor) -> Tensor:
        """`b x L x h` states and `b x L` mask -> `b` logits."""
        return self.head(self.top(states, mask)).reshape(-1)

    def _device(self) -> torch.device:
        return next(self.parameters()).device

    @torch.no_grad()
    def pooled(self, packed: PackedStates, batch_size: int = 64) -> Tensor:
        """`n x h` pooled features of every sequence of ``packed``, in evaluation mode.

        Sequences are batched by length (longest first) and the rows put back in order.
        """
        was_training = self.training
        self.eval()
        device = self._device()
        out = torch.zeros(len(packed), packed.hidden_size, device=device)
        for rows in packed.batches_by_length(batch_size):
            states, mask = packed.padded(rows, device=device)
            out[torch.tensor(rows, device=device)] = self.top(states, mask)
        self.train(was_training)
        return out

    @torch.no_grad()
    def sample_logits(
        self, packed: PackedStates, num_samples: int, *, seed: int = 0, batch_size: int = 64
    ) -> Tensor:
        """Logits of ``num_samples`` MC-dropout passes through the top layers and the head.

        Every module is in training mode (the layers' attention and hidden dropout and the
        head's dropout are on) except the spectral normalisations, which take no
        power-iteration step. The dropout masks are drawn from ``seed`` (the same numbers for
        the same ``seed``, data and ``batch_size``).

        Args:
            packed: `n` sequences.
            num_samples: Passes ``T``.
            seed: Seed of the dropout masks.
            batch_size: Sequences per forward pass.

        Returns:
            `T x n` logits.
        """
        if num_samples < 1:
            raise InputDataError(f"num_samples must be at least 1, got {num_samples}")
        was_training = self.training
        self.train()
        for module in self.modules():
            if isinstance(module, BoundedSpectralNorm):
                module.eval()
        device = self._device()
        out = torch.zeros(num_samples, len(packed), device=device)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            for rows in packed.batches_by_length(batch_size):
                states, mask = packed.padded(rows, device=device)
                index = torch.tensor(rows, device=device)
                for t in range(num_samples):
                    out[t, index] = self(states, mask)
        self.train(was_training)
        return out
