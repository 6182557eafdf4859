"""Fine-tuning the top layers and head of a :class:`~probrank.encoders.top_layers.TopLayerRanker`
on cached token states.

The same loop as end-to-end fine-tuning (:func:`probrank.encoders.fine_tune.fine_tune`: AdamW,
one learning rate for the transformer layers and one for the head, the head's own loss plus an
optional penalty per step), but every step reads the states after the frozen layers instead of
running them. Batches are drawn by length buckets: the shuffled sequences are cut into pools of
``bucket_batches`` batches, each pool is sorted by length and cut into batches, and the batches
are shuffled, so that little time goes into padding. Shuffling and dropout are seeded, and the
global random state is left as it was.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from probrank._progress import progress_bar
from probrank.encoders.packed_states import PackedStates
from probrank.encoders.top_layers import TopLayerRanker
from probrank.exceptions import InputDataError

__all__ = ["fine_tune_top_layers", "length_bucketed_batches"]


def length_bucketed_batches(
    lengths: Tensor, batch_size: int, generator: torch.Generator, bucket_batches: int = 50
) -> list[list[int]]:
    """One epoch of index batches of similar lengths, in random order.

    Args:
        lengths: `n` sequence lengths.
        batch_size: Sequences per batch.
        generator: Source of the shuffles.
        bucket_batches: Batches per pool sorted by length (1: plain random batches).

    Returns:
        Batches covering every index once.
    """
    n = int(lengths.shape[0])
    order = torch.randperm(n, generator=generator)
    pool = batch_size * max(1, bucket_batches)
    batches: list[list[int]] = []
    for start in range(0, n, pool):
        chunk = order[start : start + pool]
        rows: list[int] = chunk[
            torch.argsort(lengths[chunk], descending=True, stable=True)
        ].tolist()
        batches += [rows[i : i + batch_size] for i in range(0, len(rows), batch_size)]
    shuffle = torch.randperm(len(batches), generator=generator).tolist()
    return [batches[i] for i in shuffle]


def fine_tune_top_layers(
    ranker: TopLayerRanker,
    packed: PackedStates,
    labels: Tensor,
    *,
    loss: Callable[[Tensor, Tensor], Tensor] | None = None,
    penalty: Callable[[], Tensor] | None = None,
    on_epoch_end: Callable[[int], None] | None = None,
    epochs: int = 1,
    lr: float = 2e-5,
    head_lr: float = 1e-3,
    weight_decay: float = 0.01,
    batch_size: int = 32,
    bucket_batches: int = 50,
    seed: int = 0,
    show_progress: bool = True,
) -> list[float]:
    """Train the top layers and the head on `n` cached sequences and their labels.

    Args:
        ranker: Top layers + head (updated in place).
        packed: `n` sequences' states after the frozen layers.
        labels: `n` 0/1 relevance labels.
        loss: ``loss(logits, labels)`` -> scalar; default binary cross-entropy with logits.
        penalty: Added to every step's loss (e.g. a GP head's ``prior_penalty() / n``).
        on_epoch_end: Called with the number of epochs done after each epoch, the ranker in
            evaluation mode (e.g. to complete a Laplace posterior and score a checkpoint);
            training resumes in training mode, with the random state it had.
        epochs: Passes over the data.
        lr: AdamW learning rate of the transformer layers.
        head_lr: AdamW learning rate of the head.
        weight_decay: AdamW weight decay of both (torch's default 0.01).
        batch_size: Sequences per step.
        bucket_batches: See :func:`length_bucketed_batches`.
        seed: Seed of the batches and of the dropout masks.
        show_progress: Show a bar of the steps.

    Returns:
        The mean training loss of each epoch.

    Raises:
        InputDataError: the labels do not match the sequences, or a bad setting.
    """
    n = len(packed)
    if labels.shape != (n,):
        raise InputDataError(f"{n} sequences but labels of shape {tuple(labels.shape)}")
    if n == 0 or epochs < 1 or batch_size < 1:
        raise InputDataError(
            f"need sequences, epochs >= 1 and batch_size >= 1, got {n}, {epochs}, {batch_size}"
        )
    loss_fn = loss or nn.functional.binary_cross_entropy_with_logits
    device = next(ranker.parameters()).device
    groups = [{"params": list(ranker.head.parameters()), "lr": head_lr}]
    top = [p for p in ranker.top.parameters() if p.requires_grad]
    if top:
        groups.insert(0, {"params": top, "lr": lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=weight_decay)
    generator = torch.Generator().manual_seed(seed)
    epoch_batches = [
        length_bucketed_batches(packed.lengths, batch_size, generator, bucket_batches)
        for _ in range(epochs)
    ]
    history = []
    bar = progress_bar(
        total=sum(len(b) for b in epoch_batches),
        desc=f"fine-tuning {ranker.top.num_layers} top layer(s)",
        unit="step",
        disable=not show_progress,
    )
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        for epoch, batches in enumerate(epoch_batches):
            ranker.train()
            total = 0.0
            for rows in batches:
                states, mask = packed.padded(rows, device=device)
                logits = ranker(states, mask)
                value = loss_fn(logits, labels[rows].to(logits))
                if penalty is not None:
                    value = value + penalty()
                optimizer.zero_grad()
                value.backward()
                optimizer.step()
                total += float(value.detach()) * len(rows)
                bar.update(1)
                bar.set_postfix_str(f"epoch {epoch + 1}, loss {float(value.detach()):.3f}")
            history.append(total / n)
            ranker.eval()
            if on_epoch_end is not None:
                with torch.random.fork_rng(devices=devices):
                    on_epoch_end(epoch + 1)
    bar.close()
    ranker.eval()
    return history
