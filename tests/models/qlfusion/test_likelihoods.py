"""The hierarchical (logit-normal random effect) likelihood against numerical integration."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import integrate, stats

from probrank.exceptions import InputDataError
from probrank.models import QLFusionSettings
from probrank.models.qlfusion.likelihoods import LogitNormalBinomial, logit_normal_proportion
from probrank.models.qlfusion.predictive import interval_coverage, predictive_shares

N = 100


def _integrated_pmf(k: int, logit: float, scale: float) -> float:
    def integrand(u: float) -> float:
        p = 1.0 / (1.0 + math.exp(-(logit + u)))
        return stats.binom.pmf(k, N, p) * stats.norm.pdf(u, scale=scale)

    return integrate.quad(integrand, -10 * scale, 10 * scale, limit=200)[0]


@pytest.mark.parametrize(("logit", "scale"), [(-1.5, 0.5), (0.3, 1.0), (2.0, 0.8)])
def test_log_prob_is_the_integral_over_the_random_effect(logit: float, scale: float) -> None:
    d = logit_normal_proportion(N, scale)(torch.tensor([logit], dtype=torch.float64))
    for k in (0, 5, 20, 50, 80, 100):
        expected = _integrated_pmf(k, logit, scale)
        got = float(d.log_prob(torch.tensor([float(k)], dtype=torch.float64)).exp())
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-12)
    pmf = d.log_prob(torch.arange(N + 1, dtype=torch.float64).unsqueeze(-1)).exp()
    assert float(pmf.sum()) == pytest.approx(1.0, abs=1e-9)


def test_small_scale_is_the_binomial_and_samples_match_the_mean() -> None:
    logits = torch.tensor([-1.0, 0.0, 1.5], dtype=torch.float64)
    k = torch.tensor([20.0, 50.0, 80.0], dtype=torch.float64)
    near = LogitNormalBinomial(logits, 1e-6, torch.tensor(float(N), dtype=torch.float64))
    binomial = torch.distributions.Binomial(N, logits=logits)
    assert torch.allclose(near.log_prob(k), binomial.log_prob(k), atol=1e-6)
    wide = LogitNormalBinomial(logits, 1.0, torch.tensor(float(N), dtype=torch.float64))
    torch.manual_seed(0)
    draws = wide.sample(torch.Size([20000]))
    assert torch.allclose(draws.mean(0), wide.mean, atol=0.6)  # 4 sd of the mean of draws
    assert (draws.var(0) > 3 * binomial.variance).all()  # over-dispersed


def test_predictive_covers_lists_simulated_from_the_hierarchical_model() -> None:
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(2000, generator=gen, dtype=torch.float64) - 0.5
    u = torch.randn(2000, generator=gen, dtype=torch.float64) * 0.8
    k = torch.binomial(torch.full_like(logits, N), torch.sigmoid(logits + u), generator=gen)
    draws = torch.sigmoid(logits).unsqueeze(0)  # the predicted logits, known exactly
    covered = interval_coverage(
        predictive_shares(draws, logit_normal_proportion(N, 0.8), N, seed=3), k / N
    )
    assert 0.5 <= covered["coverage_50"] <= 0.58 and 0.9 <= covered["coverage_90"] <= 0.94


def test_bad_scale_is_one_line_error() -> None:
    with pytest.raises(InputDataError, match="scale must be a positive number"):
        logit_normal_proportion(N, 0.0)
    with pytest.raises(InputDataError, match="scale must be a positive number"):
        QLFusionSettings(likelihood="logit_normal", likelihood_args={"scale": -1.0})
    QLFusionSettings(likelihood="logit_normal", likelihood_args={"scale": 0.7})
