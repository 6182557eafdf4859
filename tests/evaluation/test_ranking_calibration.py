"""ERCE on small cases computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from probrank.evaluation.ranking_calibration import (
    expected_ranking_calibration_error,
    gaussian_order_probabilities,
    order_probabilities_from_draws,
    ranking_calibration_pairs,
    score_order_probabilities,
)


def test_erce_hand_computed() -> None:
    # topic 1: grades (2, 0, 1); topic 2: grades (0, 1)
    p1 = torch.tensor([[0.5, 0.9, 0.65], [0.1, 0.5, 0.25], [0.35, 0.75, 0.5]], dtype=torch.float64)
    p2 = torch.tensor([[0.5, 0.8], [0.2, 0.5]], dtype=torch.float64)
    probs, outcomes = ranking_calibration_pairs([p1, p2], [[2, 0, 1], [0, 1]])
    # pairs (0,1): P 0.9, 2 > 0; (0,2): 0.65, 2 > 1; (1,2): 0.25, 0 < 1;
    # topic 2's (0,1): 0.8, 0 < 1
    assert probs.tolist() == [0.9, 0.65, 0.25, 0.8]
    assert outcomes.tolist() == [1.0, 1.0, 0.0, 0.0]
    # top-label: confidences 0.9, 0.65, 0.75, 0.8; correct, correct, correct, wrong
    # 10 bins: (0.6, 0.7] {0.65: acc 1}, (0.7, 0.8] {0.75, 0.8: acc 0.5}, (0.8, 0.9] {0.9: acc 1}
    expected = (1 * abs(1 - 0.65) + 2 * abs(0.5 - 0.775) + 1 * abs(1 - 0.9)) / 4
    got = expected_ranking_calibration_error([p1, p2], [[2, 0, 1], [0, 1]], n_bins=10)
    assert got == pytest.approx(expected, abs=1e-12)


def test_deterministic_scores_give_the_misordered_share() -> None:
    scores = torch.tensor([3.0, 2.0, 1.0, 0.0], dtype=torch.float64)
    grades = [1, 0, 1, 0]  # pairs with different grades: (0,1) ok, (0,3) ok, (1,2) wrong, (2,3) ok
    erce = expected_ranking_calibration_error([score_order_probabilities(scores)], [grades])
    assert erce == pytest.approx(0.25, abs=1e-12)
    assert math.isnan(
        expected_ranking_calibration_error([score_order_probabilities(scores)], [[1, 1, 1, 1]])
    )


def test_gaussian_order_probabilities_against_draws() -> None:
    mean = torch.tensor([0.5, 0.0, -0.3], dtype=torch.float64)
    root = torch.tensor([[1.0, 0.2, 0.0], [0.3, 0.8, 0.1], [0.0, 0.5, 0.7]], dtype=torch.float64)
    covariance = root @ root.T
    closed = gaussian_order_probabilities(mean, covariance)
    generator = torch.Generator().manual_seed(0)
    z = torch.randn(200_000, 3, generator=generator, dtype=torch.float64)
    draws = mean + z @ root.T
    torch.testing.assert_close(closed, order_probabilities_from_draws(draws), rtol=0, atol=5e-3)
    torch.testing.assert_close(closed + closed.T, torch.ones(3, 3, dtype=torch.float64))
    sure = gaussian_order_probabilities(mean, torch.zeros(3, dtype=torch.float64))
    torch.testing.assert_close(sure, score_order_probabilities(mean))
