"""MultiTaskRanker.fit_features (the MEDIQA protocol's door): the training loop on precomputed
features equals selecting by hand with the selection module, under the caller's scorer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.models.multitask import (
    AnswerFeatures,
    MultiTaskData,
    MultiTaskNet,
    MultiTaskRanker,
    MultiTaskSettings,
    predict_multitask,
    select_multitask,
)

SETTINGS = MultiTaskSettings(
    hidden=8,
    weight_decay=1.0,
    lr=1e-2,
    max_epochs=40,
    patience=10,
    ranking_weights=(0.6, 0.9),
    thresholds=(0.3, 0.5, 0.7),
    posterior_samples=50,
    progress=False,
    seed=2,
)


def _answers(lists: int, seed: int) -> AnswerFeatures:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(lists * 4, 3, generator=generator, dtype=torch.float64)
    grades = [int(g) for g in (x[:, 0] * 1.5 + 2.5).round().clamp(1, 4).tolist()]
    labels = torch.tensor([float(g >= 3) for g in grades], dtype=torch.float64)
    groups = [list(range(i * 4, i * 4 + 4)) for i in range(lists)]
    return AnswerFeatures(x, groups, labels, grades, ["a", "b", "c"])


def _mrr_only(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    return float(labels.mean()), float(scores.mean())  # an arbitrary caller's scorer


def test_fit_features_equals_the_selection_by_hand() -> None:
    train, val, test = _answers(12, 0), _answers(6, 1), _answers(5, 2)
    ranker = MultiTaskRanker(SETTINGS).fit_features(train, val, scorer=_mrr_only)

    def data(a: AnswerFeatures) -> MultiTaskData:
        assert a.labels is not None
        return MultiTaskData(
            a.features, a.labels, MultiTaskData.pairs_from_grades(a.groups, a.grades)
        )

    def new_net(weight: float) -> MultiTaskNet:
        return MultiTaskNet(
            3, hidden=8, bayesian=True, ranking_weight=weight, dropout=0.1, seed=2
        ).double()

    chosen = select_multitask(
        new_net,
        data(train),
        data(val),
        val.groups,
        _mrr_only,
        ranking_weights=(0.6, 0.9),
        thresholds=(0.3, 0.5, 0.7),
        lr=1e-2,
        weight_decay=1.0,
        max_epochs=40,
        patience=10,
        num_samples=50,
        seed=2,
    )
    choice = ranker.choice
    assert choice["ranking_weight"] == chosen.ranking_weight
    assert choice["threshold"] == chosen.threshold and choice["keep_top"] == chosen.keep_top
    got = ranker.predict_features(test.features, test.groups)
    expected = chosen.predict(test.features, test.groups, num_samples=50, seed=2)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    # the utility mean and sd per answer: the chosen net's posterior predictive, seeded
    probability, mean, sd = ranker.predictive_features(test.features)
    want = predict_multitask(chosen.net, test.features, num_samples=50, seed=2)
    for a, b in zip((probability, mean, sd), want, strict=True):
        assert a.shape == (20,) and a.dtype == torch.float64
        assert torch.equal(a, b)
    np.testing.assert_array_equal(probability.numpy(), got[2])
    np.testing.assert_array_equal(mean.numpy(), got[0])
    assert bool((sd > 0).all())
    other = ranker.predictive_features(test.features, seed=3)[2]
    assert not torch.equal(other, sd)  # another seed, other draws


def test_features_only_fit_cannot_predict_lists_and_unfitted_is_an_error() -> None:
    with pytest.raises(InputDataError, match="not fitted"):
        MultiTaskRanker(SETTINGS).predict_features(torch.zeros(2, 3), [[0, 1]])
    with pytest.raises(InputDataError, match="not fitted"):
        _ = MultiTaskRanker(SETTINGS).choice
    with pytest.raises(InputDataError, match="not fitted"):
        MultiTaskRanker(SETTINGS).predictive_features(torch.zeros(2, 3))
