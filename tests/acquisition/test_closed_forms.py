"""EI (eq. 1) and EUBO closed forms against Monte Carlo and against BoTorch's own code."""

from __future__ import annotations

import math

import mpmath
import pytest
import torch
from botorch.acquisition.analytic import ExpectedImprovement, LogExpectedImprovement
from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator, RootLinearOperator

from probrank.acquisition.ei import expected_improvement
from probrank.acquisition.eubo import expected_utility_of_best_option
from probrank.acquisition.positive_part import expected_positive_part, log_expected_positive_part
from probrank.testing import FixedPosteriorModel, random_mvn

# BoTorch's legacy (q)ExpectedImprovement is used on purpose: it is the reference here
pytestmark = pytest.mark.filterwarnings("ignore:.*ExpectedImprovement has known numerical issues")

NUM_DRAWS = 1_000_000
Z_TOL = 5.0  # Monte Carlo tolerance in standard errors (two-sided failure rate ~6e-7)


def _trivariate() -> MultivariateNormal:
    mean = torch.tensor([0.3, 0.8, 0.1], dtype=torch.float64)
    sd = torch.tensor([1.0, 0.5, 1.5], dtype=torch.float64)
    corr = torch.tensor([[1.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 1.0]], dtype=torch.float64)
    return MultivariateNormal(mean, corr * sd.outer(sd))


