"""The Siamese utility network of the interactive ranker and its pairwise training.

One network scores every candidate of a question from its cached encoder features; the
*Siamese* part is that both answers of a pair go through the same weights and only the
difference of their utilities enters the loss::

    features `d` -> FC 100 -> act -> dropout -> FC 10 -> act -> dropout -> FC 1 -> utility

Margin ranking loss, with ``f_w`` the utility of the preferred answer and ``f_l`` the other::

    loss = max(0, m - (f_w - f_l)),  m = 0.1

This is ``torch.nn.MarginRankingLoss(margin=m)`` with ``x1 = f_w``, ``x2 = f_l``, ``y = 1``
(``max(0, -y (x1 - x2) + m)``): it is zero exactly when the preferred answer scores higher by at
least the margin. The issue writes ``max(0, -y (f1 - f2 + m))``, which with ``y = 1`` is
``max(0, f2 - f1 - m)`` and would accept the preferred answer scoring up to ``m`` *below* the
other; the paper's intent (and torch's definition) is the form above.

Weight decay is the Gaussian prior: minimising ``mean loss + (lambda / 2) |theta - theta0|^2``
is MAP estimation under ``theta ~ N(theta0, I / (N lambda))`` for ``N`` training pairs whose
loss is read as a negative log likelihood. ``theta0 = 0`` for the warm start; the incremental
update after a judgement centres the prior at the warm-start weights instead
(:class:`PairFitSettings` ``anchor``), so a handful of judgements cannot drag the network far from
what it learnt on MEDIQA.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum

import torch
from torch import Tensor, nn

from probrank._options import parse_enum
from probrank.exceptions import InputDataError
from probrank.nn.mc_dropout import dropout_masks, forward_with_masks
from probrank.nn.training import Direction, EarlyStopping

__all__ = [
    "Activation",
    "PairFitResult",
    "PairFitSettings",
    "SiameseUtilityNet",
    "UtilityHead",
    "UtilityPrefix",
    "fit_pairs",
    "graded_pairs",
    "margin_ranking_loss",
    "pairwise_accuracy",
]


class Activation(str, Enum):
    """Hidden-layer non-linearity."""

    RELU = "relu"
    """``max(0, x)``."""
    TANH = "tanh"
    """``tanh(x)``."""


_ACTIVATIONS: dict[Activation, type[nn.Module]] = {
    Activation.RELU: nn.ReLU,
    Activation.TANH: nn.Tanh,
}


def margin_ranking_loss(
    winner: Tensor, loser: Tensor, margin: float = 0.1, reduction: str = "mean"
) -> Tensor:
    """``max(0, margin - (winner - loser))``: the preferred utility must lead by ``margin``.

    Equal to ``torch.nn.functional.margin_ranking_loss(winner, loser, ones, margin)``.

    Args:
        winner: `...` utilities of the preferred candidates.
        loser: `...` utilities of the other candidates (same shape).
        margin: ``m >= 0``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Returns:
        A scalar, or `...` per-pair losses for ``"none"``.
    """
    if winner.shape != loser.shape:
        raise InputDataError(f"winner {tuple(winner.shape)} and loser {tuple(loser.shape)} differ")
    if margin < 0:
        raise InputDataError(f"margin must be non-negative, got {margin}")
    losses = torch.clamp(margin - (winner - loser), min=0.0)
    reductions: dict[str, Callable[[Tensor], Tensor]] = {
        "mean": torch.mean,
        "sum": torch.sum,
        "none": lambda t: t,
    }
    if reduction not in reductions:
        raise InputDataError(f"reduction must be mean, sum or none, got {reduction!r}")
    return reductions[reduction](losses)


class SiameseUtilityNet(nn.Module):
    """``features -> FC 100 -> FC 10 -> 1``: one utility per candidate.

    Args:
        in_features: Feature width ``d`` (e.g. 1,536 for MiniLM bi-encoder pair features).
        hidden: Hidden widths (the paper: ``(100, 10)``).
        dropout: Dropout probability after each hidden activation (used by MC dropout).
        activation: ``"relu"`` or ``"tanh"``.
        input_mean: Optional `d` shift subtracted from the features (standardisation).
        input_scale: Optional `d` scale the shifted features are divided by.
        seed: Seed of the weight initialisation.
    """

    input_mean: Tensor
    input_scale: Tensor

    def __init__(
        self,
        in_features: int,
        hidden: Sequence[int] = (100, 10),
        *,
        dropout: float = 0.1,
        activation: str | Activation = Activation.RELU,
        input_mean: Tensor | None = None,
        input_scale: Tensor | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if in_features < 1 or not hidden or min(hidden) < 1:
            raise InputDataError(f"need in_features >= 1 and hidden widths >= 1, got {hidden}")
        if not 0.0 <= dropout < 1.0:
            raise InputDataError(f"dropout must be in [0, 1), got {dropout}")
        act = _ACTIVATIONS[parse_enum(Activation, activation, "activation")]
        self.in_features = in_features
        self.hidden = tuple(int(h) for h in hidden)
        self.dropout = float(dropout)
        shift = torch.zeros(in_features) if input_mean is None else input_mean.detach().clone()
        scale = torch.ones(in_features) if input_scale is None else input_scale.detach().clone()
        if shift.shape != (in_features,) or scale.shape != (in_features,):
            raise InputDataError(f"input_mean and input_scale must have shape ({in_features},)")
        if not bool((scale > 0).all()):
            raise InputDataError("input_scale must be positive")
        self.register_buffer("input_mean", shift.float())
        self.register_buffer("input_scale", scale.float())
        layers: list[nn.Module] = []
        width = in_features
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for size in self.hidden:
                layers += [nn.Linear(width, size), act(), nn.Dropout(dropout)]
                width = size
            self.body = nn.Sequential(*layers)
            self.output = nn.Linear(width, 1)

    def embed(self, features: Tensor) -> Tensor:
        """`... x d` -> `... x hidden[-1]` last hidden representation (after dropout)."""
        x = (features - self.input_mean.to(features.dtype)) / self.input_scale.to(features.dtype)
        return self.body(x)

    def forward(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` utilities."""
        return self.output(self.embed(features)).squeeze(-1)

    def linears(self) -> list[nn.Linear]:
        """All linear layers, input side first (the output layer last)."""
        return [m for m in self.body if isinstance(m, nn.Linear)] + [self.output]

    def last_layers(self, count: int = 2) -> list[nn.Linear]:
        """The last ``count`` linear layers, input side first (SWAG's subspace)."""
        linears = self.linears()
        if not 1 <= count <= len(linears):
            raise InputDataError(f"count must be in [1, {len(linears)}], got {count}")
        return linears[-count:]

    def split(self, count: int) -> tuple[UtilityPrefix, UtilityHead]:
        """The network as ``head(prefix(features))`` with the last ``count`` linear layers in
        the head (both share this network's parameters).

        The head starts with the dropout that precedes its first linear layer, so MC dropout on
        the head drops exactly the units the whole network would. With the prefix frozen, its
        output for a question's candidates can be computed once and reused.
        """
        first = self.last_layers(count)[0]
        modules = [*self.body, self.output]
        start = modules.index(first)
        if start > 0 and isinstance(modules[start - 1], nn.Dropout):
            start -= 1
        width = first.in_features
        return UtilityPrefix(self, modules[:start]), UtilityHead(modules[start:], width)


