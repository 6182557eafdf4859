"""Posterior predictive checks: correctly specified models pass, misspecified ones fail.

Posteriors are exact (conjugate Beta posteriors, a Laplace posterior of a Bradley-Terry
model), so the checks test the PPC machinery and not an inference routine.
"""

from __future__ import annotations

import numpy as np
import pyro.distributions as dist
import pytest
import torch

from probrank.diagnostics import (
    PPCResult,
    plot_ppc,
    posterior_predictive_pvalue,
    ppc_bernoulli,
    ppc_binomial,
    ppc_bradley_terry,
    predictive_check,
)
from probrank.exceptions import InputDataError
from probrank.interactive import Response, SimulatedUser


def _beta_posterior(successes: torch.Tensor, trials: torch.Tensor, draws: int) -> torch.Tensor:
    """`draws` exact draws of p under a Beta(1, 1) prior and a common success probability."""
    posterior = dist.Beta(1.0 + successes.sum(), 1.0 + (trials - successes).sum())
    return posterior.sample((draws,)).double()


def _binomial_check(overdispersed: bool, seed: int) -> PPCResult:
    torch.manual_seed(seed)
    n, lists = 50, 40
    if overdispersed:  # beta-binomial with mean 0.3 and concentration 5
        counts = dist.BetaBinomial(1.5, 3.5, total_count=n).sample((lists,))
    else:
        counts = dist.Binomial(n, probs=torch.tensor(0.3)).sample((lists,))
    p = _beta_posterior(counts, torch.full((lists,), float(n)), 400)
    return ppc_binomial(counts.double(), n, p.unsqueeze(-1).expand(-1, lists), seed=seed)


def test_binomial_dispersion_check_passes_binomial_data_and_fails_overdispersed() -> None:
    correct = [_binomial_check(False, seed) for seed in range(10)]
    wrong = [_binomial_check(True, seed) for seed in range(10)]
    # under the true model the p-value is about uniform: at alpha 0.02, two or more
    # failures in 10 would happen with probability 0.016
    assert sum(r.passed(alpha=0.02) for r in correct) >= 9
    assert 0.25 < float(np.mean([r.p_value for r in correct])) < 0.75
    assert not any(r.passed() for r in wrong)
    assert all(r.p_value < 0.01 for r in wrong)  # the data are more dispersed than predicted
    # the Pearson dispersion is about 1 under the right variance, 1 + (n - 1) / 6 = 9.2 here
    assert 0.8 < float(np.mean([np.median(r.observed) for r in correct])) < 1.2
    assert float(np.mean([np.median(r.observed) for r in wrong])) > 5


def test_bernoulli_group_dispersion_detects_between_query_variation() -> None:
    def check(heterogeneous: bool, seed: int) -> PPCResult:
        generator = torch.Generator().manual_seed(seed)
        groups = torch.arange(20).repeat_interleave(15)
        rate = (
            torch.rand(20, generator=generator) * 0.8 + 0.1
            if heterogeneous
            else torch.full((20,), 0.4)
        )
        labels = torch.bernoulli(rate[groups], generator=generator).double()
        p = _beta_posterior(labels, torch.ones_like(labels), 400)
        probs = p.unsqueeze(-1).expand(-1, labels.shape[0])
        return ppc_bernoulli(labels, probs, "group_dispersion", groups=groups, seed=seed)

    assert sum(check(False, s).passed() for s in range(10)) >= 9
    assert not any(check(True, s).passed() for s in range(10))
    with pytest.raises(InputDataError):
        ppc_bernoulli(torch.ones(3), torch.full((5, 3), 0.5), "group_dispersion")


def test_bernoulli_calibration_fails_for_overconfident_probabilities() -> None:
    generator = torch.Generator().manual_seed(5)
    true_p = torch.rand(400, generator=generator, dtype=torch.float64)
    labels = torch.bernoulli(true_p, generator=generator)
    posterior = true_p.expand(500, -1)  # a point-mass posterior at the truth
    overconfident = torch.sigmoid(4 * torch.logit(true_p)).expand(500, -1)
    assert ppc_bernoulli(labels, posterior, seed=1).passed()
    assert not ppc_bernoulli(labels, overconfident, seed=1).passed()


