"""A minibatch training loop for relevance heads on cached features.

:class:`HeadTrainer` runs one epoch at a time with its own shuffling generator and its own
dropout random state, so several heads (the members of an ensemble) can be trained in lockstep
and give the same numbers as when each is trained alone; :func:`train_head` runs it to the end.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from probrank.exceptions import InputDataError

__all__ = ["HeadTrainer", "train_head"]


class HeadTrainer:
    """Adam on shuffled minibatches, one epoch per :meth:`run_epoch` call.

    Args:
        module: Maps `b x d` features to `b` logits; trained in place.
        features: `n x d` training features.
        labels: `n` 0/1 labels.
        loss: ``loss(logits, labels)`` -> scalar mean loss.
        batch_size: Items per step.
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        penalty: Extra term added per step (e.g. a prior penalty already divided by ``n``).
        on_epoch_start: Called with the epoch number (0-based) before each epoch.
        on_batch_end: Called with the batch features after each step.
        seed: Seed of the shuffling and of the dropout masks.

    Raises:
        InputDataError: Empty data, labels that do not match the features, or bad settings.
    """

    def __init__(
        self,
        module: nn.Module,
        features: Tensor,
        labels: Tensor,
        loss: Callable[[Tensor, Tensor], Tensor],
        *,
        batch_size: int = 256,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        penalty: Callable[[], Tensor] | None = None,
        on_epoch_start: Callable[[int], None] | None = None,
        on_batch_end: Callable[[Tensor], None] | None = None,
        seed: int = 0,
    ) -> None:
        n = features.shape[0]
        if labels.shape != (n,):
            raise InputDataError(f"{n} feature rows but labels of shape {tuple(labels.shape)}")
        if n == 0:
            raise InputDataError("no training data")
        if batch_size < 1:
            raise InputDataError(f"batch_size must be at least 1, got {batch_size}")
        if not lr > 0:
            raise InputDataError(f"lr must be positive, got {lr}")
        self.module = module
        self.features = features
        self.labels = labels
        self.loss = loss
        self.batch_size = batch_size
        self.penalty = penalty
        self.on_epoch_start = on_epoch_start
        self.on_batch_end = on_batch_end
        self.epoch = 0
        self.generator = torch.Generator().manual_seed(seed)
        self.optimizer = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=weight_decay)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._rng_state = torch.get_rng_state()

    def run_epoch(self) -> float:
        """One pass over the data in training mode; returns its mean loss."""
        n = self.features.shape[0]
        self.module.train()
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._rng_state)
            if self.on_epoch_start is not None:
                self.on_epoch_start(self.epoch)
            order = torch.randperm(n, generator=self.generator)
            total = 0.0
            for start in range(0, n, self.batch_size):
                rows = order[start : start + self.batch_size]
                x = self.features[rows]
                value = self.loss(self.module(x).reshape(-1), self.labels[rows])
                objective = value + self.penalty() if self.penalty is not None else value
                self.optimizer.zero_grad()
                objective.backward()
                self.optimizer.step()
                total += float(value.detach()) * len(rows)
                if self.on_batch_end is not None:
                    self.on_batch_end(x)
            self._rng_state = torch.get_rng_state()
        self.epoch += 1
        self.module.eval()
        return total / n


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
    on_epoch_end: Callable[[int], None] | None = None,
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
        on_epoch_start: Called with the epoch number (0-based) before each epoch.
        on_batch_end: Called with the batch features after each step.
        on_epoch_end: Called with the number of epochs done (1-based) after each epoch, with
            the module in evaluation mode (training resumes in training mode).
        seed: Seed of the shuffling and of dropout masks.

    Returns:
        Mean training loss per epoch.
    """
    trainer = HeadTrainer(
        module,
        features,
        labels,
        loss,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        penalty=penalty,
        on_epoch_start=on_epoch_start,
        on_batch_end=on_batch_end,
        seed=seed,
    )
    history = []
    for epoch in range(epochs):
        history.append(trainer.run_epoch())
        if on_epoch_end is not None:
            on_epoch_end(epoch + 1)
    module.eval()
    return history
