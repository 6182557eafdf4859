from __future__ import annotations

import itertools

import numpy as np
import pytest

from probrank.pooling.strategies.active import ap_prior, horvitz_thompson, inclusion_probabilities


def test_ap_prior_sums_to_one() -> None:
    weights = ap_prior(100)
    assert weights.sum() == pytest.approx(1.0)
    assert np.all(np.diff(weights) < 0)


def test_horvitz_thompson_is_unbiased_by_enumeration() -> None:
    # one topic, 4 documents, 2 runs; q fixed, 2 rounds (2 and 1 draws with replacement)
    rel = np.array([1.0, 0.0, 1.0, 1.0])
    ranks = np.array([[1, 2, 3, 4], [4, 3, 0, 1]])
    q1 = np.array([0.4, 0.3, 0.2, 0.1])
    q2 = np.array([0.1, 0.2, 0.3, 0.4])
    history = [(q1, 2), (q2, 1)]
    true_total = rel.sum()
    true_sums = []
    for r in range(2):
        k = ranks[r]
        on = (k > 0) & (rel > 0)
        total = 0.0
        for d in np.flatnonzero(on):
            above = np.sum(on & (k <= k[d]))
            total += above / k[d]
        true_sums.append(total)
    expect_total = 0.0
    expect_sums = np.zeros(2)
    for first in itertools.product(range(4), repeat=2):
        for second in range(4):
            p = q1[first[0]] * q1[first[1]] * q2[second]
            sample = np.array(sorted({*first, second}))
            pi, pairs = inclusion_probabilities(history, sample)
            total, sums = horvitz_thompson(ranks[:, sample], rel[sample], pi, pairs)
            expect_total += p * total
            expect_sums += p * sums
    assert expect_total == pytest.approx(true_total, rel=1e-12)
    np.testing.assert_allclose(expect_sums, true_sums, rtol=1e-12)
