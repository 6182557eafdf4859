"""The posterior predictive interval of a list's observed share of relevant documents: exact
against scipy's binomial and beta-binomial quantiles, nominal coverage on data simulated from
the model itself, and its place in QLFusion's fit summary and ``proportions``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from probrank.data.datasets.synthetic import score_distribution_runs
from probrank.exceptions import InputDataError
from probrank.likelihoods import beta_binomial_proportion, binomial_proportion
from probrank.models import QLFusion, QLFusionSettings
from probrank.models.qlfusion.predictive import (
    coverage_key,
    interval_coverage,
    predictive_interval,
    predictive_shares,
)

N = 100


def _exact_coverage(dist: stats.rv_discrete, level: float) -> np.ndarray:
    """P(lo <= K <= hi) of the equal-tailed interval with scipy's own quantiles."""
    alpha = (1 - level) / 2
    lo, hi = dist.ppf(alpha), dist.ppf(1 - alpha)
    return dist.cdf(hi) - dist.cdf(lo - 1)


def test_interval_of_a_point_posterior_is_the_binomial_quantiles() -> None:
    p = torch.tensor([[0.05, 0.3, 0.5, 0.9]])  # S = 1 draw: the predictive is Binomial(n, p)
    shares = predictive_shares(p, binomial_proportion(N), N, seed=1, min_draws=40_000)
    assert shares.shape == (40_000, 4)
    for level in (0.5, 0.9):
        lower, upper = predictive_interval(shares, level)
        alpha = (1 - level) / 2
        exact_lo = stats.binom.ppf(alpha, N, p[0].numpy()) / N
        exact_hi = stats.binom.ppf(1 - alpha, N, p[0].numpy()) / N
        # sampled quantiles of a discrete law: at most one count off scipy's
        assert np.abs(lower.numpy() - exact_lo).max() <= 1 / N + 1e-9
        assert np.abs(upper.numpy() - exact_hi).max() <= 1 / N + 1e-9
    assert torch.allclose(shares.mean(0), p[0], atol=0.005)


@pytest.mark.parametrize("concentration", [None, 8.0])
def test_coverage_is_nominal_on_lists_simulated_from_the_model(concentration) -> None:
    rng = np.random.default_rng(0)
    p = rng.beta(2.0, 5.0, size=1500)
    if concentration is None:
        law = stats.binom(N, p)
        likelihood = binomial_proportion(N)
    else:
        law = stats.betabinom(N, concentration * p, concentration * (1 - p))
        likelihood = beta_binomial_proportion(N, concentration)
    k = law.rvs(random_state=rng)
    shares = predictive_shares(torch.tensor(p)[None], likelihood, N, seed=2, min_draws=2000)
    covered = interval_coverage(shares, torch.tensor(k / N))
    for level in (0.5, 0.9):
        exact = _exact_coverage(law, level).mean()  # >= level: the counts are discrete
        assert level <= exact <= level + 0.08
        se = (exact * (1 - exact) / len(p)) ** 0.5
        assert abs(covered[coverage_key(level)] - exact) < 4 * se + 0.01


def test_binomial_intervals_undercover_over_dispersed_lists() -> None:
    rng = np.random.default_rng(3)
    p = rng.beta(2.0, 5.0, size=1000)
    k = torch.tensor(stats.betabinom(N, 5 * p, 5 * (1 - p)).rvs(random_state=rng) / N)
    draws = torch.tensor(p)[None]
    binomial = interval_coverage(predictive_shares(draws, binomial_proportion(N), N), k)
    beta = interval_coverage(predictive_shares(draws, beta_binomial_proportion(N, 5.0), N), k)
    assert binomial["coverage_90"] < 0.6 < 0.87 < beta["coverage_90"]


def test_posterior_spread_widens_the_interval() -> None:
    point = torch.full((1, 1), 0.4)
    spread = torch.linspace(0.2, 0.6, 200).unsqueeze(-1)  # S x 1 draws of p_hat
    widths = []
    for draws in (point, spread):
        lo, hi = predictive_interval(predictive_shares(draws, binomial_proportion(N), N), 0.9)
        widths.append(float(hi - lo))
    assert widths[1] > widths[0] + 0.1


