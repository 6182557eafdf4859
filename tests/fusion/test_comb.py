"""CombSUM, CombMNZ, CombMAX and RRF against hand-computed tiny examples."""

from __future__ import annotations

import pytest

from probrank.data import Run
from probrank.exceptions import InputDataError
from probrank.fusion import comb_max, comb_mnz, comb_sum, rrf

A = Run({"1": {"x": 1.0, "y": 0.5, "z": 0.0}, "2": {"x": 1.0}}, name="A")
B = Run({"1": {"y": 1.0, "w": 0.0}, "3": {"v": 0.2}}, name="B")


def test_comb_sum_hand_computed() -> None:
    out = comb_sum([A, B]).to_dict()
    assert out == {
        "1": pytest.approx({"x": 1.0, "y": 1.5, "z": 0.0, "w": 0.0}),
        "2": pytest.approx({"x": 1.0}),
        "3": pytest.approx({"v": 0.2}),
    }
    # documents stored in trec_eval order
    assert list(out["1"]) == ["y", "x", "z", "w"]


def test_comb_mnz_and_max_hand_computed() -> None:
    assert comb_mnz([A, B]).to_dict()["1"] == pytest.approx(
        {"x": 1.0, "y": 3.0, "z": 0.0, "w": 0.0}
    )
    assert comb_max([A, B]).to_dict()["1"] == pytest.approx(
        {"x": 1.0, "y": 1.0, "z": 0.0, "w": 0.0}
    )


def test_weighted_comb_sum_per_query_and_per_run() -> None:
    weights = {"A": {"1": 0.5, "2": 2.0}, "B": {"1": 0.25, "3": 1.0}}
    out = comb_sum([A, B], weights).to_dict()
    assert out["1"] == pytest.approx({"x": 0.5, "y": 0.5, "z": 0.0, "w": 0.0})
    assert out["2"] == pytest.approx({"x": 2.0})
    flat = comb_sum([A, B], {"A": 2.0, "B": 1.0}).to_dict()
    assert flat["1"] == pytest.approx({"x": 2.0, "y": 2.0, "z": 0.0, "w": 0.0})


@pytest.mark.parametrize(
    "weights",
    [
        {"A": 1.0},  # run B missing
        {"A": {"1": 1.0}, "B": {"1": 1.0, "3": 1.0}},  # (A, 2) missing
        {"A": float("nan"), "B": 1.0},
    ],
)
def test_bad_weights_raise(weights: dict) -> None:
    with pytest.raises(InputDataError):
        comb_sum([A, B], weights)


def test_duplicate_names_with_weights_raise() -> None:
    with pytest.raises(InputDataError):
        comb_sum([A, A], {"A": 1.0})


def test_rrf_hand_computed() -> None:
    # A ranks x, y, z for query 1; B ranks y, w.  k = 60.
    out = rrf([A, B]).to_dict()
    assert out["1"] == pytest.approx(
        {"x": 1 / 61, "y": 1 / 62 + 1 / 61, "z": 1 / 63, "w": 1 / 62}, rel=1e-15
    )
    assert rrf([A, B], k=0, depth=1).to_dict()["1"] == pytest.approx({"x": 1.0, "y": 1.0})


def test_rrf_ties_ranked_by_docno_descending() -> None:
    tied = Run({"1": {"a": 1.0, "b": 1.0}}, name="t")
    assert rrf([tied], k=0).to_dict()["1"] == pytest.approx({"b": 1.0, "a": 0.5})


def test_no_runs_raise() -> None:
    for fn in (comb_sum, comb_mnz, comb_max, rrf):
        with pytest.raises(InputDataError):
            fn([])
