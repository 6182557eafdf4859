"""Likelihoods of relevance judgements: binary labels, pairwise preferences, graded labels.

Each factory returns a :data:`~probrank.likelihoods.proportion.Likelihood`: a callable of a
latent tensor `... x m` returning a Pyro distribution with batch shape `... x m`, to be used
as ``pyro.sample(name, likelihood(latent), obs=...)`` inside any Pyro model.

* :func:`bernoulli_relevance`: ``y ~ Bernoulli(sigmoid((u - bias) / temperature))`` for a
  binary relevance label of one item with latent utility ``u``.
* :func:`~probrank.likelihoods.bradley_terry`: ``1 ~ Bernoulli(sigmoid(d / temperature))`` for
  "the first item was preferred", ``d = u_first - u_second`` (logistic noise on the utilities).
* :func:`thurstone`: ``1 ~ Bernoulli(Phi(d / (sqrt(2) sigma)))`` (Thurstone case V: Gaussian
  noise of standard deviation ``sigma`` on each utility). Pyro has no probit Bernoulli; it is
  a Bernoulli with logits ``log Phi(z) - log Phi(-z)`` (``torch.special.log_ndtr``), exact
  and finite far into both tails, where ``Phi`` itself rounds to 0 or 1.
* :func:`ordinal`: graded labels ``0 .. K`` by the cumulative-logit (proportional odds)
  model, Pyro's ``OrderedLogistic`` with ``K`` increasing cutpoints:
  ``P(y <= k) = sigmoid(c_k - u)``. Cutpoints that are not finite and strictly increasing
  lie outside the model's parameter space: every ``log_prob`` is ``-inf`` there (a sampler
  rejects the point) instead of an exception, because NUTS meets such points when two
  inferred cutpoints collapse in floating point.
"""

from __future__ import annotations

import math

import pyro.distributions as dist
import torch
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.likelihoods.proportion import Likelihood

__all__ = ["bernoulli_relevance", "bradley_terry", "ordinal", "thurstone"]


def _positive(name: str, value: float) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise InputDataError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def bernoulli_relevance(temperature: float = 1.0, bias: float = 0.0) -> Likelihood:
    """Binary relevance: ``y ~ Bernoulli(logits=(u - bias) / temperature)``.

    Args:
        temperature: Noise scale ``> 0`` (larger: labels less determined by ``u``).
        bias: Utility at which relevance is a coin flip.

    Returns:
        A callable mapping utilities `... x m` to ``Bernoulli`` with batch shape `... x m`.
    """
    temperature = _positive("temperature", temperature)

    def likelihood(utility: Tensor) -> dist.TorchDistribution:
        return dist.Bernoulli(logits=(utility - bias) / temperature)

    return likelihood


def bradley_terry(temperature: float = 1.0) -> Likelihood:
    """Pairwise preference with logistic noise: ``P(first preferred) = sigmoid(d / t)``.

    Args:
        temperature: ``t > 0``.

    Returns:
        A callable mapping utility differences `... x m` (first minus second) to ``Bernoulli``
        with batch shape `... x m`; observe ones for "first preferred".
    """
    temperature = _positive("temperature", temperature)

    def likelihood(difference: Tensor) -> dist.TorchDistribution:
        return dist.Bernoulli(logits=difference / temperature)

    return likelihood


def thurstone(noise: float = 1.0) -> Likelihood:
    """Pairwise preference with Gaussian noise: ``P(first preferred) = Phi(d / (sqrt(2) s))``.

    Args:
        noise: Standard deviation ``s > 0`` of the noise on each item's utility.

    Returns:
        A callable mapping utility differences `... x m` to ``Bernoulli`` with batch shape
        `... x m`.
    """
    scale = _positive("noise", noise) * math.sqrt(2.0)

    def likelihood(difference: Tensor) -> dist.TorchDistribution:
        z = difference / scale
        # logit(Phi(z)) = log Phi(z) - log Phi(-z): finite with useful gradients in both tails
        return dist.Bernoulli(logits=torch.special.log_ndtr(z) - torch.special.log_ndtr(-z))

    return likelihood


def ordinal(cutpoints: Tensor) -> Likelihood:
    """Graded labels ``0..K`` by cumulative logits: ``P(y <= k) = sigmoid(c_k - u)``.

    The cutpoints are usually inferred (a ``pyro.sample`` site with an ordered transform, or a
    ``PyroParam`` with an ordered constraint), so their values are never an error. Where they
    are not finite and strictly increasing (e.g. two of them collapsed to the same float
    inside NUTS) the point lies outside the model's parameter space: ``log_prob`` is ``-inf``
    for every observation, so MCMC rejects the point and carries on and SVI sees an infinite
    loss. Samples there come from the limit of the model as the cutpoints approach their
    running maximum (exact for collapsed cutpoints: the squeezed categories get probability
    0; uniform for NaN cutpoints).

    Args:
        cutpoints: `K` cutpoints, strictly increasing for a valid model (a tensor; learnable
            when it requires grad).

    Returns:
        A callable mapping utilities `... x m` to a categorical distribution (Pyro's
        ``OrderedLogistic`` for valid cutpoints) with batch shape `... x m` over the
        categories ``0 .. K``.

    Raises:
        InputDataError: ``cutpoints`` is not a non-empty vector.
    """
    cutpoints = torch.as_tensor(cutpoints)
    if cutpoints.dim() != 1 or cutpoints.numel() < 1:
        raise InputDataError(f"cutpoints must be a non-empty vector, got shape {cutpoints.shape}")

    def likelihood(utility: Tensor) -> dist.TorchDistribution:
        points = cutpoints.to(utility.dtype)
        if bool(torch.isfinite(points).all()) and bool((points.diff() > 0).all()):
            return dist.OrderedLogistic(utility, points.expand(*utility.shape, points.numel()))
        return _OutsideParameterSpace(probs=_limit_probs(utility, points.detach()))

    return likelihood


def _limit_probs(utility: Tensor, points: Tensor) -> Tensor:
    """`... x m x (K + 1)` category probabilities with the cutpoints replaced by their running
    maximum (non-decreasing; a squeezed category gets probability 0); uniform where NaN."""
    cumulative = torch.sigmoid(points.cummax(-1).values - utility.detach().unsqueeze(-1))
    zeros = torch.zeros_like(cumulative[..., :1])
    probs = (torch.cat([cumulative, zeros + 1], -1) - torch.cat([zeros, cumulative], -1)).clamp(0)
    uniform = torch.full_like(probs, 1.0 / probs.shape[-1])
    return torch.where(torch.isnan(probs).any(-1, keepdim=True), uniform, probs)


class _OutsideParameterSpace(dist.Categorical):
    """A categorical whose every observation has log-probability ``-inf``: the ordinal
    likelihood at cutpoints outside the parameter space. It samples from the limit
    probabilities it was built with (:func:`_limit_probs`)."""

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        shape = torch.broadcast_shapes(value.shape, self.batch_shape)
        return torch.full(shape, float("-inf"), dtype=self.probs.dtype, device=self.probs.device)
