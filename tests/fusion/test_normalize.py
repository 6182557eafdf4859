"""Normalisations: hand-computed values, degenerate lists, depth cuts and trec_eval order."""

from __future__ import annotations

import math

import pytest

from probrank.data import Run, trec_order
from probrank.exceptions import InputDataError
from probrank.fusion.normalize import (
    Normalization,
    ScoreOverflowError,
    normalize,
    normalize_scores,
    top_documents,
)

SCORES = {"a": 4.0, "b": 2.0, "c": 1.0, "d": 1.0}


def _run(scores: dict[str, float] = SCORES) -> Run:
    return Run({"q1": scores}, name="r")


def test_minmax_hand_computed() -> None:
    out = normalize(_run(), "minmax")["q1"]
    assert dict(out) == pytest.approx({"a": 1.0, "b": 1 / 3, "c": 0.0, "d": 0.0}, abs=1e-15)


def test_zscore_hand_computed() -> None:
    # mean 2, population variance (4 + 0 + 1 + 1) / 4 = 1.5
    std = math.sqrt(1.5)
    out = normalize(_run(), "zscore")["q1"]
    expected = {"a": 2 / std, "b": 0.0, "c": -1 / std, "d": -1 / std}
    assert dict(out) == pytest.approx(expected, abs=1e-15)


def test_sum_hand_computed() -> None:
    # shifted by the minimum: 3, 1, 0, 0 -> sum 4
    out = normalize(_run(), "sum")["q1"]
    assert dict(out) == pytest.approx({"a": 0.75, "b": 0.25, "c": 0.0, "d": 0.0}, abs=1e-15)


def test_rank_uses_trec_eval_tie_order() -> None:
    # c and d tie at 1.0; trec_eval ranks the larger docno first: d (rank 3), c (rank 4)
    out = normalize(_run(), "rank")["q1"]
    assert dict(out) == pytest.approx({"a": 1.0, "b": 0.75, "d": 0.5, "c": 0.25}, abs=1e-15)


@pytest.mark.parametrize(
    ("method", "expected"),
    [("minmax", 1.0), ("zscore", 0.0), ("sum", 1 / 3), ("rank", None)],
)
def test_constant_scores_are_finite(method: str, expected: float | None) -> None:
    out = normalize(_run({"x": 2.5, "y": 2.5, "z": 2.5}), method)["q1"]
    assert all(math.isfinite(v) for v in out.values())
    if expected is not None:
        assert list(out.values()) == pytest.approx([expected] * 3, abs=1e-15)


@pytest.mark.parametrize("method", list(Normalization))
def test_single_document_and_empty_lists(method: Normalization) -> None:
    run = Run({"q1": {"only": -3.0}, "q2": {}}, name="r")
    out = normalize(run, method)
    assert len(out["q1"]) == 1 and math.isfinite(out["q1"]["only"])
    assert dict(out["q2"]) == {}


def test_depth_cuts_in_trec_eval_order_before_normalising() -> None:
    # top 3 in trec_eval order: a (4), b (2), d (1, wins the tie with c by docno)
    out = normalize(_run(), "minmax", depth=3)["q1"]
    assert dict(out) == pytest.approx({"a": 1.0, "b": 1 / 3, "d": 0.0}, abs=1e-15)


@pytest.mark.parametrize("depth", [1, 2, 3, 5, 8, None])
def test_top_documents_equals_trec_order_prefix(depth: int | None) -> None:
    docs = {f"d{i}": float(i % 3) for i in range(7)}
    assert top_documents(docs, depth) == trec_order(docs)[:depth]


def test_input_is_not_mutated_and_name_kept() -> None:
    run = _run()
    before = run.to_dict()
    out = normalize(run, "zscore", depth=2)
    assert run.to_dict() == before
    assert out.name == "r" and out.tag == run.tag


def test_normalize_scores_matches_run_normalisation() -> None:
    ranked = [s for _, s in trec_order(SCORES)]
    assert normalize_scores(ranked, "sum") == pytest.approx([0.75, 0.25, 0.0, 0.0], abs=1e-15)
    assert normalize_scores([], "minmax") == []


@pytest.mark.parametrize("bad", [{"method": "min-max"}, {"depth": 0}, {"depth": 2.5}])
def test_bad_options_raise_input_data_error(bad: dict) -> None:
    with pytest.raises(InputDataError):
        normalize(_run(), **{"method": "minmax", **bad})


@pytest.mark.parametrize("method", ["minmax", "zscore", "sum"])
def test_overflowing_normalisation_is_an_error_naming_the_document(method: str) -> None:
    run = Run({"q1": {"a": 1.0}, "q2": {"x": -1e308, "y": 0.0, "z": 1e308}}, name="r")
    with pytest.raises(ScoreOverflowError) as info:
        normalize(run, method)
    error = info.value
    assert isinstance(error, InputDataError)
    assert (error.query, error.document, error.score) == ("q2", "z", 1e308)  # the top of equals
    assert f"{method} normalisation" in str(error) and "'z'" in str(error)
    assert dict(normalize(run, "rank")["q2"]) == pytest.approx({"z": 1.0, "y": 2 / 3, "x": 1 / 3})
