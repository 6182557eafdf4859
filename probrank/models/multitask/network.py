"""Multi-task answer filtering and re-ranking (Pentagon at MEDIQA 2019) as a Pyro model.

One latent utility per answer, ``u = BayesianLinear(tanh(W x + c))``, feeds two likelihoods:

* filtering: ``label ~ Bernoulli(sigmoid(a u + b))`` (``a = exp(log_a) > 0`` keeps "higher
  utility, more likely correct");
* ranking: for each pair (i, j) of answers to one question where i has the higher reference
  score, ``1 ~ Bernoulli(sigmoid(u_i - u_j))`` (Bradley-Terry).

The joint objective weighs them like the paper's joint loss, ``(1 - lambda) filtering +
lambda ranking``, with ``lambda`` favouring ranking; here the weights scale the two
log-likelihoods (``poutine.scale``), so the posterior is a tempered one. The shared hidden
layer and (a, b) are point estimates; the output layer has a N(0, s^2) prior and a mean-field
Normal guide, fitted by SVI (:func:`probrank.inference.fit_svi`). With ``skip=True`` the
output layer reads the input features beside the hidden units (a wide-and-deep utility,
``u = w_h . tanh(W x + c) + w_x . x + b0``), so a linear signal such as CHiQA's rank reaches
the utility without passing through the bottleneck. A deterministic twin has the same
architecture with an ordinary output layer, trained on the same loss by Adam.

Prediction: P(correct) is the posterior mean of ``sigmoid(a u + b)`` over draws of the output
layer; answers are ranked by the posterior mean utility.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.nn import PyroModule
from torch import Tensor, nn

from probrank.exceptions import InputDataError
from probrank.inference.svi import fit_svi
from probrank.likelihoods.relevance import bradley_terry
from probrank.nn.bayesian_linear import BayesianLinear

__all__ = ["MultiTaskData", "MultiTaskNet", "fit_multitask", "predict_multitask"]


@dataclass(frozen=True)
class MultiTaskData:
    """Answers of many questions as tensors.

    Attributes:
        features: `n x d` answer features.
        labels: `n` 0/1 correctness labels.
        pairs: `m x 2` indices (better, worse) of same-question answer pairs ordered by the
            reference score (ties left out).
    """

    features: Tensor
    labels: Tensor
    pairs: Tensor

    def __post_init__(self) -> None:
        n = self.features.shape[0]
        if self.features.dim() != 2 or self.labels.shape != (n,):
            raise InputDataError(
                f"features must be `n x d` and labels `n`, got {tuple(self.features.shape)}, "
                f"{tuple(self.labels.shape)}"
            )
        if self.pairs.numel() and (self.pairs.dim() != 2 or self.pairs.shape[1] != 2):
            raise InputDataError(f"pairs must be `m x 2`, got {tuple(self.pairs.shape)}")
        if self.pairs.numel() and (self.pairs.min() < 0 or self.pairs.max() >= n):
            raise InputDataError("pair indices out of range")

    @staticmethod
    def pairs_from_grades(groups: list[list[int]], grades: list[int]) -> Tensor:
        """`m x 2` (better, worse) index pairs within each group of answer indices."""
        pairs = [
            (i, j) if grades[i] > grades[j] else (j, i)
            for group in groups
            for a, i in enumerate(group)
            for j in group[a + 1 :]
            if grades[i] != grades[j]
        ]
        return torch.tensor(pairs, dtype=torch.long).reshape(-1, 2)


class MultiTaskNet(PyroModule):
    """Shared hidden layer, then a Bayesian (or ordinary) output layer giving the utility.

    Args:
        in_features: Feature width ``d``.
        hidden: Hidden width.
        bayesian: Bayesian output layer (N(0, 1) priors) or a deterministic one.
        ranking_weight: lambda in ``(1 - lambda) filtering + lambda ranking``.
        dropout: Dropout on the hidden layer while training.
        skip: The output layer also reads the input features (wide and deep).
        prior_scale: Standard deviation ``s`` of the output layer's Normal prior.
        seed: Seed of the initial weights.
    """

    def __init__(
        self,
        in_features: int,
        hidden: int = 64,
        *,
        bayesian: bool = True,
        ranking_weight: float = 0.7,
        dropout: float = 0.1,
        skip: bool = False,
        prior_scale: float = 1.0,
        seed: int = 0,
    ):
        super().__init__()
        if not 0.0 <= ranking_weight <= 1.0:
            raise InputDataError(f"ranking_weight must lie in [0, 1], got {ranking_weight}")
        if in_features < 1 or hidden < 1:
            raise InputDataError(
                f"in_features and hidden must be positive, got {in_features}, {hidden}"
            )
        if not prior_scale > 0:
            raise InputDataError(f"prior_scale must be positive, got {prior_scale}")
        generator = torch.Generator().manual_seed(seed)
        bound = in_features**-0.5
        self.hidden_weight = nn.Parameter(
            (torch.rand(hidden, in_features, generator=generator) * 2 - 1) * bound
        )
        self.hidden_bias = nn.Parameter(torch.zeros(hidden))
        self.dropout = nn.Dropout(dropout)
        self.bayesian = bayesian
        self.skip = skip
        width = hidden + in_features if skip else hidden
        prior = dist.Normal(0.0, prior_scale)
        self.output = (
            BayesianLinear(width, 1, prior, prior, estimator="flipout", seed=seed)
            if bayesian
            else None
        )
        self.out_weight = nn.Parameter(
            (torch.rand(1, width, generator=generator) * 2 - 1) * width**-0.5
        )
        self.out_bias = nn.Parameter(torch.zeros(1))
        self.log_a = nn.Parameter(torch.zeros(()))
        self.b = nn.Parameter(torch.zeros(()))
        self.ranking_weight = ranking_weight

    def features_to_hidden(self, features: Tensor) -> Tensor:
        """`n x d` features -> `n x width` inputs of the output layer (no dropout): the hidden
        activations, followed by the features themselves when ``skip``."""
        h = torch.tanh(nn.functional.linear(features, self.hidden_weight, self.hidden_bias))
        return torch.cat([h, features], dim=-1) if self.skip else h

    def utility(self, features: Tensor) -> Tensor:
        """`n x d` features -> `n` utilities (one draw of the output layer if Bayesian)."""
        h = self.dropout(self.features_to_hidden(features))
        if self.output is not None:
            return self.output(h).squeeze(-1)
        return nn.functional.linear(h, self.out_weight, self.out_bias).squeeze(-1)

    def filter_logits(self, utility: Tensor) -> Tensor:
        """`...` utilities -> logits of P(correct)."""
        return self.log_a.exp() * utility + self.b

    def forward(self, features: Tensor, labels: Tensor, pairs: Tensor) -> Tensor:
        """The Pyro model: both likelihoods, weighted (returns the utilities)."""
        u = self.utility(features)
        n, m = labels.shape[0], pairs.shape[0]
        with poutine.scale(scale=1.0 - self.ranking_weight), pyro.plate("answers", n):
            pyro.sample("correct", dist.Bernoulli(logits=self.filter_logits(u)), obs=labels)
        if m:
            diff = u[pairs[:, 0]] - u[pairs[:, 1]]
            with poutine.scale(scale=self.ranking_weight), pyro.plate("pairs", m):
                pyro.sample("prefer", bradley_terry()(diff), obs=torch.ones_like(diff))
        return u

    def guide(self, features: Tensor, labels: Tensor, pairs: Tensor) -> None:
        """Mean-field guide of the Bayesian output layer (no latent sites otherwise)."""
        if self.output is not None:
            self.output.guide()


def _loss_of(net: MultiTaskNet, data: MultiTaskData) -> Tensor:
    """Negative weighted log-likelihood at the posterior means (validation metric)."""
    with torch.no_grad(), poutine.block():
        net.eval()
        u = _mean_utility(net, data.features)
        net.train()
        filt = torch.nn.functional.binary_cross_entropy_with_logits(
            net.filter_logits(u), data.labels, reduction="mean"
        )
        rank = (
            torch.nn.functional.softplus(-(u[data.pairs[:, 0]] - u[data.pairs[:, 1]])).mean()
            if data.pairs.numel()
            else u.new_zeros(())
        )
        return (1 - net.ranking_weight) * filt + net.ranking_weight * rank


def _mean_utility(net: MultiTaskNet, features: Tensor) -> Tensor:
    h = net.features_to_hidden(features)
    if net.output is not None:
        loc, bias = cast(Tensor, net.output.weight_loc), cast(Tensor, net.output.bias_loc)
        return (h @ loc.T + bias).squeeze(-1)
    return nn.functional.linear(h, net.out_weight, net.out_bias).squeeze(-1)


def _adam_args(lr: float, weight_decay: float) -> Callable[[str], dict[str, float]]:
    """Adam's arguments per parameter: the L2 penalty only on point-estimated weights (the
    variational parameters of the Bayesian layer are left to the ELBO)."""

    def args(name: str) -> dict[str, float]:
        decay = weight_decay if name.split(".")[-1] in ("hidden_weight", "out_weight") else 0.0
        return {"lr": lr, "weight_decay": decay}

    return args


def fit_multitask(
    net: MultiTaskNet,
    train: MultiTaskData,
    validation: MultiTaskData,
    *,
    lr: float = 3e-3,
    weight_decay: float = 1e-4,
    max_epochs: int = 300,
    patience: int = 20,
    seed: int = 0,
    progress: bool = False,
) -> int:
    """Fit by SVI (Bayesian) or maximum likelihood (deterministic) with early stopping on the
    validation loss; the best epoch's parameters are kept.

    Args:
        net: The network (its parameters are updated in place).
        train: Training answers and pairs.
        validation: Validation answers and pairs (early stopping on their weighted loss).
        lr: Adam's learning rate.
        weight_decay: Adam's L2 penalty on the point-estimated weights (hidden layer, and the
            deterministic output layer).
        max_epochs: Full-batch steps at most.
        patience: Steps without a better validation loss before stopping.
        seed: Seed of dropout and of the variational draws.
        progress: Show a progress bar.

    Returns:
        The best epoch.
    """
    x, y, p = train.features, train.labels.to(train.features.dtype), train.pairs
    val = MultiTaskData(
        validation.features, validation.labels.to(validation.features.dtype), validation.pairs
    )
    result = fit_svi(
        net,
        net.guide,
        lambda generator: [(x, y, p)],
        optimizer=pyro.optim.Adam(_adam_args(lr, weight_decay)),  # type: ignore[attr-defined]
        loss=pyro.infer.TraceMeanField_ELBO() if net.bayesian else pyro.infer.Trace_ELBO(),
        max_epochs=max_epochs,
        patience=patience,
        metric=lambda: float(_loss_of(net, val)),
        seed=seed,
        progress=progress,
        description="multitask",
    )
    best = result.best_epoch
    return best if isinstance(best, int) else best[0]


@torch.no_grad()
def predict_multitask(
    net: MultiTaskNet, features: Tensor, *, num_samples: int = 200, seed: int = 0
) -> tuple[Tensor, Tensor, Tensor]:
    """Posterior predictive of one or more questions' answers.

    Args:
        net: A fitted network.
        features: `n x d` answer features.
        num_samples: Draws of the output layer (1 for a deterministic net).
        seed: Seed of the draws.

    Returns:
        ``(probability, utility_mean, utility_std)``, each `n`: posterior mean P(correct),
        posterior mean and standard deviation of the utility.
    """
    net.eval()
    h = net.features_to_hidden(features)
    out = net.output
    if out is not None:
        draws = out.predictive(h, num_samples, seed=seed).squeeze(-1)  # num_samples x n
    else:
        draws = nn.functional.linear(h, net.out_weight, net.out_bias).squeeze(-1).unsqueeze(0)
    net.train()
    probs = torch.sigmoid(net.filter_logits(draws)).mean(0)
    return probs, draws.mean(0), draws.std(0) if draws.shape[0] > 1 else torch.zeros_like(probs)
