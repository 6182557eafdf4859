"""End-to-end fine-tuning of a :class:`TransformerEncoder` with a head (``freeze=False``).

Meant for a GPU (the encoder picks CUDA when present); on CPU it works on small data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from probrank._progress import progress_bar
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError

__all__ = ["fine_tune"]


def fine_tune(
    encoder: TransformerEncoder,
    head: nn.Module,
    queries: Sequence[str],
    candidates: Sequence[str],
    labels: Tensor,
    *,
    loss: Callable[[Tensor, Tensor], Tensor] | None = None,
    penalty: Callable[[], Tensor] | None = None,
    on_epoch_end: Callable[[int], None] | None = None,
    epochs: int = 1,
    lr: float = 2e-5,
    head_lr: float = 1e-3,
    batch_size: int = 16,
    seed: int = 0,
) -> list[float]:
    """Train encoder and head together on (query, candidate, label) triples.

    Args:
        encoder: A ``freeze=False`` encoder (its weights are updated in place).
        head: A module mapping `b x feature_dim` features to `b` logits (updated in place).
        queries: `n` query strings.
        candidates: `n` candidate strings.
        labels: `n` 0/1 relevance labels.
        loss: ``loss(logits, labels)`` -> scalar; default binary cross-entropy with logits.
        penalty: Added to every step's loss (e.g. a GP head's ``prior_penalty() / n``).
        on_epoch_end: Called with the number of epochs done after each epoch, with encoder and
            head in evaluation mode (e.g. to complete a Laplace posterior and score a
            checkpoint); training resumes in training mode afterwards.
        epochs: Passes over the data.
        lr: Learning rate of the encoder.
        head_lr: Learning rate of the head.
        batch_size: Pairs per step.
        seed: Seed of the shuffling.

    Returns:
        The mean training loss of each epoch.

    Raises:
        InputDataError: the encoder is frozen, or the inputs do not pair up.
    """
    if encoder.freeze:
        raise InputDataError("fine_tune needs an encoder built with freeze=False")
    n = len(queries)
    if len(candidates) != n or labels.shape != (n,):
        raise InputDataError(
            f"{n} queries, {len(candidates)} candidates and labels of shape "
            f"{tuple(labels.shape)} do not pair up"
        )
    loss_fn = loss or nn.functional.binary_cross_entropy_with_logits
    head.to(encoder.device)
    optimizer = torch.optim.AdamW(
        [
            {"params": encoder.model.parameters(), "lr": lr},
            {"params": head.parameters(), "lr": head_lr},
        ]
    )
    generator = torch.Generator().manual_seed(seed)
    history = []
    steps = epochs * -(-n // batch_size)
    bar = progress_bar(
        total=steps, desc="fine-tuning", unit="step", disable=not encoder.show_progress
    )
    for epoch in range(epochs):
        encoder.model.train()
        head.train()
        order = torch.randperm(n, generator=generator).tolist()
        total = 0.0
        for start in range(0, n, batch_size):
            rows = order[start : start + batch_size]
            features = encoder.encode_pairs(
                [queries[i] for i in rows], [candidates[i] for i in rows]
            )
            logits = head(features).reshape(-1)
            value = loss_fn(logits, labels[rows].to(logits))
            if penalty is not None:
                value = value + penalty()
            optimizer.zero_grad()
            value.backward()
            optimizer.step()
            total += float(value.detach()) * len(rows)
            bar.update(1)
            bar.set_postfix_str(f"epoch {epoch + 1}, loss {float(value.detach()):.3f}")
        history.append(total / max(n, 1))
        encoder.model.eval()
        head.eval()
        if on_epoch_end is not None:
            on_epoch_end(epoch + 1)
    bar.close()
    return history
