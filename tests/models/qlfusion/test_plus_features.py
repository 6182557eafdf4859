"""qlfusion_plus inputs: hand-derived descriptors and per-member standardisation."""

from __future__ import annotations

import math

import torch

from probrank.data.trec import Run
from probrank.models.qlfusion.plus_features import plus_feature_names, plus_features, standardize


def test_descriptors_match_hand_computed_values() -> None:
    a = Run({"1": {"a": 3.0, "b": 2.0, "c": 1.0}, "2": {"x": 1.0}}, name="A")
    b = Run({"1": {"b": 5.0, "d": 4.0, "a": 1.0}}, name="B")
    features, names = plus_features([a, b], ["1", "2", "3"], depth=10)
    assert names == plus_feature_names(10)
    assert features.shape == (2, 3, len(names))
    row = dict(zip(names, features[0, 0].tolist(), strict=True))
    expected = {
        "retrieved": 0.3, "raw@1": 3.0, "raw@10": 1.0, "raw_last": 1.0, "raw_mean": 2.0,
        "raw_sd": math.sqrt(2 / 3), "norm_mean": 0.5, "norm@10": 0.0, "norm@50": 0.0,
        "overlap@10": 0.2,  # a and b shared, out of 10
        "support@10": 2 / 3,  # a and b are in B's list, c is not
    }  # fmt: skip
    for key, value in expected.items():
        assert math.isclose(row[key], value, rel_tol=1e-6, abs_tol=1e-6), key
    # topic "2": B lacks it, so A's agreement features are 0 and B's row is all zeros
    row2 = dict(zip(names, features[0, 1].tolist(), strict=True))
    assert row2["overlap@10"] == 0.0 and row2["support@10"] == 0.0
    assert math.isclose(row2["norm_mean"], 1.0)  # a one-document list normalises to 1
    assert bool((features[1, 1] == 0).all()) and bool((features[:, 2] == 0).all())
    # the order of the runs only permutes the rows
    swapped, _ = plus_features([b, a], ["1", "2", "3"], depth=10)
    torch.testing.assert_close(swapped, features.flip(0))


def test_standardize_uses_training_rows_only() -> None:
    train = torch.tensor([[[1.0, 5.0, 100.0], [3.0, 5.0, 0.0], [7.0, 7.0, 7.0]]])
    mask = torch.tensor([[True, True, False]])  # the third row is padding
    other = torch.tensor([[[2.0, 5.0, 1e6]]])
    z_train, z_other = standardize(train, mask, other, clip=5.0)
    torch.testing.assert_close(z_train[0, :2, 0], torch.tensor([-1.0, 1.0]))
    assert bool((z_train[0, :, 1] == 0).all())  # a constant column maps to 0
    assert bool((z_train[0, 2] == 0).all())  # padding rows come out as zeros
    torch.testing.assert_close(z_other[0, 0], torch.tensor([0.0, 0.0, 5.0]))  # clipped
    assert train[0, 2, 0] == 7.0  # inputs untouched
