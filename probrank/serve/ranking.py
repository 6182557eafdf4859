"""Rankings of a question's candidates under a posterior: means, 90% credible intervals and
the probability that each candidate is the best (:func:`best_probabilities`)."""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import functools
from dataclasses import dataclass

import numpy as np
import torch
from gpytorch.distributions import MultivariateNormal

__all__ = ["Ranking", "best_probabilities"]

_Z90 = 1.6448536269514722  # standard normal 95% quantile: a central 90% interval


@functools.lru_cache(maxsize=64)
def _noise(draws: int, n: int) -> np.ndarray:
    """The standard normal `draws x n` matrix of :func:`best_probabilities` (seed 0), made once
    per size (read-only)."""
    noise = np.random.default_rng(0).standard_normal((draws, n))
    noise.setflags(write=False)
    return noise


def best_probabilities(posterior: MultivariateNormal, *, draws: int = 2000) -> list[float]:
    """Monte Carlo probability that each candidate has the highest utility.

    The joint draws are ``mean + L z`` with ``z`` the fixed standard normal draws of seed 0
    and ``L`` the Cholesky factor of the covariance (its symmetric square root, from an
    eigendecomposition, when the covariance is only positive semi-definite). It is computed
    once per judgement, for the confidence the judging page shows.

    Args:
        posterior: Joint posterior over `n` candidates.
        draws: Joint draws (seeded: the same posterior gives the same numbers).

    Returns:
        `n` probabilities summing to 1.
    """
    mean = posterior.mean.detach().to(torch.float64).reshape(-1).cpu().numpy()
    covariance = posterior.covariance_matrix.detach().to(torch.float64).cpu().numpy()
    covariance = (covariance + covariance.T) / 2
    try:
        root = np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:  # singular (e.g. sample-based): a PSD square root
        values, vectors = np.linalg.eigh(covariance)
        root = vectors * np.sqrt(np.clip(values, 0.0, None))
    utilities = _noise(draws, mean.shape[0]) @ root.T
    utilities += mean
    counts = np.bincount(utilities.argmax(axis=1), minlength=mean.shape[0])
    return [float(c) / draws for c in counts]


@dataclass(frozen=True)
class Ranking:
    """A question's candidates under a posterior (lists indexed by candidate).

    Attributes:
        qid: The question.
        annotator: Whose session, or None for all annotators' preferences together.
        judgements: Preferences the posterior has learnt.
        order: Candidate indices by posterior mean, best first.
        mean: Posterior mean utilities.
        lower: Lower ends of the central 90% credible intervals.
        upper: Upper ends.
        best: Probability that each candidate is the best.
    """

    qid: str
    annotator: str | None
    judgements: int
    order: list[int]
    mean: list[float]
    lower: list[float]
    upper: list[float]
    best: list[float]


def _ranking(
    posterior: MultivariateNormal, qid: str, annotator: str | None, judgements: int
) -> Ranking:
    mean = posterior.mean.detach().to(torch.float64).reshape(-1)
    sd = posterior.variance.detach().to(torch.float64).reshape(-1).clamp_min(0.0).sqrt()
    order = torch.sort(mean, descending=True, stable=True).indices.tolist()
    return Ranking(
        qid=qid,
        annotator=annotator,
        judgements=judgements,
        order=[int(i) for i in order],
        mean=mean.tolist(),
        lower=(mean - _Z90 * sd).tolist(),
        upper=(mean + _Z90 * sd).tolist(),
        best=best_probabilities(posterior),
    )
