"""A minibatch training loop for relevance heads on cached features."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from probrank.exceptions import InputDataError

__all__ = ["train_head"]


def train_head(
    module: nn.Module,
    features: Tensor,
    labels: Tensor,
    loss: Callable[[Tensor, Tensor], Tensor],
    *,
    epochs: int = 20,
    batch_size: int = 256,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    penalty: Callable[[], Tensor] | None = None,
    on_epoch_start: Callable[[int], None] | None = None,
    on_batch_end: Callable[[Tensor], None] | None = None,
    seed: int = 0,
) -> list[float]:
    """Fit ``module`` (features -> logits) with Adam on shuffled minibatches.

    Args:
        module: Maps `b x d` features to `b` logits; trained in place.
        features: `n x d` training features.
        labels: `n` 0/1 labels.
        loss: ``loss(logits, labels)`` -> scalar mean loss.
        epochs: Passes over the data.
        batch_size: Items per step.
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        penalty: Extra term added per step (e.g. a prior penalty already divided by ``n``).
        on_epoch_start: Called with the epoch number before each epoch.
        on_batch_end: Called with the batch features after each step.
        seed: Seed of the shuffling and of dropout masks.

    Returns:
        Mean training loss per epoch.
    """
    n = features.shape[0]
    if labels.shape != (n,):
        raise InputDataError(f"{n} feature rows but labels of shape {tuple(labels.shape)}")
    if n == 0:
        raise InputDataError("no training data")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=weight_decay)
    history = []
    module.train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for epoch in range(epochs):
            if on_epoch_start is not None:
                on_epoch_start(epoch)
            order = torch.randperm(n, generator=generator)
            total = 0.0
            for start in range(0, n, batch_size):
                rows = order[start : start + batch_size]
                x = features[rows]
                value = loss(module(x).reshape(-1), labels[rows])
                objective = value + penalty() if penalty is not None else value
                optimizer.zero_grad()
                objective.backward()
                optimizer.step()
                total += float(value.detach()) * len(rows)
                if on_batch_end is not None:
                    on_batch_end(x)
            history.append(total / n)
    module.eval()
    return history
