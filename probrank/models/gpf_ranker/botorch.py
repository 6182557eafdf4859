"""The GPF ranker's head as a BoTorch ``Model`` that conditions on judgements and labels.

:func:`head_model` wraps a fitted relevance head (any of :mod:`probrank.nn.heads`) in a
:class:`~probrank.posteriors.head.HeadLaplacePosterior` and returns its BoTorch model
(:class:`~probrank.posteriors.preference.PreferenceUtilityModel`): ``posterior(X)`` is the
head's joint posterior of the logits, and ``condition_on_observations(X, Y)`` /
``fantasize(X, pairwise_sampler)`` update it in closed form (a Laplace solve in as many
dimensions as there are observations; the head is never refitted or modified).
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import torch
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.nn.heads import RelevanceHead
from probrank.posteriors.head import HeadLaplacePosterior
from probrank.posteriors.preference import PreferenceUtilityModel

__all__ = ["head_model"]


def head_model(
    head: RelevanceHead,
    width: int,
    features: Tensor | None = None,
    *,
    scale: float = 1.0,
    noise_variance: float = 0.0,
    jitter: float = 0.0,
) -> PreferenceUtilityModel:
    """A BoTorch model over a fitted head's logits that conditions on observations.

    Args:
        head: The fitted head (float32 parameters; inputs are cast to them).
        width: The feature width ``d``.
        features: `n x d` candidate rows kept as the model's ``datapoints`` (default none:
            the model scores any rows and adds the rows it is conditioned on).
        scale: Judgement likelihood scale ``s`` (Bradley-Terry on the logits).
        noise_variance: Judgement noise added when BoTorch asks for observation noise.
        jitter: Added to the diagonal of returned covariances.

    Returns:
        A :class:`~probrank.posteriors.preference.PreferenceUtilityModel` (float32 or float64
        ``X``; answers in the dtype of ``X``).
    """
    dtype = next(iter(head.parameters())).dtype

    def prior(x: Tensor) -> MultivariateNormal:
        return head.posterior(x.to(dtype))

    rows = features if features is not None else torch.zeros(0, width)
    if rows.dim() != 2 or rows.shape[-1] != width:
        raise InputDataError(f"features must be n x {width}, got {tuple(rows.shape)}")
    posterior = HeadLaplacePosterior(prior, rows, scale=scale, jitter=jitter)
    return posterior.botorch_model(noise_variance=noise_variance)
