"""SWAG posterior over one question's candidates: Gaussian draws of the last layers' weights.

The warm start collects a :class:`~probrank.inference.swag.SWAGPosterior` over the last
``layers`` linear layers of the Siamese network (diagonal plus low-rank covariance from ``K``
snapshots of SGD). Here ``S`` deviations ``theta_s - theta_SWA`` are drawn once (seeded) and the
posterior over the candidates is the sample mean and covariance of the network with its last
layers at ``theta + (theta_s - theta_SWA)``, ``theta`` the current last-layer weights (the SWA
mean before any judgement).

After a judgement the whole network is updated by the
:class:`~probrank.posteriors.neural.IncrementalUpdate` (SGD with momentum from the current
weights); the SWAG deviations keep their shape and move with the weights. The uncertainty
therefore does not shrink with judgements (the snapshots come from the warm start only); that is
an approximation, written down in the model card.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import torch
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.inference.swag import SWAGPosterior, assign_vector, parameter_vector
from probrank.nn.siamese import SiameseUtilityNet
from probrank.posteriors.candidate import jittered_sample_mvn
from probrank.posteriors.neural import CandidateSetPosterior, HeadState, IncrementalUpdate

__all__ = ["SWAGUtilityPosterior", "swag_parameters"]

_DEFAULT_UPDATE = IncrementalUpdate()


def swag_parameters(net: SiameseUtilityNet, layers: int) -> list[Tensor]:
    """The parameters SWAG covers: weight and bias of the last ``layers`` linear layers."""
    params: list[Tensor] = []
    for linear in net.last_layers(layers):
        params += [linear.weight, linear.bias]
    return params


class SWAGUtilityPosterior(CandidateSetPosterior):
    """SWAG over the last layers of the Siamese network.

    Args:
        net: The warm-start network (copied; its last layers are set to the SWA mean).
        swag: The SWAG Gaussian over :func:`swag_parameters` of ``net`` with ``layers``.
        features: `n x d` candidate features.
        layers: How many last linear layers SWAG covers.
        num_samples: Weight draws ``S >= 2``.
        sample_seed: Seed of the draws (fixed: the posterior is deterministic in the weights).
        update: The incremental update after each judgement.
        jitter: Diagonal added to the sample covariance.
    """

    def __init__(
        self,
        net: SiameseUtilityNet,
        swag: SWAGPosterior,
        features: Tensor,
        *,
        layers: int = 2,
        num_samples: int = 20,
        sample_seed: int = 0,
        update: IncrementalUpdate = _DEFAULT_UPDATE,
        jitter: float = 1e-6,
    ) -> None:
        super().__init__(features, jitter=jitter)
        if num_samples < 2:
            raise InputDataError(f"num_samples must be at least 2, got {num_samples}")
        trained = update.trained_layers(net)
        self.layers = int(layers)
        self.state = HeadState(net, self.features, max(self.layers, trained), trained)
        self.net = self.state.net
        params = swag_parameters(self.net, self.layers)
        size = sum(p.numel() for p in params)
        if swag.mean.shape != (size,):
            raise InputDataError(
                f"the SWAG posterior covers {swag.mean.shape[0]} weights, the last {layers} "
                f"layers of the network hold {size}"
            )
        assign_vector(swag.mean, params)
        self.state.anchor = {k: v.detach().clone() for k, v in self.state.head.named_parameters()}
        generator = torch.Generator().manual_seed(int(sample_seed))
        self.deviations = swag.sample(int(num_samples), generator) - swag.mean  # S x P
        self.num_samples = int(num_samples)
        self.update_rule = update

    def _sampled_weights(self) -> list[tuple[Tensor, Tensor]]:
        """Per layer, `S x out x in` weights and `S x out` biases of the draws."""
        params = swag_parameters(self.net, self.layers)
        draws = parameter_vector(params) + self.deviations
        weights, start = [], 0
        for weight, bias in zip(params[0::2], params[1::2], strict=True):
            w = draws[:, start : start + weight.numel()].reshape(-1, *weight.shape)
            start += weight.numel()
            b = draws[:, start : start + bias.numel()]
            start += bias.numel()
            weights.append((w, b))
        return weights

    def _draws(self, hidden: Tensor) -> Tensor:
        flat = hidden.reshape(-1, hidden.shape[-1])
        with torch.no_grad():
            samples = self.state.head.forward_with_weights(flat, self._sampled_weights())
        return samples.reshape(self.num_samples, *hidden.shape[:-1])

    def posterior_at(self, X: Tensor) -> MultivariateNormal:
        """Sample moments of the ``S`` weight draws at `batch_shape x q x d` features."""
        x = X if X is self.features else self._check_x(X, self.net.in_features)
        return jittered_sample_mvn(self._draws(self.state.hidden_at(x)), self.jitter)

    def _extend(self, rows: Tensor) -> None:
        super()._extend(rows)
        self.state.extend(self.features)

    def _condition(self, new: list[tuple[int, int]]) -> None:
        self.update_rule.apply(
            self.state.head,
            self.state.anchor,
            self.state.hidden,
            self._comparisons,
            utilities=lambda head, hidden: self._draws(hidden).mean(0),
        )
