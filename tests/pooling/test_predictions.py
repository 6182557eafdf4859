"""The predictions file of ``probrank pool next --predictions``: round trip, batches, refusals,
and the check read from it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from probrank.data.trec import Qrels
from probrank.exceptions import InputDataError
from probrank.pooling.checks import check_explored
from probrank.pooling.predictions import append_predictions, check_predictions, read_predictions


def test_batches_round_trip_and_the_newest_prediction_counts(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    assert read_predictions(path) == [] and append_predictions(path, {}) == 0
    assert not path.exists()  # nothing explored: no file
    first = {("1", "a"): np.array([0.1, 0.3]), ("1", "b"): np.array([0.2, 0.2])}
    second = {("1", "a"): np.array([0.6, 0.8, 0.7]), ("2", "c"): np.array([0.5, 0.1, 0.3])}
    assert append_predictions(path, first) == 2
    assert append_predictions(path, second) == 2
    read = read_predictions(path)
    assert [(p.batch, p.topic, p.doc) for p in read] == [
        (1, "1", "a"), (1, "1", "b"), (2, "1", "a"), (2, "2", "c")
    ]  # fmt: skip
    assert np.array_equal(read[2].draws, second[("1", "a")])  # floats exactly as written
    judged = Qrels({"1": {"a": 2, "b": 0}, "2": {"c": -1}})  # c: pooled, not judged
    check = check_predictions(read, judged, level=2, seed=3)
    # "a" with its newest prediction (batch 2), "b" from batch 1; "c" left out
    direct = check_explored(
        [
            (np.array([[0.2, 0.2]]).T, np.array([False])),
            (second[("1", "a")][:, None], np.array([True])),
        ],
        seed=3,
    )
    assert check == direct
    assert check.documents == 2 and check.found == 1
    assert check.expected == pytest.approx(0.2 + 0.7)
    assert check_predictions(read, Qrels({"3": {"x": 1}})) is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not a JSON line"),
        ('{"batch": 1, "topic": "1", "doc": "a"}', "batch, topic, doc and draws"),
        ('{"batch": 0, "topic": "1", "doc": "a", "draws": [0.1]}', "positive integer"),
        ('{"batch": true, "topic": "1", "doc": "a", "draws": [0.1]}', "positive integer"),
        ('{"batch": 1, "topic": "1 2", "doc": "a", "draws": [0.1]}', "without spaces"),
        ('{"batch": 1, "topic": "1", "doc": "a", "draws": []}', "probabilities"),
        ('{"batch": 1, "topic": "1", "doc": "a", "draws": [NaN]}', "probabilities"),
        ('{"batch": 1, "topic": "1", "doc": "a", "draws": [0.1, "x"]}', "probabilities"),
    ],
)
def test_a_file_of_another_kind_is_refused_and_kept(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputDataError, match=message):
        read_predictions(path)
    with pytest.raises(InputDataError, match=message):
        append_predictions(path, {("1", "b"): np.array([0.5])})
    assert path.read_text() == line + "\n"


def test_a_batch_with_two_numbers_of_draws_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(
        '{"batch": 1, "topic": "1", "doc": "a", "draws": [0.1, 0.2]}\n'
        '{"batch": 1, "topic": "1", "doc": "b", "draws": [0.1]}\n'
    )
    with pytest.raises(InputDataError, match=":2: batch 1 has another number of draws"):
        read_predictions(path)
