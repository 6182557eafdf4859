"""Exact posteriors of the Bayesian comparison of runs: no MCMC, independent draws.

Two models of the per-topic values, both treating the evaluated topics as a sample of topics
(as the paired t-test does) and reporting each system's **expected measure over that topic
population**, ``mu[s]``:

* :attr:`~probrank.evaluation.bayesian_model.Likelihood.PAIRED` (the default of
  :func:`~probrank.evaluation.bayesian_compare`): the vector of the ``S`` systems' values on
  topic ``t`` is ``y_t ~ MultivariateNormal(mu, Sigma)``, independent over topics, with an
  unstructured covariance (it pairs the systems topic by topic, as the paired test does) and
  the reference prior ``p(mu, Sigma) ∝ |Sigma|^(-S)`` (a normal-inverse-Wishart limit with
  ``kappa0 = 0``, ``nu0 = S - 2``, plus a ridge ``Psi0 = ridge^2 I``). The posterior of ``mu``
  is a multivariate t with ``T - 1`` degrees of freedom, location ``ybar`` and scale
  ``(Psi0 + sum_t (y_t - ybar)(y_t - ybar)^T) / (T (T - 1))``, so every difference
  ``mu[b] - mu[a]`` has exactly the paired t-test's posterior ``t_{T-1}(dbar, s_d^2 / T)``: its
  95% interval is the paired t-test's 95% confidence interval, its posterior mean the observed
  mean difference. The ridge (``1e-3`` on the measure's scale) only matters where two runs
  agree on every topic: their difference then gets an interval of width about
  ``1e-3 / sqrt(T)`` around 0 instead of an improper posterior.
* :attr:`~probrank.evaluation.bayesian_model.Likelihood.BOOTSTRAP`: Rubin's (1981) Bayesian
  bootstrap, a Dirichlet(1, ..., 1) posterior over the weights of the observed topics;
  ``mu[s]`` is the weighted mean of system ``s``'s values. No distributional assumption, but
  its intervals are about ``sqrt((T - 1) / T)`` times the t-test's and miss the t quantile's
  small-sample widening (under-covers at 30 topics).

Draws are antithetic for :attr:`PAIRED` (pairs ``ybar ± L z / w``), so the posterior mean of
every difference equals the observed mean difference up to rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from probrank.evaluation.bayesian_likelihood import Likelihood

__all__ = ["EXACT_SAMPLERS", "PAIRED_RIDGE", "bootstrap_draws", "paired_draws"]

PAIRED_RIDGE = 1e-3
"""Square root of the ridge ``Psi0 = PAIRED_RIDGE^2 I`` of the paired model's prior."""


def paired_draws(values: np.ndarray, num_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Independent draws of ``mu`` from the paired model's posterior (a multivariate t).

    Args:
        values: `M x S x T` per-topic values (``M`` measures, independent).
        num_draws: Number of draws (even: antithetic pairs; an odd count drops the last).
        rng: NumPy generator.

    Returns:
        `num_draws x M x S` draws of each system's expected measure.
    """
    num_measures, num_systems, num_topics = values.shape
    half = (num_draws + 1) // 2
    df = num_topics - 1
    mean = values.mean(-1)  # M x S
    centred = values - mean[..., None]
    scatter = centred @ np.swapaxes(centred, -1, -2)  # M x S x S
    scatter = scatter + PAIRED_RIDGE**2 * np.eye(num_systems)
    chol = np.linalg.cholesky(scatter / (num_topics * df))  # M x S x S
    z = rng.standard_normal((half, num_measures, num_systems))
    w = np.sqrt(rng.chisquare(df, size=(half, num_measures, 1)) / df)
    step = np.einsum("mij,nmj->nmi", chol, z) / w  # half x M x S
    both = np.stack([mean + step, mean - step], axis=1).reshape(2 * half, num_measures, -1)
    return both[:num_draws]


def bootstrap_draws(values: np.ndarray, num_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Draws of ``mu`` from the Bayesian bootstrap (Dirichlet(1, ..., 1) topic weights).

    Args:
        values: `M x S x T` per-topic values.
        num_draws: Number of draws.
        rng: NumPy generator.

    Returns:
        `num_draws x M x S` weighted means (one weight vector per draw, shared by all
        measures and systems: the topics are what is resampled).
    """
    num_topics = values.shape[-1]
    weights = rng.dirichlet(np.ones(num_topics), size=num_draws)  # n x T
    return np.einsum("nt,mst->nms", weights, values)


EXACT_SAMPLERS: dict[Likelihood, Callable[[np.ndarray, int, np.random.Generator], np.ndarray]] = {
    Likelihood.PAIRED: paired_draws,
    Likelihood.BOOTSTRAP: bootstrap_draws,
}
"""The likelihoods whose posterior is drawn exactly (no MCMC), and their samplers."""
