"""Mini-batches for a vectorised ensemble whose member groups use different batch sizes.

A vectorised ensemble (every parameter's first dimension indexes an independent member) can
train several batch sizes at once: member group ``g`` of ``G`` members takes batches of
``sizes[g]`` lists, with its own permutation per member and epoch, and one SVI step is one
step of every member. :class:`EnsembleBatches` is the ``data`` callable of
:func:`~probrank.inference.svi.fit_svi` for that layout: each call yields one *period* of
``ceil(N / max(sizes))`` steps (one epoch of the largest batch size), with all the period's
index arithmetic done in a few tensor operations.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor, nn

from probrank.exceptions import InputDataError

__all__ = ["EnsembleBatches"]


class EnsembleBatches:
    """Per-group batch sizes over shared data, yielded one period at a time.

    The ensemble has ``len(sizes) * G`` members ordered ``(group, base member)``: member
    ``g * G + i`` trains on base member ``i``'s data with batch size ``sizes[g]``. Each member
    visits its ``N`` rows in a fresh random order every epoch of its own; an epoch's last
    batch may be short (when ``N`` is not a multiple of the batch size). Batches are padded
    to ``W = max(sizes)`` rows.

    Each step yields ``(*batches, mask, scale, groups)``:

    * ``batches``: each of ``tensors`` gathered to `M x W x ...`;
    * ``mask``: `M x W` bool, True on real rows (padding and rows outside a member's batch
      are False, as are rows whose ``mask`` entry is False);
    * ``scale``: `M x W`, ``N_i / rows`` (``N_i`` the base member's real rows, ``rows`` the
      real rows in this batch), so a batch's likelihood is scaled to the full training set;
    * ``groups``: ``[(G, sizes[g]), ...]``, the rows each group actually uses (see
      :meth:`probrank.models.qlfusion.QLFusionNet.features`).

    Args:
        tensors: Data tensors sharing the leading `G x N` shape (e.g. inputs `G x N x k`,
            counts `G x N`); expanded tensors are fine (nothing is copied up front).
        mask: `G x N` bool, False on padding rows (members with fewer than `N` rows).
        sizes: Batch size of each group, ``1 <= size <= N``.

    Raises:
        InputDataError: mismatched shapes or bad sizes.
    """

    def __init__(self, tensors: Sequence[Tensor], mask: Tensor, sizes: Sequence[int]) -> None:
        if mask.dim() != 2:
            raise InputDataError(f"mask must be G x N, got shape {tuple(mask.shape)}")
        self.base, self.n = mask.shape
        if any(t.shape[:2] != mask.shape for t in tensors):
            raise InputDataError("every tensor must share the mask's leading G x N shape")
        if not sizes or any(b < 1 or b > self.n for b in sizes):
            raise InputDataError(f"batch sizes must lie in [1, {self.n}], got {list(sizes)}")
        self.tensors = list(tensors)
        self.mask = mask.bool()
        self.sizes = [int(b) for b in sizes]
        self.width = max(self.sizes)
        self.period = math.ceil(self.n / self.width)
        self.members = len(self.sizes) * self.base
        self.groups = tuple((self.base, b) for b in self.sizes)
        dtype = next((t.dtype for t in self.tensors if t.is_floating_point()), torch.float32)
        self.n_rows = self.mask.sum(-1).to(dtype)
        self._queues: list[Tensor] = [
            torch.empty(0, self.base, b, dtype=torch.long) for b in self.sizes
        ]
        self._member_base = (torch.arange(self.members) % self.base).view(1, -1, 1)

    def _epoch(self, size: int, generator: torch.Generator) -> Tensor:
        """One epoch of batches per base member: `ceil(N / size) x G x size`, -1 padded."""
        batches = math.ceil(self.n / size)
        order = torch.rand(self.base, self.n, generator=generator).argsort(-1)
        order = nn.functional.pad(order, (0, batches * size - self.n), value=-1)
        return order.view(self.base, batches, size).transpose(0, 1)

    def _take(self, g: int, steps: int, generator: torch.Generator) -> Tensor:
        while self._queues[g].shape[0] < steps:
            fresh = self._epoch(self.sizes[g], generator)
            self._queues[g] = torch.cat([self._queues[g], fresh])
        out, self._queues[g] = self._queues[g][:steps], self._queues[g][steps:]
        return out

    def __call__(self, generator: torch.Generator) -> Iterator[tuple]:
        steps = self.period
        index = torch.cat(
            [
                nn.functional.pad(self._take(g, steps, generator), (0, self.width - b), value=-1)
                for g, b in enumerate(self.sizes)
            ],
            dim=1,
        )  # steps x M x W
        rows = index.clamp_min(0)
        base = self._member_base.expand_as(rows)
        mask = (index >= 0) & self.mask[base, rows]
        gathered = [t[base, rows] for t in self.tensors]
        used = mask.sum(-1, keepdim=True).clamp_min(1).to(self.n_rows.dtype)
        scale = (self.n_rows[self._member_base.squeeze(-1)].unsqueeze(-1) / used).expand_as(mask)
        for s in range(steps):
            yield (*(t[s] for t in gathered), mask[s], scale[s], self.groups)
