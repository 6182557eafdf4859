"""Relevance heads on encoder features: deterministic MLP, MC dropout, deep ensemble, SNGP, GPF.

Every head maps `... x d` features to logits, has ``fit(features, labels)``,
``predict_proba(features) -> ...`` and ``posterior(features)``: a
:class:`gpytorch.distributions.MultivariateNormal` over the logits (utilities) of a set of
`q` candidates, `batch_shape x q x d` -> `batch_shape x q`. The SNGP/GPF posterior has the
low-rank Laplace covariance ``Phi Sigma Phi^T``; MC dropout and ensembles use the sample
covariance of their passes or members; the deterministic head a point mass widened by a tiny
diagonal (:data:`POINT_MASS_VARIANCE`) so that samplers that factorise it do not fail.

Every head also has ``temperature`` (1 unless calibrated) and ``logit_predictive(features) ->
(m, v)`` with ``predict_proba = sigmoid(m / (T sqrt(1 + lambda v)))`` (``v = 0`` and ``lambda``
unused outside the GP heads), which :mod:`probrank.nn.calibration` tunes on validation data.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Protocol

import torch
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DiagLinearOperator
from torch import Tensor, nn

from probrank._options import parse_enum
from probrank.exceptions import InputDataError
from probrank.nn.losses import LossKind, check_focal_gamma, make_loss
from probrank.nn.mc_dropout import dropout_masks, forward_with_masks
from probrank.nn.mvn import low_rank_mvn, sample_mvn
from probrank.nn.rff_gp import MomentumForm, RFFGaussianProcess
from probrank.nn.spectral import spectral_normalize
from probrank.nn.training import HeadTrainer, train_head

EpochCallback = Callable[[int], None]
"""Called with the number of epochs done (1-based), the head in evaluation mode."""

POINT_MASS_VARIANCE = 1e-6
"""Variance on the diagonal of the deterministic head's posterior (a near point mass): the
smallest variance GPyTorch keeps in float32 (``gpytorch.settings.min_variance``), so that
samplers can factorise the covariance and ``.variance`` does not warn."""

_PROBABILITY_EPS = 1e-7

__all__ = [
    "POINT_MASS_VARIANCE",
    "DeepEnsembleHead",
    "FitSettings",
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

    def fit(
        self,
        features: Tensor,
        labels: Tensor,
        options: FitSettings = ...,
        on_epoch_end: EpochCallback | None = ...,
    ) -> list[float]: ...

    def finalize(self, features: Tensor, batch_size: int = ...) -> None: ...

    def predict_proba(self, features: Tensor) -> Tensor: ...

    def logit_predictive(self, features: Tensor) -> tuple[Tensor, Tensor]: ...

    def posterior(self, features: Tensor) -> MultivariateNormal: ...

    def parameters(self, recurse: bool = True) -> Any: ...


@dataclass(frozen=True)
class FitSettings:
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
        self.temperature = 1.0
        """Post-hoc temperature ``T`` of the logits (1: none)."""

    def forward(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` logits."""
        return self.out(self.body(features)).squeeze(-1)

    def trainer(self, features: Tensor, labels: Tensor, options: FitSettings) -> HeadTrainer:
        """A :class:`HeadTrainer` of this head (one epoch per ``run_epoch``)."""
        return HeadTrainer(
            self,
            features,
            labels,
            self.loss,
            batch_size=options.batch_size,
            lr=options.lr,
            weight_decay=options.weight_decay,
            seed=options.seed,
        )

    def fit(
        self,
        features: Tensor,
        labels: Tensor,
        options: FitSettings = FitSettings(),
        on_epoch_end: EpochCallback | None = None,
    ) -> list[float]:
        """Train on `n x d` features and `n` labels; returns the loss per epoch.

        ``on_epoch_end(epochs_done)`` is called after every epoch (e.g. to evaluate checkpoints).
        """
        return train_head(
            self,
            features,
            labels,
            self.loss,
            epochs=options.epochs,
            batch_size=options.batch_size,
            lr=options.lr,
            weight_decay=options.weight_decay,
            on_epoch_end=on_epoch_end,
            seed=options.seed,
        )

    def finalize(self, features: Tensor, batch_size: int = 1024) -> None:
        """Complete the posterior after training (nothing to do for this head)."""

    @torch.no_grad()
    def logit_predictive(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """`...` logits and `...` zeros (no predictive variance), before the temperature."""
        self.eval()
        logits = self(features)
        return logits, torch.zeros_like(logits)

    @torch.no_grad()
    def predict_proba(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` P(relevant) ``sigmoid(logit / T)``."""
        self.eval()
        return torch.sigmoid(self(features) / self.temperature)

    @torch.no_grad()
    def posterior(self, features: Tensor) -> MultivariateNormal:
        """Near point mass at the logits / ``T``: diagonal covariance ``POINT_MASS_VARIANCE``."""
        self.eval()
        mean = self(features) / self.temperature
        return MultivariateNormal(
            mean, DiagLinearOperator(torch.full_like(mean, POINT_MASS_VARIANCE))
        )


def _logit_of_mean(probabilities: Tensor) -> Tensor:
    p = probabilities.clamp(_PROBABILITY_EPS, 1 - _PROBABILITY_EPS)
    return torch.log(p) - torch.log1p(-p)


class MCDropoutHead(MLPHead):
    """MC dropout: ``num_samples`` thinned networks (dropout on at prediction time).

    Each pass is a whole-function draw: its dropout masks are drawn once (from
    ``prediction_seed``) and shared by every input row (:mod:`probrank.nn.mc_dropout`), so the
    passes' covariance over candidates is that of function draws (two identical rows have
    covariance equal to their variance).

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
        self.in_features = int(in_features)
        self.num_samples = num_samples
        self.prediction_seed = prediction_seed

    @torch.no_grad()
    def sample_logits(self, features: Tensor) -> Tensor:
        """`T x ...` logits of ``T`` thinned networks (masks seeded by ``prediction_seed``,
        the same for every row of ``features``)."""
        self.eval()
        modules = [*self.body, self.out]
        generator = torch.Generator().manual_seed(self.prediction_seed)
        masks = dropout_masks(modules, self.in_features, self.num_samples, generator)
        return forward_with_masks(modules, features, masks).squeeze(-1)

    def logit_predictive(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """`...` logit of the mean over passes of the sigmoid, and `...` zeros."""
        logits = _logit_of_mean(torch.sigmoid(self.sample_logits(features)).mean(0))
        return logits, torch.zeros_like(logits)

    def predict_proba(self, features: Tensor) -> Tensor:
        """Mean over passes of the sigmoid (with ``T != 1``: its logit divided by ``T``)."""
        mean = torch.sigmoid(self.sample_logits(features)).mean(0)
        if self.temperature == 1.0:
            return mean
        return torch.sigmoid(_logit_of_mean(mean) / self.temperature)

    def posterior(self, features: Tensor) -> MultivariateNormal:
        """Sample mean and covariance of the passes' logits / ``T``."""
        return sample_mvn(self.sample_logits(features) / self.temperature)


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
        self.temperature = 1.0
        """Post-hoc temperature ``T`` (1: none)."""

    def forward(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` mean logit of the members."""
        return self.sample_logits(features).mean(0)

    def fit(
        self,
        features: Tensor,
        labels: Tensor,
        options: FitSettings = FitSettings(),
        on_epoch_end: EpochCallback | None = None,
    ) -> list[float]:
        """Train member ``m`` with seed ``options.seed + m``; returns the members' mean loss.

        The members are trained in lockstep, one epoch each at a time (each with its own random
        streams, so the result equals training them one after the other), and
        ``on_epoch_end(epochs_done)`` sees the whole ensemble after every epoch.
        """
        trainers = [
            member.trainer(features, labels, replace(options, seed=options.seed + m))
            for m, member in enumerate(self.members)
        ]
        history = []
        for epoch in range(options.epochs):
            losses = [trainer.run_epoch() for trainer in trainers]
            history.append(sum(losses) / len(losses))
            if on_epoch_end is not None:
                self.eval()
                on_epoch_end(epoch + 1)
        self.eval()
        return history

    def finalize(self, features: Tensor, batch_size: int = 1024) -> None:
        """Complete the posterior after training (nothing to do for this head)."""

    def sample_logits(self, features: Tensor) -> Tensor:
        """`M x ...` logits of the members."""
        return torch.stack([member(features) for member in self.members])

    @torch.no_grad()
    def logit_predictive(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """`...` logit of the members' mean probability, and `...` zeros."""
        self.eval()
        logits = _logit_of_mean(torch.sigmoid(self.sample_logits(features)).mean(0))
        return logits, torch.zeros_like(logits)

    @torch.no_grad()
    def predict_proba(self, features: Tensor) -> Tensor:
        """Mean of the members' probabilities (with ``T != 1``: its logit divided by ``T``)."""
        self.eval()
        mean = torch.sigmoid(self.sample_logits(features)).mean(0)
        if self.temperature == 1.0:
            return mean
        return torch.sigmoid(_logit_of_mean(mean) / self.temperature)

    @torch.no_grad()
    def posterior(self, features: Tensor) -> MultivariateNormal:
        """Sample mean and covariance of the members' logits / ``T``."""
        self.eval()
        return sample_mvn(self.sample_logits(features) / self.temperature)


class PrecisionUpdate(str, Enum):
    """How the Laplace precision of the GP layer is computed."""

    EXACT = "exact"
    """One final pass over the training data after training."""
    MOMENTUM = "momentum"
    """Minibatch momentum update after every training step (SNGP eq. 5; see
    :class:`probrank.nn.rff_gp.MomentumForm`), features taken in evaluation mode."""


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
        momentum_form: ``"corrected"`` (bias-corrected, scaled to the data size) or ``"paper"``
            (eq. 5 verbatim, from the prior); see :class:`probrank.nn.rff_gp.MomentumForm`.
        loss: ``"bce"`` (SNGP) or ``"focal"`` (GPF).
        gamma: Focal-loss gamma (``>= 1``; used by ``loss="focal"`` only).
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
        momentum_form: str | MomentumForm = MomentumForm.CORRECTED,
        loss: str | LossKind = LossKind.BCE,
        gamma: float = 2.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.precision_update = parse_enum(PrecisionUpdate, precision_update, "precision_update")
        self.momentum_form = parse_enum(MomentumForm, momentum_form, "momentum_form")
        if not 0 <= momentum < 1:
            raise InputDataError(f"momentum must be in [0, 1), got {momentum}")
        if not (math.isfinite(mean_field_factor) and mean_field_factor >= 0):
            raise InputDataError(f"mean_field_factor must be >= 0, got {mean_field_factor}")
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
        self.temperature = 1.0
        """Post-hoc temperature ``T`` (1: none)."""

    @property
    def mean_field_factor(self) -> float:
        """``lambda`` of ``sigmoid(m / (T sqrt(1 + lambda v)))``."""
        return float(self.gp.mean_field_factor)

    @mean_field_factor.setter
    def mean_field_factor(self, value: float) -> None:
        if not (math.isfinite(value) and value >= 0):
            raise InputDataError(f"mean_field_factor must be >= 0, got {value}")
        self.gp.mean_field_factor = float(value)

    def forward(self, features: Tensor) -> Tensor:
        """`... x d` -> `...` MAP logits."""
        return self.gp(self.body(features))

    def fit(
        self,
        features: Tensor,
        labels: Tensor,
        options: FitSettings = FitSettings(),
        on_epoch_end: EpochCallback | None = None,
    ) -> list[float]:
        """MAP training (loss + prior penalty / n), then the Laplace precision.

        With ``on_epoch_end``, call :meth:`finalize` inside it before using the posterior of a
        checkpoint (the exact precision is otherwise only computed after the last epoch).
        """
        n = features.shape[0]
        output = self.gp.output
        momentum_mode = self.precision_update is PrecisionUpdate.MOMENTUM

        def start(epoch: int) -> None:
            if epoch == 0:
                output.reset_precision()

        def update(x: Tensor) -> None:
            # features of the current weights without dropout and without a power-iteration
            # step (evaluation mode), as the exact pass would see them
            self.body.eval()
            with torch.no_grad():
                phi = self.gp.phi(self.body(x))
            self.body.train()
            output.momentum_update(phi, self.momentum, n, self.momentum_form)

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
            on_epoch_end=on_epoch_end,
            seed=options.seed,
        )
        self.finalize(features, options.batch_size)
        return history

    def finalize(self, features: Tensor, batch_size: int = 1024) -> None:
        """Exact mode: the Laplace precision from one pass over `n x d` training features;
        momentum mode: nothing (the running precision is already the posterior's)."""
        if self.precision_update is PrecisionUpdate.EXACT:
            self.compute_precision(features, batch_size)

    @torch.no_grad()
    def compute_precision(self, features: Tensor, batch_size: int = 1024) -> None:
        """Exact Laplace precision from one pass over `n x d` training features."""
        was_training = self.training
        self.eval()
        self.gp.output.reset_precision()
        for start in range(0, features.shape[0], batch_size):
            self.gp.output.accumulate_precision(self.phi(features[start : start + batch_size]))
        self.train(was_training)

    def phi(self, features: Tensor) -> Tensor:
        """`... x d` -> `... x L` random features of the hidden representation."""
        return self.gp.phi(self.body(features))

    @torch.no_grad()
    def predictive(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """Predictive mean and variance of the logits, each `...`."""
        self.eval()
        return self.gp.output.predictive(self.phi(features))

    def logit_predictive(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """Same as :meth:`predictive` (before the temperature)."""
        return self.predictive(features)

    def predict_proba(self, features: Tensor) -> Tensor:
        """`...` mean-field probabilities ``sigmoid(m / (T sqrt(1 + lambda v)))``."""
        mean, variance = self.predictive(features)
        return torch.sigmoid(
            mean / (self.temperature * torch.sqrt(1.0 + self.mean_field_factor * variance))
        )

    @torch.no_grad()
    def posterior(self, features: Tensor) -> MultivariateNormal:
        """`batch_shape x q x d` -> MVN of the logits / ``T`` with covariance root
        ``Phi L^{-T} / T`` (`q x L`, never the `q x q` matrix)."""
        self.eval()
        phi = self.phi(features)
        output = self.gp.output
        return low_rank_mvn(
            output(phi) / self.temperature, output.covariance_root(phi) / self.temperature
        )


class GPFHead(SNGPHead):
    """GPF: an :class:`SNGPHead` trained with focal loss (``gamma >= 1``, default 2).

    Raises:
        InputDataError: ``gamma < 1`` (the GPF paper's focal loss; use SNGP for cross-entropy).
    """

    def __init__(self, in_features: int, *, gamma: float = 2.0, **kwargs: Any) -> None:
        kwargs.pop("loss", None)
        super().__init__(in_features, loss=LossKind.FOCAL, gamma=check_focal_gamma(gamma), **kwargs)


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
