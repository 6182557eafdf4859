"""Stochastic variational inference with mini-batches, early stopping and a scoped param store.

:func:`fit_svi` runs Pyro's :class:`~pyro.infer.SVI` in epochs over mini-batches of ``data``,
evaluates a validation ``metric`` after every epoch, stops when it has not improved for
``patience`` epochs and leaves the parameters at their best epoch.

It never relies on, nor leaves behind, global state: training runs inside
``pyro.get_param_store().scope()`` (a fresh, empty store; the caller's store is restored on
exit, whatever happens) and under ``torch.random.fork_rng`` seeded with ``seed`` (the caller's
RNG state is restored too). Parameters held by :class:`~pyro.nn.PyroModule` objects are the
same tensors as the scoped store's, so the modules keep their best-epoch values after the call;
parameters created only with ``pyro.param`` live in :attr:`FitResult.param_state`, which
``pyro.get_param_store().scope(state=result.param_state)`` loads again.

**Ensembles.** When ``metric`` returns a tensor of shape `M` (one value per member of a
vectorised ensemble of independent models), early stopping and the best epoch are tracked per
member: every parameter's first dimension must index the member, and each member's parameters
are kept at its own best epoch. Training stops when every member has run out of patience.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyro
import pyro.optim
import torch
from pyro.infer import ELBO, SVI, Trace_ELBO
from torch import Tensor

from probrank._progress import progress_bar
from probrank.exceptions import InputDataError
from probrank.nn.training import Direction, EarlyStopping

__all__ = ["FitResult", "FusedAdam", "fit_svi"]

Metric = Callable[..., "float | Tensor"]


@dataclass
class FitResult:
    """What :func:`fit_svi` returns.

    Attributes:
        losses: Mean training loss (negative ELBO per step) of every epoch run.
        history: Validation metric after every epoch: a float, or a list of `M` floats for an
            ensemble (empty without a metric).
        best_epoch: 0-based epoch whose parameters were kept (per member: a list of `M` ints).
        best_metric: The metric at the best epoch (per member: a list).
        epochs_run: How many epochs ran before stopping.
        params: Constrained parameter values at the best epoch, by param-store name.
        param_state: The scoped param store's state at the best epoch (for
            ``pyro.get_param_store().scope(state=...)``).
    """

    losses: list[float]
    history: list[Any]
    best_epoch: int | list[int]
    best_metric: float | list[float]
    epochs_run: int
    params: dict[str, Tensor] = field(default_factory=dict)
    param_state: dict[str, Any] = field(default_factory=dict)


class FusedAdam(pyro.optim.PyroOptim):  # type: ignore[misc]
    """Adam over all parameters in one fused step: the same updates as ``pyro.optim.Adam``.

    :class:`pyro.optim.Adam` keeps one ``torch.optim.Adam`` per parameter tensor and steps
    each in turn; for models with many small steps (e.g. mini-batches of a vectorised
    ensemble) that per-tensor overhead dominates. Adam's update is element-wise, so one
    ``torch.optim.Adam(fused=True)`` over every parameter gives the same updates (up to
    floating-point rounding) with a single kernel per step. Parameters are added the first
    time :class:`~pyro.infer.SVI` passes them; a parameter absent from a step (it received no
    gradient) is not updated by that step, as with the per-tensor optimizers.

    ``get_state`` and ``set_state`` are not supported (the fused optimizer is not keyed by
    parameter name): use it for single training runs such as :func:`fit_svi`'s.

    Args:
        optim_args: ``torch.optim.Adam`` keyword arguments, e.g. ``{"lr": 5e-4}``.
    """

    def __init__(self, optim_args: dict[str, Any]) -> None:
        super().__init__(torch.optim.Adam, dict(optim_args))
        self._adam_args = dict(optim_args)
        self._optimizer: torch.optim.Adam | None = None
        self._known: set[Tensor] = set()

    def __call__(self, params: Iterable[Tensor], *args: Any, **kwargs: Any) -> None:
        active = set(params)
        new = [p for p in active if p not in self._known]  # order is irrelevant: element-wise
        if new:
            if self._optimizer is None:
                self._optimizer = torch.optim.Adam(new, fused=True, **self._adam_args)
            else:
                self._optimizer.add_param_group({"params": new})
            self._known.update(new)
        if self._optimizer is None:
            return
        if len(active) != len(self._known):
            for p in self._known - active:
                p.grad = None  # torch's Adam skips parameters without a gradient
        self._optimizer.step()
        for p in active:
            p.grad = None  # the next backward writes fresh gradients (no zero-fill + add)

    def get_state(self) -> dict:
        raise NotImplementedError("FusedAdam does not save per-parameter optimizer state")

    def set_state(self, state_dict: dict) -> None:
        raise NotImplementedError("FusedAdam does not load per-parameter optimizer state")


def _tensor_batches(
    data: Sequence[Tensor], batch_size: int | None, data_dim: int, shuffle: bool
) -> Callable[[torch.Generator], Iterable[Sequence[Tensor]]]:
    """Mini-batches of ``data`` along ``data_dim``, a fresh permutation per epoch."""
    if not data:
        raise InputDataError("data must hold at least one tensor")
    n = data[0].shape[data_dim]
    if n < 1 or any(t.shape[data_dim] != n for t in data):
        raise InputDataError(f"data tensors must share a non-empty dimension {data_dim}")
    size = n if batch_size is None else batch_size
    if size < 1:
        raise InputDataError(f"batch_size must be positive, got {batch_size}")

    def batches(generator: torch.Generator) -> Iterable[Sequence[Tensor]]:
        order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
        for index in order.split(size):
            yield [t.index_select(data_dim, index) for t in data]

    return batches


def fit_svi(
    model: Callable[..., Any],
    guide: Callable[..., Any],
    data: Sequence[Tensor] | Callable[[torch.Generator], Iterable[Sequence[Tensor]]],
    *,
    optimizer: pyro.optim.PyroOptim | None = None,
    loss: ELBO | None = None,
    max_epochs: int = 500,
    patience: int | Tensor | None = 20,
    val_data: Sequence[Tensor] | None = None,
    metric: Metric | None = None,
    batch_size: int | None = None,
    seed: int = 0,
    data_dim: int = 0,
    shuffle: bool = True,
    min_delta: float = 0.0,
    progress: bool = True,
    description: str = "svi",
    validate: bool = True,
) -> FitResult:
    """Fit ``guide`` to ``model`` by SVI over mini-batches, with early stopping.

    Each epoch visits every example of ``data`` once in mini-batches (a fresh permutation per
    epoch from a generator seeded by ``seed``) and calls ``svi.step(*batch)``. The model should
    scale its likelihood to the full data size itself (e.g. ``pyro.plate(size=N,
    subsample=...)`` or ``poutine.scale``).

    Args:
        model: A Pyro model called as ``model(*batch)``.
        guide: A Pyro guide with the same signature.
        data: Tensors that share the example dimension ``data_dim`` (size `N`), or a callable
            ``generator -> iterable of batches`` called once per epoch (for custom batching,
            e.g. a different batch size per ensemble member); then ``batch_size``,
            ``data_dim`` and ``shuffle`` are unused.
        optimizer: A fresh Pyro optimizer; default ``pyro.optim.Adam({"lr": 1e-3})``.
        loss: The ELBO; default :class:`~pyro.infer.Trace_ELBO`.
        max_epochs: Upper bound on epochs.
        patience: Epochs without improvement of ``metric`` before stopping (None: never); a
            `M` tensor gives each ensemble member its own patience.
        val_data: Passed to ``metric`` as ``metric(*val_data)``.
        metric: Validation error, lower is better, computed with the current parameters:
            a float, or a `M` tensor for an ensemble (see the module docstring). Without it,
            the last epoch is kept.
        batch_size: Examples per step (default: all, one step per epoch).
        seed: Seeds the batch order and every sample drawn during training.
        data_dim: The example dimension of the ``data`` tensors.
        shuffle: Shuffle the examples every epoch.
        min_delta: Smallest decrease of the metric that counts as an improvement.
        progress: Show a tqdm progress bar over epochs.
        description: The progress bar's label.
        validate: Keep Pyro's distribution argument checks on (off is faster).

    Returns:
        A :class:`FitResult`.

    Raises:
        InputDataError: empty or inconsistent data, bad sizes, or an ensemble metric whose
            length does not match the parameters' first dimension.
    """
    if callable(data):
        epoch_batches = data
    else:
        epoch_batches = _tensor_batches(data, batch_size, data_dim, shuffle)
    if max_epochs < 1:
        raise InputDataError(f"max_epochs must be positive, got {max_epochs}")
    if patience is not None and bool((torch.as_tensor(patience) < 1).any()):
        raise InputDataError(f"patience must be positive, got {patience}")
    evaluate = metric is not None
    val_args = tuple(val_data) if val_data is not None else ()
    store = pyro.get_param_store()
    with (
        store.scope() as state,
        torch.random.fork_rng(devices=[]),
        pyro.validation_enabled(validate),
    ):
        torch.manual_seed(seed)
        generator = torch.Generator().manual_seed(seed)
        svi = SVI(
            model,
            guide,
            optimizer if optimizer is not None else pyro.optim.Adam({"lr": 1e-3}),  # type: ignore[attr-defined]
            loss if loss is not None else Trace_ELBO(),
        )
        losses: list[float] = []
        history: list[Any] = []
        stopper = EarlyStopping(patience, direction=Direction.MIN, min_delta=min_delta)
        best_values: dict[str, Tensor] = {}
        bar = progress_bar(range(max_epochs), desc=description, disable=not progress, leave=False)
        epochs_run = 0
        for epoch in bar:
            total, steps = 0.0, 0
            for batch in epoch_batches(generator):
                total += float(svi.step(*batch))
                steps += 1
            if steps == 0:
                raise InputDataError("an epoch yielded no batch")
            losses.append(total / steps)
            epochs_run = epoch + 1
            if not math.isfinite(losses[-1]):
                raise InputDataError(f"the training loss became {losses[-1]} at epoch {epoch}")
            if not evaluate:
                continue
            with torch.no_grad():
                value = torch.as_tensor(metric(*val_args), dtype=torch.float64).detach()  # type: ignore[misc]
            history.append(value.tolist())
            improved = stopper.step(epoch, value)
            _keep_best(store, best_values, improved)
            shown = stopper.best if stopper.best is not None else value
            bar.set_postfix(loss=f"{losses[-1]:.4g}", metric=f"{float(shown.mean()):.4g}")
            if stopper.should_stop:
                break
        bar.close()
        with torch.no_grad():
            unconstrained = dict(store.named_parameters())
            for name, value in best_values.items():
                unconstrained[name].copy_(value)
        params = {name: store[name].detach().clone() for name in store.keys()}
        scoped = store.get_state()
        final_state = {
            "params": {k: v.detach().clone() for k, v in scoped["params"].items()},
            "constraints": dict(scoped["constraints"]),
        }
    del state
    best, best_epoch = stopper.best, stopper.best_epoch
    if best is None or best_epoch is None:
        best_out: float | list[float] = math.nan
        epoch_out: int | list[int] = epochs_run - 1
    elif best.dim() == 0:
        best_out, epoch_out = float(best), int(best_epoch)
    else:
        best_out, epoch_out = best.tolist(), best_epoch.tolist()
    return FitResult(
        losses=losses,
        history=history,
        best_epoch=epoch_out,
        best_metric=best_out,
        epochs_run=epochs_run,
        params=params,
        param_state=final_state,
    )


def _keep_best(store: Any, best_values: dict[str, Tensor], improved: Tensor) -> None:
    """Copy the current unconstrained params into ``best_values`` where ``improved``."""
    for name, param in store.named_parameters():
        current = param.detach()
        if improved.dim() == 0:
            if bool(improved):
                best_values[name] = current.clone()
            continue
        members = improved.shape[0]
        if current.dim() == 0 or current.shape[0] != members:
            raise InputDataError(
                f"ensemble metric has {members} members but parameter {name!r} has shape "
                f"{tuple(current.shape)}; its first dimension must index the members"
            )
        mask = improved.view((members,) + (1,) * (current.dim() - 1))
        previous = best_values.get(name)
        best_values[name] = (
            current.clone() if previous is None else torch.where(mask, current, previous)
        )
