"""Relevance heads on encoder features: deterministic MLP, MC dropout, deep ensemble, SNGP, GPF.

Every head maps `... x d` features to logits, has ``fit(features, labels)``,
``predict_proba(features) -> ...`` and ``posterior(features)``: a
:class:`gpytorch.distributions.MultivariateNormal` over the logits (utilities) of a set of
`q` candidates, `batch_shape x q x d` -> `batch_shape x q`. The SNGP/GPF posterior has the
low-rank Laplace covariance ``Phi Sigma Phi^T``; MC dropout and ensembles use the sample
covariance of their passes or members; the deterministic head a zero covariance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

import torch
from gpytorch.distributions import MultivariateNormal
from torch import Tensor, nn

from probrank._options import parse_enum
from probrank.exceptions import InputDataError
from probrank.nn.losses import LossKind, make_loss
from probrank.nn.mvn import low_rank_mvn, sample_mvn
from probrank.nn.rff_gp import RFFGaussianProcess, mean_field_probability
from probrank.nn.spectral import spectral_normalize
from probrank.nn.training import train_head

__all__ = [
    "DeepEnsembleHead",
    "FitOptions",
    "GPFHead",
    "HeadKind",
    "MCDropoutHead",
    "MLPHead",
    "PrecisionUpdate",
    "RelevanceHead",
    "SNGPHead",
    "build_head",
]


class RelevanceHead(Protocol):
    """What every head offers (the classes below implement it)."""

    def fit(self, features: Tensor, labels: Tensor, options: FitOptions = ...) -> list[float]: ...

    def predict_proba(self, features: Tensor) -> Tensor: ...

    def posterior(self, features: Tensor) -> MultivariateNormal: ...

    def parameters(self, recurse: bool = True) -> Any: ...


@dataclass(frozen=True)
class FitOptions:
    """Training settings shared by the heads.

    Attributes:
        epochs: Passes over the data.
        batch_size: Items per step.
        lr: Adam learning rate.
        weight_decay: Adam weight decay (MLP heads).
        seed: Seed of initialisation, shuffling and dropout.
    """

    epochs: int = 20
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.0
    seed: int = 0


def _mlp(
    in_features: int, hidden: int, num_layers: int, dropout: float, bound: float | None
) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = in_features
    for _ in range(num_layers):
        linear = nn.Linear(width, hidden)
        if bound is not None:
            spectral_normalize(linear, bound)
        layers += [linear, nn.ReLU(), nn.Dropout(dropout)]
        width = hidden
    return nn.Sequential(*layers)


class MLPHead(nn.Module):
    """Deterministic MLP head (the BERT baseline): hidden ReLU layers, dropout, linear logit.

    Args:
        in_features: Feature width ``d``.
        hidden: Hidden width.
        num_layers: Hidden layers.
        dropout: Dropout rate in training.
        loss: ``"bce"`` or ``"focal"``.
        gamma: Focal-loss gamma.
        seed: Seed of the initial weights.
    """

    def __init__(
        self,
        in_features: int,
        hidden: int = 256,
        num_layers: int = 1,
        dropout: float = 0.1,
        loss: str | LossKind = LossKind.BCE,
        gamma: float = 2.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.body = _mlp(in_features, hidden, num_layers, dropout, None)
            self.out = nn.Linear(hidden if num_layers else in_features, 1)
        self.loss = make_loss(loss, gamma)

    def forward(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` logits."""
        return self.out(self.body(features)).squeeze(-1)

    def fit(
        self, features: Tensor, labels: Tensor, options: FitOptions = FitOptions()
    ) -> list[float]:
        """Train on `n x d` features and `n` labels; returns the loss per epoch."""
        return train_head(
            self,
            features,
            labels,
            self.loss,
            epochs=options.epochs,
            batch_size=options.batch_size,
            lr=options.lr,
            weight_decay=options.weight_decay,
            seed=options.seed,
        )

    @torch.no_grad()
    def predict_proba(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` P(relevant)."""
        self.eval()
        return torch.sigmoid(self(features))

    @torch.no_grad()
    def posterior(self, features: Tensor) -> MultivariateNormal:
        """Point mass at the logits (zero covariance root of rank 1)."""
        self.eval()
        mean = self(features)
        return low_rank_mvn(mean, torch.zeros(*mean.shape, 1, dtype=mean.dtype))


class MCDropoutHead(MLPHead):
    """MC dropout: ``num_samples`` stochastic passes with dropout on at prediction time.

    Args:
        num_samples: Passes ``T`` (default 10).
        prediction_seed: Seed of the dropout masks at prediction time.
        **kwargs: As :class:`MLPHead` (``dropout`` defaults to 0.1).
    """

    def __init__(
        self, in_features: int, *, num_samples: int = 10, prediction_seed: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(in_features, **kwargs)
        if num_samples < 2:
            raise InputDataError(f"num_samples must be at least 2, got {num_samples}")
        self.num_samples = num_samples
        self.prediction_seed = prediction_seed

    @torch.no_grad()
    def sample_logits(self, features: Tensor) -> Tensor:
        """`T x ...` logits of ``T`` dropout passes (seeded by ``prediction_seed``)."""
        self.train()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.prediction_seed)
            samples = torch.stack([self(features) for _ in range(self.num_samples)])
        self.eval()
        return samples

    def predict_proba(self, features: Tensor) -> Tensor:
        """Mean over passes of the sigmoid."""
        return torch.sigmoid(self.sample_logits(features)).mean(0)

    def posterior(self, features: Tensor) -> MultivariateNormal:
        """Sample mean and covariance of the passes' logits."""
        return sample_mvn(self.sample_logits(features))


class DeepEnsembleHead(nn.Module):
    """``num_members`` MLP heads trained from different seeds.

    Args:
        in_features: Feature width.
        num_members: Members ``M`` (default 5).
        seed: Member ``m`` uses seed ``seed + m`` for initialisation and training.
        **kwargs: As :class:`MLPHead`.
    """

    def __init__(
        self, in_features: int, *, num_members: int = 5, seed: int = 0, **kwargs: Any
    ) -> None:
        super().__init__()
        if num_members < 2:
            raise InputDataError(f"num_members must be at least 2, got {num_members}")
        self.members: list[MLPHead] = nn.ModuleList(  # type: ignore[assignment]
            MLPHead(in_features, seed=seed + m, **kwargs) for m in range(num_members)
        )

    def forward(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` mean logit of the members."""
        return self.sample_logits(features).mean(0)

    def fit(
        self, features: Tensor, labels: Tensor, options: FitOptions = FitOptions()
    ) -> list[float]:
        """Train each member with seed ``options.seed + m``; returns the members' mean loss."""
        histories = [
            member.fit(
                features, labels, FitOptions(**{**options.__dict__, "seed": options.seed + m})
            )
            for m, member in enumerate(self.members)
        ]
        return [sum(values) / len(values) for values in zip(*histories, strict=True)]

    def sample_logits(self, features: Tensor) -> Tensor:
        """`M x ...` logits of the members."""
        return torch.stack([member(features) for member in self.members])

    @torch.no_grad()
    def predict_proba(self, features: Tensor) -> Tensor:
        """Mean of the members' probabilities."""
        self.eval()
        return torch.sigmoid(self.sample_logits(features)).mean(0)

    @torch.no_grad()
    def posterior(self, features: Tensor) -> MultivariateNormal:
        """Sample mean and covariance of the members' logits."""
        self.eval()
        return sample_mvn(self.sample_logits(features))


class PrecisionUpdate(str, Enum):
    """How the Laplace precision of the GP layer is computed."""

    EXACT = "exact"
    """One final pass over the training data after training."""
    MOMENTUM = "momentum"
    """Minibatch momentum update after every training step (SNGP eq. 5), from zero."""


class SNGPHead(nn.Module):
    """SNGP: spectrally normalised hidden layers, then an RFF GP layer with a Laplace posterior.

    Args:
        in_features: Feature width ``d``.
        hidden: Hidden width.
        num_layers: Spectrally normalised hidden layers.
        spectral_bound: Bound ``c`` on each hidden layer's spectral norm.
        dropout: Dropout in training.
        num_features: Random features ``L`` (default 1024).
        lengthscale: RBF lengthscale; default ``sqrt(hidden)`` on layer-normalised inputs.
        prior_precision: Prior precision of the output weights.
        mean_field_factor: ``lambda`` of the mean-field probability (pi / 8).
        precision_update: ``"exact"`` or ``"momentum"`` (:class:`PrecisionUpdate`).
        momentum: ``m`` of the momentum update.
        loss: ``"bce"`` (SNGP) or ``"focal"`` (GPF).
        gamma: Focal-loss gamma.
        seed: Seed of the weights and random features.
    """

    def __init__(
        self,
        in_features: int,
        hidden: int = 256,
        num_layers: int = 1,
        spectral_bound: float = 0.95,
        dropout: float = 0.1,
        num_features: int = 1024,
        lengthscale: float | None = None,
        prior_precision: float = 1.0,
        mean_field_factor: float = math.pi / 8,
        precision_update: str | PrecisionUpdate = PrecisionUpdate.EXACT,
        momentum: float = 0.999,
        loss: str | LossKind = LossKind.BCE,
        gamma: float = 2.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.precision_update = parse_enum(PrecisionUpdate, precision_update, "precision_update")
        self.momentum = momentum
        width = hidden if num_layers else in_features
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.body = _mlp(in_features, hidden, num_layers, dropout, spectral_bound)
        self.gp = RFFGaussianProcess(
            width,
            num_features,
            lengthscale if lengthscale is not None else math.sqrt(width),
            normalize_input=True,
            prior_precision=prior_precision,
            mean_field_factor=mean_field_factor,
            seed=seed,
        )
        self.loss = make_loss(loss, gamma)

    def forward(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` MAP logits."""
        return self.gp(self.body(features))

    def fit(
        self, features: Tensor, labels: Tensor, options: FitOptions = FitOptions()
    ) -> list[float]:
        """MAP training (loss + prior penalty / n), then the Laplace precision."""
        n = features.shape[0]
        output = self.gp.output

        def start(epoch: int) -> None:
            if epoch == 0:
                output.reset_precision()

        def update(x: Tensor) -> None:
            if self.precision_update is PrecisionUpdate.MOMENTUM and self.body.training:
                with torch.no_grad():
                    output.momentum_update(self.gp.phi(self.body(x)), self.momentum, n)

        momentum_mode = self.precision_update is PrecisionUpdate.MOMENTUM
        history = train_head(
            self,
            features,
            labels,
            self.loss,
            epochs=options.epochs,
            batch_size=options.batch_size,
            lr=options.lr,
            penalty=lambda: output.prior_penalty() / n,
            on_epoch_start=start if momentum_mode else None,
            on_batch_end=update if momentum_mode else None,
            seed=options.seed,
        )
        if not momentum_mode:
            self.compute_precision(features, options.batch_size)
        return history

    @torch.no_grad()
    def compute_precision(self, features: Tensor, batch_size: int = 1024) -> None:
        """Exact Laplace precision from one pass over `n x d` training features."""
        self.eval()
        self.gp.output.reset_precision()
        for start in range(0, features.shape[0], batch_size):
            self.gp.output.accumulate_precision(self.phi(features[start : start + batch_size]))

    def phi(self, features: Tensor) -> Tensor:
        """`... x d` -> `... x L` random features of the hidden representation."""
        return self.gp.phi(self.body(features))

    @torch.no_grad()
    def predictive(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """Predictive mean and variance of the logits, each `...`."""
        self.eval()
        return self.gp.output.predictive(self.phi(features))

    def predict_proba(self, features: Tensor) -> Tensor:
        """`...` mean-field probabilities ``sigmoid(m / sqrt(1 + lambda v))``."""
        mean, variance = self.predictive(features)
        return mean_field_probability(mean, variance, self.gp.mean_field_factor)

    @torch.no_grad()
    def posterior(self, features: Tensor) -> MultivariateNormal:
        """`batch_shape x q x d` -> MVN with covariance root ``Phi L^{-T}`` (`q x L`)."""
        self.eval()
        return self.gp.output.posterior(self.phi(features))


class GPFHead(SNGPHead):
    """GPF: an :class:`SNGPHead` trained with focal loss (``gamma`` default 2)."""

    def __init__(self, in_features: int, *, gamma: float = 2.0, **kwargs: Any) -> None:
        kwargs.pop("loss", None)
        super().__init__(in_features, loss=LossKind.FOCAL, gamma=gamma, **kwargs)


class HeadKind(str, Enum):
    """The five heads of the GPF-BERT comparison."""

    DETERMINISTIC = "deterministic"
    """:class:`MLPHead`."""
    MC_DROPOUT = "mc_dropout"
    """:class:`MCDropoutHead`."""
    ENSEMBLE = "ensemble"
    """:class:`DeepEnsembleHead`."""
    SNGP = "sngp"
    """:class:`SNGPHead`."""
    GPF = "gpf"
    """:class:`GPFHead`."""


_HEADS: dict[HeadKind, type[MLPHead] | type[DeepEnsembleHead] | type[SNGPHead]] = {
    HeadKind.DETERMINISTIC: MLPHead,
    HeadKind.MC_DROPOUT: MCDropoutHead,
    HeadKind.ENSEMBLE: DeepEnsembleHead,
    HeadKind.SNGP: SNGPHead,
    HeadKind.GPF: GPFHead,
}


def build_head(kind: str | HeadKind, in_features: int, **options: Any) -> RelevanceHead:
    """A head of ``kind`` with constructor ``options`` (see each class)."""
    head: RelevanceHead = _HEADS[parse_enum(HeadKind, kind, "head")](in_features, **options)
    return head