def _draws(mvn: MultivariateNormal, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    chol = torch.linalg.cholesky(mvn.covariance_matrix)
    z = torch.randn(NUM_DRAWS, mvn.mean.shape[0], generator=gen, dtype=torch.float64)
    return mvn.mean + z @ chol.T


def _assert_mc(closed: float, samples: torch.Tensor) -> None:
    estimate = float(samples.mean())
    stderr = float(samples.std()) / math.sqrt(samples.shape[0])
    assert abs(closed - estimate) <= Z_TOL * stderr + 1e-12, (closed, estimate, stderr)


def test_expected_improvement_matches_monte_carlo_on_correlated_trivariate_normal() -> None:
    mvn = _trivariate()
    best, ei = expected_improvement(mvn)
    assert best == 1  # highest mean
    f = _draws(mvn, seed=11)
    for x in (0, 2):
        _assert_mc(float(ei[x]), (f[:, x] - f[:, best]).clamp(min=0.0))
    assert float(ei[best]) == 0.0
    # the correlation matters: ignoring it gives a clearly different value
    cov = mvn.covariance_matrix
    independent = expected_positive_part(mvn.mean[0] - mvn.mean[1], (cov[0, 0] + cov[1, 1]).sqrt())
    assert abs(float(independent) - float(ei[0])) > 0.05


def test_expected_improvement_against_a_given_incumbent() -> None:
    mvn = _trivariate()
    best, ei = expected_improvement(mvn, best=2)
    f = _draws(mvn, seed=12)
    assert best == 2
    for x in (0, 1):
        _assert_mc(float(ei[x]), (f[:, x] - f[:, 2]).clamp(min=0.0))


def test_eubo_matches_monte_carlo_bivariate_and_trivariate() -> None:
    mean = torch.tensor([0.2, -0.4], dtype=torch.float64)
    cov = torch.tensor([[1.0, 0.7], [0.7, 2.0]], dtype=torch.float64)
    bivariate = MultivariateNormal(mean, cov)
    eubo = expected_utility_of_best_option(bivariate)
    f = _draws(bivariate, seed=3)
    _assert_mc(float(eubo[0, 1]), f.max(dim=1).values)
    torch.testing.assert_close(eubo, eubo.T, rtol=0, atol=0)
    torch.testing.assert_close(torch.diagonal(eubo), mean, rtol=0, atol=0)
    trivariate = _trivariate()
    eubo = expected_utility_of_best_option(trivariate)
    f = _draws(trivariate, seed=4)
    for a, b in ((0, 1), (0, 2), (1, 2)):
        _assert_mc(float(eubo[a, b]), torch.maximum(f[:, a], f[:, b]))


@pytest.mark.parametrize("rank", [None, 3])
def test_eubo_equals_botorch_analytic_eubo_on_every_pair(rank: int | None) -> None:
    mvn = random_mvn(12, rank=rank, generator=torch.Generator().manual_seed(5))
    model = FixedPosteriorModel(mvn)
    acquisition = AnalyticExpectedUtilityOfBestOption(pref_model=model)
    pairs = torch.combinations(torch.arange(12), 2)
    with torch.no_grad():
        theirs = acquisition(pairs.to(torch.float64).unsqueeze(-1))
    ours = expected_utility_of_best_option(mvn)[pairs[:, 0], pairs[:, 1]]
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


def test_ei_equals_botorch_expected_improvement_when_the_incumbent_is_known() -> None:
    # an incumbent with zero variance and no correlation: eq. 1 reduces to BoTorch's EI with
    # best_f = the incumbent's value
    root = torch.randn(6, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    cov = root @ root.T / 6 + 0.1 * torch.eye(6, dtype=torch.float64)
    cov[0, :] = 0.0
    cov[:, 0] = 0.0
    mean = torch.tensor([2.0, 1.5, 0.3, 1.9, -1.0, 2.5], dtype=torch.float64)
    mean[5] = 1.0
    mvn = MultivariateNormal(mean, DenseLinearOperator(cov))
    best, ei = expected_improvement(mvn)
    assert best == 0
    model = FixedPosteriorModel(mvn)
    X = torch.arange(1, 6, dtype=torch.float64).view(5, 1, 1)
    with torch.no_grad():
        theirs = ExpectedImprovement(model, best_f=2.0)(X)
        log_theirs = LogExpectedImprovement(model, best_f=2.0)(X)
    torch.testing.assert_close(ei[1:], theirs, rtol=1e-10, atol=1e-14)
    sd = torch.diagonal(cov)[1:].sqrt()
    torch.testing.assert_close(
        log_expected_positive_part(mean[1:] - 2.0, sd), log_theirs, rtol=1e-9, atol=1e-12
    )


def test_log_expected_positive_part_is_accurate_into_the_far_tail() -> None:
    # BoTorch's LogExpectedImprovement is an independent, tail-stable reference ...
    u = torch.tensor([3.0, 0.0, -0.5, -1.0, -5.0, -30.0, -40.0, -300.0, -5e3, -2e4, -1e6])
    u = u.to(torch.float64)
    mean = torch.zeros(len(u) + 1, dtype=torch.float64)
    mean[1:] = u
    cov = torch.eye(len(u) + 1, dtype=torch.float64)
    model = FixedPosteriorModel(MultivariateNormal(mean, cov))
    X = torch.arange(1, len(u) + 1, dtype=torch.float64).view(-1, 1, 1)
    with torch.no_grad():
        reference = LogExpectedImprovement(model, best_f=0.0)(X)
    ones = torch.ones_like(u)
    ours = log_expected_positive_part(u, ones)
    torch.testing.assert_close(ours, reference, rtol=1e-6, atol=1e-9)
    assert torch.all(ours[1:] < ours[:-1])  # strictly decreasing: EI never ties at 0
    # ... and 50-digit arithmetic is the exact one
    mpmath.mp.dps = 50
    exact = [mpmath.npdf(v) + v * mpmath.ncdf(v) for v in u.tolist()]
    exact_log = torch.tensor([float(mpmath.log(h)) for h in exact], dtype=torch.float64)
    torch.testing.assert_close(ours, exact_log, rtol=1e-14, atol=1e-14)
    exact_value = torch.tensor([float(h) for h in exact], dtype=torch.float64)
    torch.testing.assert_close(expected_positive_part(u, ones), exact_value, rtol=1e-12, atol=0.0)


def test_zero_variance_differences_use_the_positive_part_of_the_mean() -> None:
    mu = torch.tensor([1.5, -0.5, 0.0], dtype=torch.float64)
    zero = torch.zeros(3, dtype=torch.float64)
    torch.testing.assert_close(
        expected_positive_part(mu, zero), torch.tensor([1.5, 0.0, 0.0], dtype=torch.float64)
    )
    log_value = log_expected_positive_part(mu, zero)
    assert math.isclose(float(log_value[0]), math.log(1.5)) and torch.isinf(log_value[1:]).all()


def test_low_rank_and_dense_posteriors_give_the_same_scores() -> None:
    root = torch.randn(7, 2, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    mean = torch.randn(7, generator=torch.Generator().manual_seed(10), dtype=torch.float64)
    lazy = MultivariateNormal(mean, RootLinearOperator(root))
    dense = MultivariateNormal(mean, DenseLinearOperator(root @ root.T))
    torch.testing.assert_close(
        expected_utility_of_best_option(lazy), expected_utility_of_best_option(dense)
    )
    torch.testing.assert_close(expected_improvement(lazy)[1], expected_improvement(dense)[1])
