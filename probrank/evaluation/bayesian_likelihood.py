"""The models of :func:`probrank.evaluation.bayesian_compare`, as a ``str`` enum.

Its own module (no torch, no Pyro) so that the exact likelihoods load without them.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["HIERARCHICAL", "Likelihood"]


class Likelihood(str, Enum):
    """The model of the per-topic values behind :func:`~probrank.evaluation.bayesian_compare`.

    :attr:`PAIRED` and :attr:`BOOTSTRAP` have exact posteriors
    (:mod:`probrank.evaluation.bayesian_exact`); :attr:`NORMAL` and :attr:`TRUNCATED_NORMAL` are
    the hierarchical model of :mod:`probrank.evaluation.bayesian_model`, sampled with NUTS. The
    default, :attr:`PAIRED`, was chosen by simulation (``benchmarks/bayesian_compare_sim.py``):
    of the candidates run on every simulated case it alone covered the true difference 93-97%
    of the time with a bias under 0.005 on all of them.
    """

    PAIRED = "paired"
    """Multivariate normal per topic, unstructured covariance, reference prior: each pairwise
    difference has the paired t-test's posterior (exact draws, no MCMC)."""
    BOOTSTRAP = "bootstrap"
    """Rubin's Bayesian bootstrap over topics (exact draws, no MCMC)."""
    TRUNCATED_NORMAL = "truncated-normal"
    """Normal truncated to [0, 1]
    (:class:`~probrank.evaluation.bayesian_model.UnitTruncatedNormal`); for measures in [0, 1]."""
    NORMAL = "normal"
    """Unbounded normal: Carterette's linear model, and the conjugate special case (with the
    noise, the topic scale and the level fixed the posterior is Gaussian in closed form)."""


HIERARCHICAL = (Likelihood.TRUNCATED_NORMAL, Likelihood.NORMAL)
"""The likelihoods of the hierarchical model
(:func:`~probrank.evaluation.bayesian_model.comparison_model`)."""