def test_bad_inputs() -> None:
    with pytest.raises(InputDataError, match="level"):
        predictive_interval(torch.rand(10, 2), 1.0)
    with pytest.raises(InputDataError, match="total_count"):
        predictive_shares(torch.rand(10, 2), binomial_proportion(N), 0)
    with pytest.raises(InputDataError, match="'nope'"):
        QLFusionSettings(likelihood="nope")
    with pytest.raises(InputDataError, match="concentration must be positive"):
        QLFusionSettings(likelihood="beta_binomial", likelihood_args={"concentration": 0.0})
    with pytest.raises(InputDataError, match="do not fit"):
        QLFusionSettings(likelihood="binomial", likelihood_args={"concentration": 3.0})
    # a config table's arguments are checked with the likelihood they belong to
    QLFusionSettings.check_table(
        {"likelihood": "beta_binomial", "likelihood_args": {"concentration": 4}}
    )


def test_fit_reports_validation_coverage_and_predictive_proportions() -> None:
    c = score_distribution_runs(num_queries=30, num_runs=2, num_docs=150, depth=30, seed=4)
    settings = QLFusionSettings(
        depth=30, batch_sizes=(4,), max_steps=150, lr=1e-2, posterior_samples=40,
        likelihood="beta_binomial", likelihood_args={"concentration": 10.0}, progress=False,
    )  # fmt: skip
    model = QLFusion(settings).fit(c.runs, c.qrels)
    coverage = model.training_info["validation_coverage"]
    assert set(coverage) == {"coverage_50", "coverage_90"}
    assert 0.0 <= coverage["coverage_50"] <= coverage["coverage_90"] <= 1.0
    credible = model.proportions(c.runs)
    predictive = model.proportions(c.runs, predictive=True)
    assert (predictive["mean"] == credible["mean"]).all()
    width = predictive["upper"] - predictive["lower"]
    # the beta-binomial's own noise dwarfs the posterior spread of the mean
    assert (width > credible["upper"] - credible["lower"]).all()
    assert (
        (predictive["lower"] <= predictive["mean"]) & (predictive["mean"] <= predictive["upper"])
    ).all()


def test_psis_loo_of_a_point_posterior_is_the_log_likelihood() -> None:
    """With every draw equal, leaving a list out changes nothing: elpd_loo is the sum of the
    lists' log-likelihoods (scipy's binomial pmf) and p_loo is 0 (Pareto k is undefined for
    equal weights and not checked)."""
    from probrank.models.qlfusion.predictive import members_loo, pointwise_log_likelihood

    p = torch.tensor([[0.2, 0.5, 0.7], [0.1, 0.3, 0.9]], dtype=torch.float64)
    counts = torch.tensor([[25.0, 48.0, 60.0], [5.0, 40.0, 88.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    draws = p.expand(400, 2, 3)
    log_lik = pointwise_log_likelihood(draws, binomial_proportion(N), counts)
    expected = stats.binom.logpmf(counts.numpy(), N, p.numpy())
    np.testing.assert_allclose(log_lik[0].numpy(), expected, rtol=1e-12)
    out = members_loo(log_lik, mask)
    assert out["elpd_loo_per_list"] == pytest.approx(expected[mask.numpy()].sum() / 5, rel=1e-9)
    assert out["p_loo"] == pytest.approx(0.0, abs=1e-9)


def test_psis_loo_prefers_the_likelihood_that_generated_the_counts() -> None:
    """Over-dispersed counts (beta-binomial, c = 5): the beta-binomial's elpd per list is
    higher than the binomial's by far more than its standard error."""
    from probrank.models.qlfusion.predictive import members_loo, pointwise_log_likelihood

    torch.manual_seed(0)
    p = torch.full((1, 300), 0.3, dtype=torch.float64)
    shares = torch.distributions.Beta(1.5, 3.5).sample(p.shape)  # mean 0.3, c = 5
    counts = torch.distributions.Binomial(N, shares).sample()
    draws = (p + 0.01 * torch.randn(500, 1, 300, dtype=torch.float64)).clamp(0.01, 0.99)
    mask = torch.ones(1, 300, dtype=torch.bool)
    scores = {}
    for name, likelihood in (
        ("binomial", binomial_proportion(N)),
        ("beta_binomial", beta_binomial_proportion(N, 5.0)),
    ):
        scores[name] = members_loo(pointwise_log_likelihood(draws, likelihood, counts), mask)
    gap = scores["beta_binomial"]["elpd_loo_per_list"] - scores["binomial"]["elpd_loo_per_list"]
    assert gap > 5 * scores["binomial"]["se_per_list"]
    assert scores["beta_binomial"]["pareto_k_bad"] == 0.0
