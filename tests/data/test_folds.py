"""The project's one fold rule and its one cross-validation loop (probrank.data.folds)."""

from __future__ import annotations

import pytest
import torch

from probrank.data.folds import MIN_FOLDS, cross_validate, fold_indices, split_folds
from probrank.exceptions import InputDataError


def _reference(count: int, folds: int, seed: int) -> list[list[int]]:
    """The documented rule written out by hand: a seeded permutation dealt round-robin."""
    generator = torch.Generator()
    generator.manual_seed(seed)
    order = [int(i) for i in torch.randperm(count, generator=generator)]
    parts: list[list[int]] = [[] for _ in range(folds)]
    for position, index in enumerate(order):
        parts[position % folds].append(index)
    return parts


@pytest.mark.parametrize(("count", "folds", "seed"), [(23, 10, 3), (7, 2, 0), (100, 10, 0)])
def test_folds_follow_the_documented_rule(count: int, folds: int, seed: int) -> None:
    unsorted = fold_indices(count, folds, seed=seed, sort=False)
    assert unsorted == _reference(count, folds, seed)
    assert fold_indices(count, folds, seed=seed) == [sorted(p) for p in unsorted]
    flat = sorted(i for part in unsorted for i in part)
    assert flat == list(range(count))  # a partition
    assert max(map(len, unsorted)) - min(map(len, unsorted)) <= 1
    assert fold_indices(count, folds, seed=seed) == fold_indices(count, folds, seed=seed)


def test_items_keep_input_order_within_a_fold_and_map_like_indices() -> None:
    topics = [f"t{i}" for i in (5, 3, 9, 1, 7, 2, 8)]
    for sort in (True, False):
        indices = fold_indices(len(topics), 3, seed=4, sort=sort)
        assert split_folds(topics, 3, seed=4, sort=sort) == [
            [topics[i] for i in p] for p in indices
        ]
    for part in split_folds(topics, 3, seed=4):
        assert part == sorted(part, key=topics.index)


def test_the_minimum_number_of_folds_and_of_items() -> None:
    assert MIN_FOLDS == 2
    assert len(fold_indices(2, 2)) == 2
    with pytest.raises(InputDataError, match="at least 2 folds, got 1"):
        fold_indices(10, 1)
    with pytest.raises(InputDataError, match="at least 3 folds, got 2"):
        fold_indices(10, 2, min_folds=3)
    with pytest.raises(InputDataError, match="3 topics cannot fill 4 folds"):
        split_folds(["a", "b", "c"], 4)
    with pytest.raises(InputDataError, match="distinct"):
        split_folds(["a", "a", "b"], 2)


def test_cross_validate_holds_each_key_out_of_its_own_model() -> None:
    keys = [f"q{i}" for i in range(11)]
    folds = split_folds(keys, 4, seed=2)
    seen: list[tuple[int, list[str]]] = []

    def fit(train: list[str], fold: int) -> set[str]:
        seen.append((fold, train))
        return set(train)

    def predict(model: set[str], test: list[str]) -> dict[str, bool]:
        return {k: k in model for k in test}

    result = cross_validate(folds, fit, predict, keys=keys)
    assert result.folds == folds
    assert [f for f, _ in seen] == [0, 1, 2, 3]
    for (_, train), part in zip(seen, folds, strict=True):
        assert train == [k for k in keys if k not in part]  # in the order of ``keys``
    predicted = {k: v for p in result.predictions if p for k, v in p.items()}
    assert predicted == dict.fromkeys(keys, False)


def test_cross_validate_skips_empty_folds_and_refuses_unplaced_keys() -> None:
    calls: list[int] = []
    result = cross_validate(
        [["a"], ["b", "c"], ["z"]],
        lambda train, f: calls.append(f) or train,
        lambda model, test: test,
        keys=["a", "b", "c"],
    )
    assert calls == [0, 1] and result.models[2] is None and result.predictions[2] is None
    with pytest.raises(InputDataError, match="'d' is in no fold"):
        cross_validate([["a"]], lambda t, f: t, lambda m, t: t, keys=["a", "d"])
    with pytest.raises(InputDataError, match="in folds 0 and 1"):
        cross_validate([["a"], ["a"]], lambda t, f: t, lambda m, t: t)
