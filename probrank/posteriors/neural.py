"""Posteriors over one question's candidates from a warm-started Siamese utility network.

Every class here is a :class:`~probrank.posteriors.base.CandidateSetPosterior` (the one
candidate posterior; re-exported here for older imports), holds the `n x d` features of one
question's candidates and a private copy of the warm-start network(s) (the caller's networks
are never modified), and offers:

* ``posterior()``: the joint ``MultivariateNormal`` over the `n` utilities (mean `n`,
  covariance `n x n`), i.e. the :class:`~probrank.posteriors.protocol.PreferenceModel` protocol
  together with ``update(winner, loser)``;
* ``posterior_at(X)``: the same posterior at any `batch_shape x q x d` features, and
  ``botorch_model()``: a BoTorch
  :class:`~probrank.posteriors.preference.PreferenceUtilityModel` whose ``posterior(X)``
  returns a ``GPyTorchPosterior`` with the full joint covariance, so BoTorch's acquisition
  functions run on it unchanged, and whose ``condition_on_observations`` / ``fantasize``
  condition copies on judgements (:meth:`CandidateSetPosterior.conditioned`), so look-ahead
  acquisition functions run too.

Sample-based covariances (MC dropout passes, ensemble members, SWAG draws) have rank at most
``S - 1``; a ``jitter`` (default ``1e-6``) is added to the diagonal so that a Cholesky factor
exists (:func:`~probrank.posteriors.candidate.with_jitter`).

After each judgement the networks are updated by :class:`IncrementalUpdate`: SGD with momentum
on the question's judgements so far, at most 4 epochs, stopping early as soon as every judged
pair meets the margin, with a Gaussian prior centred at the warm-start weights (weight decay
towards them). The update is seeded by ``(seed, number of judgements)``, so replaying the same
judgements from the same warm start gives bit-identical networks (sessions can be resumed).
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.nn.siamese import PairFitSettings, SiameseUtilityNet, fit_pairs
from probrank.posteriors.base import CandidateSetPosterior, check_candidate_features
from probrank.posteriors.candidate import jittered_sample_mvn

__all__ = [
    "CandidateSetPosterior",
    "EnsemblePosterior",
    "HeadState",
    "IncrementalUpdate",
    "MCDropoutPosterior",
    "as_float64_copy",
    "check_candidate_features",
    "dropout_passes",
]


@dataclass(frozen=True)
class IncrementalUpdate:
    """The update after each judgement: SGD with momentum on the judgements so far.

    Attributes:
        lr: Learning rate.
        momentum: SGD momentum.
        max_epochs: At most this many passes (the paper: 4).
        prior_precision: Weight decay towards the warm-start weights (Gaussian prior centred
            there).
        margin: Margin ``m`` of the ranking loss.
        batch_size: Judgements per step.
        replay: Train on every judgement so far (True) or on the newest only (False).
        dropout: Keep dropout on while updating.
        layers: How many last linear layers the update trains (the earlier layers stay at the
            warm start, so their outputs for the candidates are computed once); 0 trains all.
        seed: Base seed; the update after ``c`` judgements uses ``seed * 100003 + c``.
    """

    lr: float = 0.1
    momentum: float = 0.9
    max_epochs: int = 4
    prior_precision: float = 1e-3
    margin: float = 0.1
    batch_size: int = 16
    replay: bool = True
    dropout: bool = True
    layers: int = 2
    seed: int = 0

    def trained_layers(self, net: SiameseUtilityNet) -> int:
        """The number of last linear layers of ``net`` the update trains."""
        total = len(net.linears())
        if self.layers < 0 or self.layers > total:
            raise InputDataError(f"update layers must be in [0, {total}], got {self.layers}")
        return self.layers or total

    def options(self, judgements: int, member: int = 0) -> PairFitSettings:
        """The :class:`~probrank.nn.siamese.PairFitSettings` of the update after ``judgements``."""
        return PairFitSettings(
            epochs=self.max_epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            momentum=self.momentum,
            weight_decay=self.prior_precision,
            margin=self.margin,
            stop_at_zero_loss=True,
            train_mode=self.dropout,
            seed=(self.seed * 100003 + judgements) * 101 + member,
        )

    def apply(
        self,
        net: torch.nn.Module,
        anchor: dict[str, Tensor],
        features: Tensor,
        comparisons: Sequence[tuple[int, int]],
        member: int = 0,
        utilities: Callable[[torch.nn.Module, Tensor], Tensor] | None = None,
    ) -> None:
        """Update ``net`` in place on ``comparisons`` (``(winner, loser)`` rows of ``features``).

        Args:
            net: The network to update.
            anchor: Its warm-start parameters (the prior mean).
            features: `n x d` candidate features.
            comparisons: The judgements so far.
            member: Ensemble member index (seeds members apart).
            utilities: How the early stop scores candidates (the posterior mean the ranking
                uses); default the network with dropout off.
        """
        rows = list(comparisons) if self.replay else list(comparisons)[-1:]
        pairs = torch.tensor(rows, dtype=torch.long)
        options = replace(self.options(len(comparisons), member), anchor=anchor)
        fit_pairs(net, features, pairs, options, utilities=utilities)


def as_float64_copy(net: SiameseUtilityNet) -> SiameseUtilityNet:
    """A float64 deep copy of ``net`` in eval mode (the caller's network is left alone)."""
    clone = copy.deepcopy(net).double()
    clone.eval()
    return clone


def dropout_passes(net: SiameseUtilityNet, X: Tensor, num_samples: int, seed: int) -> Tensor:
    """`S x ...` utilities of ``S`` thinned networks (MC dropout passes) of the whole network.

    Each pass drops the same units for every input row (a mask per pass and unit, drawn from a
    generator seeded by ``seed``), so a pass is one function draw: the passes' joint covariance
    over any set of candidates is the restriction of their covariance over a larger set.

    Args:
        net: The network.
        X: `... x d` features.
        num_samples: ``S``.
        seed: Seed of the masks.
    """
    prefix, head = net.split(len(net.linears()))
    masks = head.dropout_masks(num_samples, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        return head.forward_with_masks(prefix(X), masks)


class HeadState:
    """A network split into a frozen prefix and a trainable head, with the candidates' prefix
    outputs cached (the prefix never changes during a session)."""

    def __init__(
        self, net: SiameseUtilityNet, features: Tensor, head_layers: int, train_layers: int
    ):
        self.net = as_float64_copy(net)
        check_candidate_features(features, self.net.in_features)
        self.prefix, self.head = self.net.split(head_layers)
        trainable = set(self.head.linears()[-train_layers:])
        for linear in self.head.linears():
            linear.requires_grad_(linear in trainable)
        self.features = features
        with torch.no_grad():
            self.hidden = self.prefix(features)
        self.anchor = {k: v.detach().clone() for k, v in self.head.named_parameters()}

    def hidden_at(self, x: Tensor) -> Tensor:
        if x is self.features:
            return self.hidden
        with torch.no_grad():
            return self.prefix(x)

    def extend(self, features: Tensor) -> None:
        """Take ``features`` (the old rows, then new ones) as the candidates."""
        with torch.no_grad():
            extra = self.prefix(features[self.hidden.shape[0] :])
        self.features, self.hidden = features, torch.cat([self.hidden, extra])


class MCDropoutPosterior(CandidateSetPosterior):
    """MC dropout: the sample mean and covariance of ``T`` dropout passes (the paper: T = 20).

    The ``T`` masks are drawn once from ``prediction_seed`` and shared by all candidates: the
    same ``T`` thinned networks score every candidate (and any other features), so the
    covariance is that of ``T`` function draws.

    Args:
        net: The warm-start network (copied, not modified).
        features: `n x d` candidate features.
        num_samples: ``T >= 2`` passes.
        update: The incremental update after each judgement (its ``layers`` are trained).
        prediction_seed: Seed of the dropout masks at prediction time (fixed, so the posterior
            is a deterministic function of the weights).
        jitter: Diagonal added to the sample covariance.
    """

    def __init__(
        self,
        net: SiameseUtilityNet,
        features: Tensor,
        *,
        num_samples: int = 20,
        update: IncrementalUpdate = IncrementalUpdate(),
        prediction_seed: int = 0,
        jitter: float = 1e-6,
    ) -> None:
        super().__init__(features, jitter=jitter)
        if num_samples < 2:
            raise InputDataError(f"num_samples must be at least 2, got {num_samples}")
        if net.dropout <= 0:
            raise InputDataError("MC dropout needs a network with dropout > 0")
        layers = update.trained_layers(net)
        self.state = HeadState(net, self.features, layers, layers)
        self.net = self.state.net
        self.num_samples = int(num_samples)
        self.update_rule = update
        self.prediction_seed = int(prediction_seed)
        generator = torch.Generator().manual_seed(self.prediction_seed)
        self.masks = self.state.head.dropout_masks(self.num_samples, generator)

    def _passes(self, head: torch.nn.Module, hidden: Tensor) -> Tensor:
        with torch.no_grad():
            return self.state.head.forward_with_masks(hidden, self.masks)

    def posterior_at(self, X: Tensor) -> MultivariateNormal:
        """Sample moments of ``T`` dropout passes at `batch_shape x q x d` features."""
        x = X if X is self.features else self._check_x(X, self.net.in_features)
        return jittered_sample_mvn(
            self._passes(self.state.head, self.state.hidden_at(x)), self.jitter
        )

    def _extend(self, rows: Tensor) -> None:
        super()._extend(rows)
        self.state.extend(self.features)

    def _condition(self, new: list[tuple[int, int]]) -> None:
        self.update_rule.apply(
            self.state.head,
            self.state.anchor,
            self.state.hidden,
            self._comparisons,
            utilities=lambda head, hidden: self._passes(head, hidden).mean(0),
        )


class EnsemblePosterior(CandidateSetPosterior):
    """A deep ensemble: the sample mean and covariance of ``M`` networks' utilities.

    Args:
        nets: ``M >= 2`` warm-start networks trained from different seeds (copied).
        features: `n x d` candidate features.
        update: The incremental update, applied to every member (member ``k`` seeded apart).
        jitter: Diagonal added to the sample covariance.
    """

    def __init__(
        self,
        nets: Sequence[SiameseUtilityNet],
        features: Tensor,
        *,
        update: IncrementalUpdate = IncrementalUpdate(),
        jitter: float = 1e-6,
    ) -> None:
        super().__init__(features, jitter=jitter)
        if len(nets) < 2:
            raise InputDataError(f"an ensemble needs at least 2 networks, got {len(nets)}")
        self.members = []
        for net in nets:
            layers = update.trained_layers(net)
            self.members.append(HeadState(net, self.features, layers, layers))
        self.update_rule = update

    def posterior_at(self, X: Tensor) -> MultivariateNormal:
        """Sample moments of the members' utilities at `batch_shape x q x d` features."""
        x = X if X is self.features else self._check_x(X, self.members[0].net.in_features)
        with torch.no_grad():
            samples = torch.stack([m.head(m.hidden_at(x)) for m in self.members])
        return jittered_sample_mvn(samples, self.jitter)

    def _extend(self, rows: Tensor) -> None:
        super()._extend(rows)
        for member in self.members:
            member.extend(self.features)

    def _condition(self, new: list[tuple[int, int]]) -> None:
        for k, member in enumerate(self.members):
            self.update_rule.apply(
                member.head, member.anchor, member.hidden, self._comparisons, member=k
            )
