"""Hypothesis properties of the tensor metrics: bounds and invariance to candidate order."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from probrank.evaluation import (
    average_precision,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)


@st.composite
def ranked_lists(draw):
    n = draw(st.integers(1, 12))
    # distinct scores, so that any permutation of the candidates gives the same ranking
    scores = draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n, unique=True))
    grades = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    extra = draw(st.integers(0, 5))  # relevant documents the list did not retrieve
    perm = draw(st.permutations(list(range(n))))
    k = draw(st.integers(1, 15))
    return (
        torch.tensor(scores, dtype=torch.float64),
        torch.tensor(grades, dtype=torch.float64),
        extra,
        torch.tensor(perm),
        k,
    )


def _all(scores, grades, extra, k):
    relevant = grades > 0
    num_rel = relevant.sum() + extra
    ideal = torch.sort(
        torch.cat([grades, torch.ones(extra, dtype=grades.dtype)]), descending=True
    ).values
    return torch.stack(
        [
            precision_at_k(scores, relevant, k),
            recall_at_k(scores, relevant, num_rel, k),
            average_precision(scores, relevant, num_rel),
            reciprocal_rank(scores, relevant),
            ndcg_at_k(scores, grades, ideal, k),
        ]
    )


@settings(max_examples=100, deadline=None)
@given(ranked_lists())
def test_metrics_bounded_and_order_invariant(case):
    scores, grades, extra, perm, k = case
    values = _all(scores, grades, extra, k)
    assert torch.all(values >= 0) and torch.all(values <= 1 + 1e-12)
    shuffled = _all(scores[perm], grades[perm], extra, k)
    torch.testing.assert_close(values, shuffled, rtol=0, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(ranked_lists())
def test_perfect_ranking_scores_one(case):
    _, grades, _, _, k = case
    if grades.sum() == 0:
        return
    scores = grades + torch.linspace(0.1, 0.0, grades.numel(), dtype=torch.float64)
    relevant = grades > 0
    num_rel = relevant.sum()
    assert average_precision(scores, relevant, num_rel) == 1.0
    assert reciprocal_rank(scores, relevant) == 1.0
    ideal = torch.sort(grades, descending=True).values
    torch.testing.assert_close(
        ndcg_at_k(scores, grades, ideal, k), torch.tensor(1.0, dtype=torch.float64)
    )
