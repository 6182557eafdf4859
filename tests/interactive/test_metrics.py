"""Matching accuracy and NDCG@5 over grades."""

from __future__ import annotations

import math

import pytest
import torch

from probrank.evaluation.tensor_metrics import ndcg_at_k as tensor_ndcg
from probrank.exceptions import InputDataError, NumericsWarning
from probrank.interactive.metrics import matching_accuracy, ndcg_at_k, ranking_curves


def test_matching_accuracy() -> None:
    grades = [2, 4, 1, 4, 3]
    assert matching_accuracy([1, 0], grades) == 1.0
    assert matching_accuracy([3], grades) == 1.0  # a tie for the maximal grade matches
    assert matching_accuracy([4, 1, 3], grades) == 0.0


def test_ndcg_by_hand() -> None:
    grades = [1, 3, 2, 4, 1, 2]  # gains 0, 2, 1, 3, 0, 1
    ranking = [1, 0, 3, 2, 5, 4]  # gains 2, 0, 3, 1, 1
    dcg = 2 / math.log2(2) + 0 + 3 / math.log2(4) + 1 / math.log2(5) + 1 / math.log2(6)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5) + 0
    assert math.isclose(ndcg_at_k(ranking, grades, 5), dcg / idcg, rel_tol=1e-12)
    assert math.isclose(ndcg_at_k([3, 1, 2, 5, 0, 4], grades), 1.0, rel_tol=1e-12)
    assert math.isclose(ndcg_at_k([0, 4], grades), 0.0, abs_tol=0.0)


def test_ndcg_agrees_with_the_trec_eval_style_tensor_metric() -> None:
    generator = torch.Generator().manual_seed(0)
    for _ in range(20):
        n = int(torch.randint(2, 12, (1,), generator=generator))
        grades = torch.randint(1, 5, (n,), generator=generator)
        grades[0] = 4
        ranking = torch.randperm(n, generator=generator).tolist()
        gains = (grades - 1).to(torch.float64)
        scores = torch.empty(n, dtype=torch.float64)
        scores[torch.tensor(ranking)] = torch.arange(n, 0, -1, dtype=torch.float64)
        reference = tensor_ndcg(scores, gains, torch.sort(gains, descending=True).values, 5)
        assert math.isclose(ndcg_at_k(ranking, grades.tolist()), float(reference), rel_tol=1e-12)


def test_undefined_ndcg_and_bad_rankings() -> None:
    with pytest.warns(NumericsWarning, match="undefined"):
        assert math.isnan(ndcg_at_k([0, 1], [1, 1]))
    with pytest.raises(InputDataError, match="repeats"):
        ndcg_at_k([0, 0], [2, 3])
    with pytest.raises(InputDataError, match="out of range"):
        matching_accuracy([2], [2, 3])
    with pytest.raises(InputDataError, match="empty"):
        matching_accuracy([], [2, 3])
    with pytest.raises(InputDataError, match="k must be"):
        ndcg_at_k([0], [2, 3], k=0)


def test_ranking_curves() -> None:
    curves = ranking_curves([[0, 1, 2], [2, 1, 0]], [1, 2, 4])
    assert curves["accuracy"] == [0.0, 1.0]
    assert math.isclose(curves["ndcg@5"][1], 1.0) and curves["ndcg@5"][0] < 1.0
