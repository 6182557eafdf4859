"""Risk-aware ranking criteria against closed forms."""

from __future__ import annotations

import math

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.retrieval.risk import (
    conditional_value_at_risk,
    criterion_scores,
    mean_minus_sd,
    probability_draws,
)


def test_cvar_of_gaussian_draws_matches_closed_form() -> None:
    # CVaR_alpha of N(m, s^2) (lower tail) is m - s phi(Phi^-1(alpha)) / alpha
    generator = torch.Generator().manual_seed(0)
    draws = 0.3 + 2.0 * torch.randn(400_000, 2, generator=generator, dtype=torch.float64)
    for alpha in (0.05, 0.2, 0.5):
        z = torch.distributions.Normal(0.0, 1.0).icdf(torch.tensor(alpha, dtype=torch.float64))
        phi = math.exp(-0.5 * float(z) ** 2) / math.sqrt(2 * math.pi)
        expected = 0.3 - 2.0 * phi / alpha
        got = conditional_value_at_risk(draws, alpha)
        torch.testing.assert_close(
            got, torch.full((2,), expected, dtype=torch.float64), rtol=0, atol=0.03
        )


def test_cvar_discrete_formula_by_hand() -> None:
    draws = torch.tensor([[4.0], [1.0], [3.0], [2.0]], dtype=torch.float64)
    # alpha = 0.5: the two lowest, (1 + 2) / 2; alpha = 0.375: (1 + 0.5 * 2) / 1.5
    assert float(conditional_value_at_risk(draws, 0.5)[0]) == pytest.approx(1.5, abs=1e-12)
    assert float(conditional_value_at_risk(draws, 0.375)[0]) == pytest.approx(2.0 / 1.5, abs=1e-12)
    assert float(conditional_value_at_risk(draws, 1.0)[0]) == pytest.approx(2.5, abs=1e-12)
    with pytest.raises(InputDataError, match="alpha"):
        conditional_value_at_risk(draws, 0.0)


def test_mean_minus_sd_and_uncertain_candidates_are_demoted() -> None:
    draws = torch.tensor([[0.2, 0.5], [0.4, 0.5], [0.6, 0.5]], dtype=torch.float64)
    torch.testing.assert_close(
        mean_minus_sd(draws, 2.0), torch.tensor([0.4 - 2 * 0.2, 0.5], dtype=torch.float64)
    )
    # same posterior mean logit, one candidate much less certain
    mean = torch.tensor([0.0, 0.0], dtype=torch.float64)
    variance = torch.tensor([0.01, 9.0], dtype=torch.float64)
    probability = torch.sigmoid(mean)
    for criterion in ("cvar", "mean_sd"):
        scores = criterion_scores(
            criterion, probability=probability, mean=mean, variance=variance, seed=1
        )
        assert scores[0] > scores[1]
    prp = criterion_scores("probability", probability=probability, mean=mean, variance=variance)
    torch.testing.assert_close(prp, probability)


def test_draws_are_seeded_and_bounded() -> None:
    mean = torch.tensor([0.5, -1.0], dtype=torch.float64)
    variance = torch.tensor([1.0, 0.0], dtype=torch.float64)
    first = probability_draws(mean, variance, 50, seed=3)
    assert torch.equal(first, probability_draws(mean, variance, 50, seed=3))
    assert first.shape == (50, 2) and float(first.min()) > 0 and float(first.max()) < 1
    torch.testing.assert_close(
        first[:, 1], torch.full((50,), 1 / (1 + math.e), dtype=torch.float64)
    )


def test_every_criterion_has_a_score_function_and_the_logit_ones_are_closed_form() -> None:
    from probrank.models.gpf_ranker import RerankCriterion
    from probrank.retrieval.risk import CRITERION_SCORES, RankingCriterion

    assert set(CRITERION_SCORES) == set(RankingCriterion)
    assert RerankCriterion is RankingCriterion  # one enum, re-exported by the GPF ranker
    mean = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64)
    variance = torch.tensor([4.0, 0.25, 0.0], dtype=torch.float64)
    probability = torch.sigmoid(mean / torch.sqrt(1 + math.pi / 8 * variance))
    common = {"probability": probability, "mean": mean, "variance": variance}
    assert torch.equal(criterion_scores("mean", **common), mean)
    lower = criterion_scores("lower", risk_aversion=1.5, **common)
    expected = torch.tensor([0.5 - 3.0, 2.0 - 0.75, -1.0], dtype=torch.float64)
    torch.testing.assert_close(lower, expected, rtol=0, atol=1e-12)
    with pytest.raises(InputDataError, match="risk_aversion"):
        criterion_scores("lower", risk_aversion=-1.0, **common)
    with pytest.raises(InputDataError, match="criterion"):
        criterion_scores("best", **common)