class UtilityPrefix(nn.Module):
    """Standardisation and the first layers of a :class:`SiameseUtilityNet` (shared weights)."""

    input_mean: Tensor
    input_scale: Tensor

    def __init__(self, net: SiameseUtilityNet, modules: Sequence[nn.Module]) -> None:
        super().__init__()
        self.register_buffer("input_mean", net.input_mean)
        self.register_buffer("input_scale", net.input_scale)
        self.layers = nn.ModuleList(modules)

    def forward(self, features: Tensor) -> Tensor:
        """`... x d` -> `... x w` input of the head."""
        mean, scale = self.input_mean.to(features.dtype), self.input_scale.to(features.dtype)
        x = (features - mean) / scale
        for module in self.layers:
            x = module(x)
        return x


class UtilityHead(nn.Module):
    """The last layers of a :class:`SiameseUtilityNet`: hidden ``(..., w)`` -> utilities ``(...)``.

    Args:
        modules: The modules, in order (linear layers, activations, dropouts; shared).
        in_width: Width ``w`` of the head's input.
    """

    def __init__(self, modules: Sequence[nn.Module], in_width: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(modules)
        self.in_width = int(in_width)

    def forward(self, hidden: Tensor) -> Tensor:
        x = hidden
        for module in self.layers:
            x = module(x)
        return x.squeeze(-1)

    def linears(self) -> list[nn.Linear]:
        """The head's linear layers, input side first."""
        return [m for m in self.layers if isinstance(m, nn.Linear)]

    def dropout_masks(self, num_samples: int, generator: torch.Generator) -> list[Tensor]:
        """Per dropout layer, `S x width` scaled Bernoulli masks (``0`` or ``1 / (1 - p)``).

        One mask per sample *and unit*, shared by every input row: each sample is one thinned
        network, so :meth:`forward_with_masks` draws whole functions and their joint covariance
        over many candidates restricts to the covariance over any subset
        (:func:`probrank.nn.mc_dropout.dropout_masks`).
        """
        return dropout_masks(list(self.layers), self.in_width, num_samples, generator)

    def forward_with_masks(self, hidden: Tensor, masks: Sequence[Tensor]) -> Tensor:
        """`... x w` -> `S x ...` utilities of the ``S`` thinned networks ``masks`` describe."""
        return forward_with_masks(list(self.layers), hidden, masks).squeeze(-1)

    def forward_with_weights(
        self, hidden: Tensor, weights: Sequence[tuple[Tensor, Tensor]]
    ) -> Tensor:
        """Eval-mode forward with explicit weights for the head's last ``len(weights)`` linears.

        Args:
            hidden: `k x w` inputs.
            weights: ``(weight, bias)`` with a leading sample dimension, `S x out x in` and
                `S x out`, for the last linear layers, input side first.

        Returns:
            `S x k` utilities.
        """
        linears = self.linears()
        replaced = dict(zip(linears[len(linears) - len(weights) :], weights, strict=True))
        x = hidden.unsqueeze(0)
        for module in self.layers:
            if isinstance(module, nn.Dropout):
                continue
            if module in replaced:
                weight, bias = replaced[module]
                x = x @ weight.transpose(-1, -2) + bias.unsqueeze(-2)
            else:
                x = module(x)
        return x.squeeze(-1)


def graded_pairs(grades: Sequence[Sequence[float]]) -> Tensor:
    """Every ``(better, worse)`` pair within each list, as indices into the concatenation.

    Args:
        grades: One sequence of grades per list (e.g. MEDIQA ``ReferenceScore`` per question);
            list ``k``'s items occupy consecutive rows after lists ``0..k-1``.

    Returns:
        `m x 2` long tensor of ``(winner, loser)`` rows with ``grade[winner] > grade[loser]``,
        in list order, then by ``winner``, then by ``loser``.
    """
    rows: list[tuple[int, int]] = []
    offset = 0
    for values in grades:
        for i, gi in enumerate(values):
            for j, gj in enumerate(values):
                if float(gi) > float(gj):
                    rows.append((offset + i, offset + j))
        offset += len(values)
    if not rows:
        return torch.zeros(0, 2, dtype=torch.long)
    return torch.tensor(rows, dtype=torch.long)


def pairwise_accuracy(utilities: Tensor, pairs: Tensor) -> float:
    """Fraction of ``(winner, loser)`` rows with ``utilities[winner] > utilities[loser]``.

    Args:
        utilities: `n` utilities.
        pairs: `m x 2` index rows (``m >= 1``).
    """
    if pairs.shape[0] == 0:
        raise InputDataError("no pairs to score")
    return float((utilities[pairs[:, 0]] > utilities[pairs[:, 1]]).double().mean())


@dataclass(frozen=True)
class PairFitSettings:
    """SGD-with-momentum settings for :func:`fit_pairs`.

    Attributes:
        epochs: Maximum passes over the pairs.
        batch_size: Pairs per step.
        lr: Learning rate.
        momentum: SGD momentum.
        weight_decay: ``lambda`` of the Gaussian prior ``(lambda / 2) |theta - anchor|^2``.
        margin: ``m`` of the margin ranking loss.
        anchor: Prior mean of the parameters (a ``state_dict``-like mapping of the trainable
            parameters); None means 0, i.e. ordinary weight decay.
        stop_at_zero_loss: Before each epoch, score the pairs with dropout off and stop if every
            pair already meets the margin (the incremental update's early stopping).
        patience: With a ``validate`` callable: stop when its score has not improved for this
            many epochs and restore the best epoch's weights.
        train_mode: Keep dropout on while training.
        seed: Seed of the shuffling and the dropout masks.
    """

    epochs: int = 20
    batch_size: int = 64
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 1e-4
    margin: float = 0.1
    anchor: dict[str, Tensor] | None = None
    stop_at_zero_loss: bool = False
    patience: int = 3
    train_mode: bool = True
    seed: int = 0

    def with_seed(self, seed: int) -> PairFitSettings:
        """A copy with another seed."""
        return replace(self, seed=seed)


@dataclass(frozen=True)
class PairFitResult:
    """What :func:`fit_pairs` did.

    Attributes:
        losses: Mean training margin loss per epoch run.
        scores: The ``validate`` score after each epoch (empty without one).
        best_epoch: 0-based epoch whose weights were kept.
    """

    losses: list[float]
    scores: list[float]
    best_epoch: int


def _check_pairs(pairs: Tensor, n: int) -> Tensor:
    if pairs.dim() != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise InputDataError(f"pairs must be m x 2 with m >= 1, got {tuple(pairs.shape)}")
    pairs = pairs.long()
    if bool((pairs < 0).any()) or bool((pairs >= n).any()):
        raise InputDataError(f"pair indices must lie in [0, {n})")
    if bool((pairs[:, 0] == pairs[:, 1]).any()):
        raise InputDataError("a pair must name two different candidates")
    return pairs


def fit_pairs(
    net: nn.Module,
    features: Tensor,
    pairs: Tensor,
    options: PairFitSettings = PairFitSettings(),
    validate: Callable[[nn.Module], float] | None = None,
    on_epoch_end: Callable[[nn.Module, int], None] | None = None,
    utilities: Callable[[nn.Module, Tensor], Tensor] | None = None,
) -> PairFitResult:
    """Train ``net`` in place on ``(winner, loser)`` pairs with SGD and momentum.

    The update is ``torch.optim.SGD``'s (``v = momentum * v + g``, ``theta -= lr * v``, no
    dampening), written out: for the handful of pairs of an interactive update the optimizer
    object's overhead dominated the step.

    Each step scores the rows its pairs touch, applies :func:`margin_ranking_loss` and the
    Gaussian-prior penalty ``(weight_decay / 2) |theta - anchor|^2``. Deterministic given
    ``options.seed`` (shuffling and dropout masks come from it; the global RNG is restored).

    Args:
        net: Maps `k x d` features to `k` utilities.
        features: `n x d` features.
        pairs: `m x 2` ``(winner, loser)`` row indices into ``features``.
        options: The settings.
        validate: Optional ``net -> score`` (higher is better) called after each epoch in eval
            mode; enables early stopping with ``options.patience`` and best-epoch restore.
        on_epoch_end: Optional ``(net, epoch)`` callback after each epoch's last step (e.g. a
            SWAG snapshot), before validation.
        utilities: How ``options.stop_at_zero_loss`` scores the rows: ``(net, k x d features)
            -> k`` utilities (e.g. an MC-dropout mean); default the network with dropout off.

    Returns:
        The :class:`PairFitResult`.
    """
    pairs = _check_pairs(pairs, features.shape[0])
    if options.epochs < 1 or options.batch_size < 1 or not options.lr > 0:
        raise InputDataError(
            f"need epochs >= 1, batch_size >= 1, lr > 0; got {options.epochs}, "
            f"{options.batch_size}, {options.lr}"
        )
    params = {name: p for name, p in net.named_parameters() if p.requires_grad}
    anchor = options.anchor
    if anchor is not None:
        missing = [name for name in params if name not in anchor]
        if missing:
            raise InputDataError(f"anchor lacks parameter {missing[0]!r}")
    velocity = {name: torch.zeros_like(p) for name, p in params.items()}
    generator = torch.Generator().manual_seed(options.seed)
    m = pairs.shape[0]
    losses: list[float] = []
    scores: list[float] = []
    stopper = EarlyStopping(options.patience, direction=Direction.MAX)
    best_epoch, best_state = 0, None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(options.seed)
        for epoch in range(options.epochs):
            if options.stop_at_zero_loss and _margins_met(
                net, features, pairs, options.margin, utilities
            ):
                break
            net.train(options.train_mode)
            order = torch.randperm(m, generator=generator) if m > 1 else torch.zeros(1).long()
            total = 0.0
            for start in range(0, m, options.batch_size):
                batch = pairs[order[start : start + options.batch_size]]
                rows, inverse = torch.unique(batch.reshape(-1), return_inverse=True)
                scored = net(features[rows])[inverse.reshape(-1, 2)]
                loss = margin_ranking_loss(scored[:, 0], scored[:, 1], options.margin)
                objective = loss + _prior_penalty(params, anchor, options.weight_decay)
                grads = torch.autograd.grad(objective, list(params.values()), allow_unused=True)
                _sgd_step(params, velocity, grads, options.lr, options.momentum)
                total += float(loss.detach()) * batch.shape[0]
            losses.append(total / m)
            if on_epoch_end is not None:
                on_epoch_end(net, epoch)
            if validate is not None:
                net.eval()
                score = float(validate(net))
                scores.append(score)
                if bool(stopper.step(epoch, score)):
                    best_epoch, best_state = epoch, copy.deepcopy(net.state_dict())
                elif stopper.should_stop:
                    break
            else:
                best_epoch = epoch
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    return PairFitResult(losses=losses, scores=scores, best_epoch=best_epoch)


@torch.no_grad()
def _sgd_step(
    params: dict[str, nn.Parameter],
    velocity: dict[str, Tensor],
    grads: Sequence[Tensor | None],
    lr: float,
    momentum: float,
) -> None:
    """Heavy-ball SGD, as ``torch.optim.SGD(momentum=m)``: ``v = m v + g; p -= lr v``."""
    for (name, p), grad in zip(params.items(), grads, strict=True):
        if grad is None:
            continue
        v = velocity[name]
        v.mul_(momentum).add_(grad)
        p.sub_(lr * v)


@torch.no_grad()
def _margins_met(
    net: nn.Module,
    features: Tensor,
    pairs: Tensor,
    margin: float,
    utilities: Callable[[nn.Module, Tensor], Tensor] | None,
) -> bool:
    net.eval()
    rows, inverse = torch.unique(pairs.reshape(-1), return_inverse=True)
    scores = net(features[rows]) if utilities is None else utilities(net, features[rows])
    scored = scores[inverse.reshape(-1, 2)]
    net.eval()
    return bool((scored[:, 0] - scored[:, 1] >= margin).all())


def _prior_penalty(
    params: dict[str, nn.Parameter], anchor: dict[str, Tensor] | None, weight_decay: float
) -> Tensor | float:
    if weight_decay == 0.0:
        return 0.0
    total: Tensor | float = 0.0
    for name, p in params.items():
        centred = p if anchor is None else p - anchor[name].to(p.dtype)
        total = total + (centred * centred).sum()
    return 0.5 * weight_decay * total
