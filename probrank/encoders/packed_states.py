"""Token-level hidden states of many sequences of different lengths, stored without padding.

Sequence ``i`` owns rows ``offsets[i] : offsets[i] + lengths[i]`` of one `total x h` tensor; its
attention mask is ``arange(L) < lengths[i]`` (every stored token is a real token: padding is
never stored). :meth:`PackedStates.padded` turns a batch of sequences into the `b x L x h`
tensor and `b x L` mask a transformer layer takes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = ["PackedStates"]


class PackedStates:
    """Hidden states of `n` sequences, packed.

    Args:
        states: `total x h` states, sequence after sequence (``total = lengths.sum()``).
        lengths: `n` positive sequence lengths (int64).

    Raises:
        InputDataError: the lengths do not add up to ``states``' rows, or one is not positive.
    """

    def __init__(self, states: Tensor, lengths: Tensor) -> None:
        lengths = torch.as_tensor(lengths, dtype=torch.long).reshape(-1)
        if states.dim() != 2:
            raise InputDataError(f"states must be total x h, got shape {tuple(states.shape)}")
        if bool((lengths < 1).any()):
            raise InputDataError("every sequence must have at least one token")
        if int(lengths.sum()) != states.shape[0]:
            raise InputDataError(
                f"lengths add up to {int(lengths.sum())} tokens, states hold {states.shape[0]}"
            )
        self.states = states
        self.lengths = lengths
        self.offsets = torch.cumsum(lengths, 0) - lengths

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def hidden_size(self) -> int:
        """``h``."""
        return int(self.states.shape[1])

    @property
    def dtype(self) -> torch.dtype:
        """The stored dtype (float16 or float32)."""
        return self.states.dtype

    def sequence(self, index: int) -> Tensor:
        """`L_i x h` states of sequence ``index`` (a view)."""
        start = int(self.offsets[index])
        return self.states[start : start + int(self.lengths[index])]

    def padded(
        self,
        rows: Sequence[int] | Tensor,
        *,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> tuple[Tensor, Tensor]:
        """A right-padded batch of sequences.

        Args:
            rows: `b` sequence indices.
            dtype: Dtype of the returned states (the stored values are converted exactly).
            device: Device of the returned tensors (default: the stored states').

        Returns:
            ``(states, mask)``: `b x L x h` states (zeros at padding) and the `b x L` attention
            mask (1 on tokens, 0 on padding, int64), ``L`` the batch's longest sequence.
        """
        rows = [int(r) for r in rows]
        if not rows:
            raise InputDataError("an empty batch of sequences")
        width = max(int(self.lengths[r]) for r in rows)
        out = torch.zeros(len(rows), width, self.hidden_size, dtype=dtype)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, r in enumerate(rows):
            n = int(self.lengths[r])
            out[i, :n] = self.sequence(r).to(dtype)
            mask[i, :n] = 1
        target = self.states.device if device is None else torch.device(device)
        return out.to(target), mask.to(target)

    def subset(self, rows: Sequence[int]) -> PackedStates:
        """A new :class:`PackedStates` of sequences ``rows`` (copied), in that order."""
        rows = [int(r) for r in rows]
        if not rows:
            return PackedStates(self.states.new_zeros(0, self.hidden_size), torch.zeros(0))
        return PackedStates(
            torch.cat([self.sequence(r) for r in rows]), self.lengths[torch.tensor(rows)]
        )

    @staticmethod
    def concatenate(parts: Sequence[PackedStates]) -> PackedStates:
        """One :class:`PackedStates` of the sequences of ``parts``, in order."""
        if not parts:
            raise InputDataError("nothing to concatenate")
        return PackedStates(
            torch.cat([p.states for p in parts]), torch.cat([p.lengths for p in parts])
        )

    def batches_by_length(self, batch_size: int) -> list[list[int]]:
        """Index batches of similar lengths (longest first), covering every sequence once."""
        order = torch.argsort(self.lengths, descending=True, stable=True).tolist()
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
