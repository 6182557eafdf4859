"""Training loops on cached features, and the one early-stopping rule every loop uses.

:class:`HeadTrainer` runs one epoch at a time with its own shuffling generator and its own
dropout random state, so several heads (the members of an ensemble) can be trained in lockstep
and give the same numbers as when each is trained alone; :func:`train_head` runs it to the end.

:class:`EarlyStopping` tracks a validation score per epoch (one value, or one per member of a
vectorised ensemble), says which epochs improved, which epoch was best, and when patience has
run out. :func:`~probrank.inference.svi.fit_svi` and :func:`~probrank.nn.siamese.fit_pairs` use
it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

import torch
from torch import Tensor, nn

from probrank._options import parse_enum
from probrank.exceptions import InputDataError

__all__ = ["Direction", "EarlyStopping", "HeadTrainer", "train_head"]


class Direction(str, Enum):
    """Whether a validation score improves by going down or up."""

    MIN = "min"
    """Lower is better (a loss, an error)."""
    MAX = "max"
    """Higher is better (an accuracy)."""


class EarlyStopping:
    """Patience-based early stopping on a validation score, per member when it is a vector.

    Call :meth:`step` once per epoch with the score. The first call always counts as an
    improvement; later calls improve where the score beats the best by more than
    ``min_delta`` (strictly). A member has run out of patience when it did not improve this
    epoch and its best epoch is at least ``patience`` epochs ago; :attr:`should_stop` is True
    when every member has.

    Args:
        patience: Epochs without improvement before stopping: an int, an `M` tensor (one per
            member), or None (never stop; the best epoch is still tracked).
        direction: :class:`Direction` (``"min"``: lower is better).
        min_delta: Smallest change of the score that counts as an improvement (``>= 0``).

    Raises:
        InputDataError: a negative patience or ``min_delta``.

    Example::

        stopper = EarlyStopping(patience=5, direction="max")
        for epoch in range(max_epochs):
            ...
            if stopper.step(epoch, accuracy):
                best_state = copy.deepcopy(net.state_dict())
            if stopper.should_stop:
                break
    """

    def __init__(
        self,
        patience: int | Tensor | None,
        *,
        direction: Direction | str = Direction.MIN,
        min_delta: float = 0.0,
    ) -> None:
        if patience is not None and bool((torch.as_tensor(patience) < 0).any()):
            raise InputDataError(f"patience must be non-negative, got {patience}")
        if not min_delta >= 0:
            raise InputDataError(f"min_delta must be non-negative, got {min_delta}")
        self.patience = patience
        self.direction = parse_enum(Direction, direction, "direction")
        self.min_delta = float(min_delta)
        self.best: Tensor | None = None
        """Best score so far (a 0-dim tensor, or `M`), None before the first step."""
        self.best_epoch: Tensor | None = None
        """Epoch of :attr:`best` (long, same shape), None before the first step."""
        self.should_stop = False
        """Whether every member has run out of patience (set by :meth:`step`)."""

    def step(self, epoch: int, value: float | Tensor) -> Tensor:
        """Record the score of ``epoch``.

        Args:
            epoch: The epoch (0-based, increasing).
            value: The score: a number, or an `M` tensor (one per member).

        Returns:
            A bool tensor of the score's shape: where this epoch improved the best score
            (``bool(...)`` of a 0-dim result is the scalar answer).
        """
        score = torch.as_tensor(value, dtype=torch.float64).detach()
        if self.best is None or self.best_epoch is None:
            improved = torch.ones_like(score, dtype=torch.bool)
            self.best = score.clone()
            self.best_epoch = torch.full_like(score, epoch, dtype=torch.long)
        else:
            if self.direction is Direction.MIN:
                improved = score < self.best - self.min_delta
            else:
                improved = score > self.best + self.min_delta
            self.best = torch.where(improved, score, self.best)
            self.best_epoch = torch.where(
                improved, torch.full_like(self.best_epoch, epoch), self.best_epoch
            )
        if self.patience is not None:
            waited = (epoch - self.best_epoch) >= torch.as_tensor(self.patience)
            self.should_stop = bool((waited & ~improved).all())
        return improved


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