def _bradley_terry_laplace(
    pairs: torch.Tensor, outcomes: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Laplace posterior of Bradley-Terry utilities with a N(0, I) prior, by Newton's method."""
    rows = torch.arange(pairs.shape[0])
    d = torch.zeros(pairs.shape[0], n, dtype=torch.float64)
    d[rows, pairs[:, 0]], d[rows, pairs[:, 1]] = 1.0, -1.0
    sign = 2 * outcomes - 1
    f = torch.zeros(n, dtype=torch.float64)
    for _ in range(15):  # Newton converges in a few steps (the log posterior is concave)
        z = sign * (d @ f)
        gradient = -f + d.T @ (sign * torch.sigmoid(-z))
        hessian = torch.eye(n, dtype=torch.float64) + d.T @ (
            (torch.sigmoid(z) * torch.sigmoid(-z)).unsqueeze(-1) * d
        )
        f = f + torch.linalg.solve(hessian, gradient)
    return f, torch.linalg.inv(hessian)


def _bradley_terry_check(temperature: float, seed: int) -> PPCResult:
    generator = torch.Generator().manual_seed(seed)
    n = 8
    user = SimulatedUser(torch.linspace(-1.5, 1.5, n), temperature=temperature, seed=seed)
    pairs = torch.randint(0, n, (120, 2), generator=generator)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    outcomes = torch.tensor(
        [float(user.judge(i, j) is Response.FIRST) for i, j in pairs.tolist()],
        dtype=torch.float64,
    )
    mean, covariance = _bradley_terry_laplace(pairs, outcomes, n)
    draws = torch.distributions.MultivariateNormal(mean, covariance).sample((1000,))
    return ppc_bradley_terry(pairs, draws, outcomes, "log_likelihood", seed=seed)


def test_bradley_terry_check_passes_the_model_and_fails_a_near_deterministic_user() -> None:
    # the model assumes judgements as noisy as sigmoid(u_i - u_j) with utilities of prior
    # sd 1; a user who almost never errs (temperature 0.02) is far more consistent
    correct = [_bradley_terry_check(1.0, seed) for seed in range(8)]
    wrong = [_bradley_terry_check(0.02, seed) for seed in range(8)]
    assert sum(r.passed() for r in correct) >= 7
    assert not any(r.passed() for r in wrong)
    assert all(r.p_value > 0.975 for r in wrong)  # replicated data fit worse than observed
    upsets = ppc_bradley_terry(torch.tensor([[0, 1], [1, 0]]), torch.tensor([[1.0, 0.0]]))
    np.testing.assert_allclose(upsets.observed, [0.5])  # (0 wins over 1) agrees, (1 over 0) not


def test_statistics_and_pvalue_by_hand() -> None:
    observed = torch.tensor([2.0, 0.0, 4.0], dtype=torch.float64)
    probs = torch.tensor([[0.5, 0.5, 0.5]], dtype=torch.float64)
    result = predictive_check(observed, dist.Binomial(4, probs=probs), "dispersion")
    # (2 - 2)^2 / 1 + (0 - 2)^2 / 1 + (4 - 2)^2 / 1 = 8, mean 8 / 3
    np.testing.assert_allclose(result.observed, [8 / 3])
    zeros = predictive_check(observed, dist.Binomial(4, probs=probs), "zeros")
    np.testing.assert_allclose(zeros.observed, [1 / 3])
    assert posterior_predictive_pvalue(np.array([1.0, 1.0]), np.array([2.0, 1.0])) == 0.75
    custom = predictive_check(observed, dist.Binomial(4, probs=probs), lambda y: y.sum(-1))
    np.testing.assert_allclose(custom.observed, [6.0])
    with pytest.raises(InputDataError):
        predictive_check(torch.ones(2), dist.Binomial(4, probs=probs))
    with pytest.raises(InputDataError):
        predictive_check(observed, dist.Binomial(4, probs=probs), "no such statistic")


def test_ppc_plot_draws_both_kinds() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    discrepancy = _binomial_check(True, 0)
    free = ppc_binomial(torch.ones(4), 3, torch.full((50, 4), 0.4), "mean")
    for result in (discrepancy, free):
        ax = plot_ppc(result)
        assert f"p = {result.p_value:.3f}" in ax.get_title()
        plt.close(ax.figure)
