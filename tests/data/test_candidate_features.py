"""Side features of candidate lists (first-stage scores)."""

from __future__ import annotations

import math

import pytest

from probrank.data.candidates import (
    FIRST_STAGE_FEATURES,
    CandidateList,
    first_stage_rows,
    side_features,
)
from probrank.data.trec import Run
from probrank.exceptions import InputDataError


def test_first_stage_rows_by_hand() -> None:
    rows = first_stage_rows([4.0, 3.0, 2.0])
    expected = [(4.0, 1.0, 0.0), (3.0, 0.5, math.log(2)), (2.0, 0.0, math.log(3))]
    for got, want in zip(rows, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-12)
    assert first_stage_rows([1.0, 1.0])[1][1] == 1.0


def test_from_trec_attaches_scores() -> None:
    run = Run({"q": {"a": 2.0, "b": 5.0}})
    (item,) = CandidateList.from_trec(
        {"q": "x"}, run, {"a": "A", "b": "B"}, first_stage_features=True
    )
    assert item.candidate_ids == ("b", "a") and item.feature_names == FIRST_STAGE_FEATURES
    assert item.features[0][0] == 5.0 and item.features[1][1] == 0.0
    (plain,) = CandidateList.from_trec({"q": "x"}, run, {"a": "A", "b": "B"})
    assert plain.features == () and plain.feature_names == ()


def test_bad_side_features() -> None:
    with pytest.raises(InputDataError, match="need feature_names"):
        CandidateList("q", "x", ["a"], ["A"], features=[[1.0]])
    with pytest.raises(InputDataError, match="finite"):
        CandidateList("q", "x", ["a"], ["A"], features=[[float("nan")]], feature_names=["s"])
    with pytest.raises(InputDataError, match="rows of side features"):
        CandidateList("q", "x", ["a", "b"], ["A", "B"], features=[[1.0]], feature_names=["s"])
    one = CandidateList("q", "x", ["a"], ["A"], features=[[1.0]], feature_names=["s"])
    two = CandidateList("r", "x", ["a"], ["A"])
    with pytest.raises(InputDataError, match="same ones"):
        side_features([one, two])
