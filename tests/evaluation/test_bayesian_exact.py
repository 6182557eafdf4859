"""Exact posteriors of the Bayesian comparison: the paired model against the paired t-test
(scipy), the Bayesian bootstrap against its closed-form moments, identical runs, and
``fit_comparison``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from probrank.evaluation.bayesian import bayesian_compare_scores, fit_comparison
from probrank.evaluation.bayesian_exact import PAIRED_RIDGE, bootstrap_draws, paired_draws
from probrank.evaluation.bayesian_model import ComparisonPriors
from probrank.evaluation.bayesian_potential import ComparisonPotential
from probrank.exceptions import InputDataError


@pytest.fixture
def scores():
    rng = np.random.default_rng(21)
    topics = rng.uniform(0.1, 0.8, size=25)
    effects = np.array([0.0, 0.04, -0.02])
    return np.clip(effects[:, None] + topics + 0.08 * rng.standard_t(4, size=(3, 25)), 0, 1)


def test_every_pairwise_difference_has_the_paired_t_tests_posterior(scores):
    draws = paired_draws(scores[None], 40_000, np.random.default_rng(0))[:, 0, :]
    num_topics = scores.shape[1]
    for a, b in ((0, 1), (0, 2), (1, 2)):
        d = scores[b] - scores[a]
        diff = draws[:, b] - draws[:, a]
        exact = stats.t(num_topics - 1, loc=d.mean(), scale=d.std(ddof=1) / np.sqrt(num_topics))
        assert stats.kstest(diff, exact.cdf).pvalue > 0.01
        assert diff.mean() == pytest.approx(d.mean(), abs=1e-12)  # antithetic pairs
        ci = stats.ttest_rel(scores[b], scores[a]).confidence_interval(0.95)
        np.testing.assert_allclose(np.quantile(diff, [0.025, 0.975]), ci, atol=0.03 * exact.std())


def test_comparison_report_of_the_paired_model(scores):
    result = bayesian_compare_scores(scores[None], systems=["a", "b", "c"], measures=["m"])
    assert result.method == "exact" and result.likelihood.value == "paired"
    assert result.convergence.converged and result.convergence.divergences == 0
    assert "10000 exact draws; converged" in result.describe()
    pair = result.pair("m", "b")
    d = scores[1] - scores[0]
    assert pair.mean_difference == pytest.approx(d.mean(), abs=1e-12)
    assert pair.observed_difference == pytest.approx(d.mean(), abs=1e-15)
    t_stat = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    assert pair.p_better == pytest.approx(stats.t.cdf(t_stat, len(d) - 1), abs=0.02)


@pytest.mark.parametrize("likelihood", ["paired", "bootstrap"])
def test_identical_runs_give_an_interval_around_zero_without_divergences(likelihood):
    values = np.random.default_rng(3).uniform(size=30)
    values[:5] = 0.0
    values[5:9] = 1.0
    same = np.stack([values, values])[None]
    result = bayesian_compare_scores(
        same, systems=["a", "a2"], measures=["m"], likelihood=likelihood
    )
    pair = result.pair("m", "a2")
    assert pair.interval[0] <= 0.0 <= pair.interval[1]
    assert pair.interval[1] - pair.interval[0] < 10 * PAIRED_RIDGE / np.sqrt(30)
    assert pair.p_equivalent == 1.0 and pair.p_better == pytest.approx(0.5, abs=0.05)
    assert result.convergence.divergences == 0


def test_bayesian_bootstrap_moments(scores):
    draws = bootstrap_draws(scores[None], 40_000, np.random.default_rng(1))[:, 0, :]
    d = scores[1] - scores[0]
    diff = draws[:, 1] - draws[:, 0]
    # Dirichlet(1, ..., 1) weights: E = mean(d), Var = sum (d - mean)^2 / (T (T + 1))
    var = np.sum((d - d.mean()) ** 2) / (len(d) * (len(d) + 1))
    assert diff.mean() == pytest.approx(d.mean(), abs=4 * np.sqrt(var / 40_000))
    assert diff.var() == pytest.approx(var, rel=0.03)


def test_fit_comparison_returns_the_reports_draws(scores):
    draws = fit_comparison(scores.T, seed=4, num_draws=800)
    result = bayesian_compare_scores(
        scores[None], systems=["a", "b", "c"], measures=["m"], num_samples=200, seed=4
    )
    assert draws.shape == (800, 3)
    np.testing.assert_array_equal(draws, result.expected("m"))
    with pytest.raises(InputDataError, match="topics x systems"):
        fit_comparison(scores[None])


def test_the_hierarchical_potential_refuses_exact_likelihoods(scores):
    with pytest.raises(InputDataError, match="hierarchical comparison model takes"):
        ComparisonPotential(scores[None], "paired", ComparisonPriors())


def test_the_exact_path_does_not_load_torch_or_pyro():
    # what keeps `eval --compare --bayesian` near the frequentist --compare's cost
    code = (
        "import sys, numpy as np\n"
        "from probrank.evaluation.bayesian import bayesian_compare_scores\n"
        "bayesian_compare_scores(np.random.default_rng(0).uniform(size=(1, 2, 9)),"
        " systems=['a', 'b'], measures=['m'], num_samples=200)\n"
        "print(sorted(m for m in ('torch', 'pyro') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
