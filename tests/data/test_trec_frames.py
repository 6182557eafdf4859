"""Run and Qrels to and from pandas DataFrames (PyTerrier and ir-measures columns)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from probrank.data.trec import Qrels, Run, trec_order
from probrank.evaluation.measures import evaluate
from probrank.exceptions import InputDataError


def _run() -> Run:
    # near-ties beyond float32 and a docno tie-break: the frame must keep trec_eval's order
    return Run(
        {"q1": {"d1": 3.2800000000000002, "d2": 3.28, "d3": 3.28, "d4": -1e300}, "q2": {"x": 0.5}},
        name="r",
    )


def test_run_frame_is_in_trec_eval_order_with_pyterrier_ranks() -> None:
    frame = _run().to_dataframe()
    assert list(frame.columns) == ["qid", "docno", "score", "rank"]
    q1 = frame[frame.qid == "q1"]
    assert list(q1.docno) == [d for d, _ in trec_order(_run().as_dict()["q1"])]
    assert list(q1.docno) == ["d1", "d3", "d2", "d4"]
    assert list(q1["rank"]) == [0, 1, 2, 3]
    assert q1.score.iloc[0] == 3.2800000000000002 and q1.score.iloc[1] == 3.28
    assert list(_run().to_dataframe(depth=2).docno) == ["d1", "d3", "x"]
    with pytest.raises(InputDataError, match="positive"):
        _run().to_dataframe(depth=0)


def test_run_round_trip_is_exact_and_evaluates_the_same(tmp_path) -> None:
    run = _run()
    back = Run.from_dataframe(run.to_dataframe(), name="r")
    assert back == run and back.as_dict()["q1"]["d1"] == 3.2800000000000002
    qrels = Qrels({"q1": {"d2": 1, "d3": 0, "d4": 2}, "q2": {"x": 1, "y": 1}})
    measures = ["AP", "nDCG@10", "P@2"]
    assert evaluate(qrels, back, measures) == evaluate(qrels, run, measures)
    # the frame read back through a file agrees too
    run.write(tmp_path / "r.run")
    assert Run.read(tmp_path / "r.run") == back


def test_qrels_round_trip_and_ir_measures_columns() -> None:
    qrels = Qrels({"q1": {"a": 2, "b": -1, "c": 0}, "q2": {"d": 1}})
    frame = qrels.to_dataframe()
    assert list(frame.columns) == ["qid", "docno", "label"]
    assert frame.label.dtype.kind == "i"
    assert Qrels.from_dataframe(frame) == qrels
    renamed = frame.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    assert Qrels.from_dataframe(renamed) == qrels
    graded = pd.DataFrame({"qid": [1, 1], "docno": ["a", "b"], "label": [3.0, 0.0]})
    assert Qrels.from_dataframe(graded).as_dict() == {"1": {"a": 3, "b": 0}}


def test_run_from_ir_measures_and_pyterrier_frames() -> None:
    frame = pd.DataFrame(
        {"query_id": ["1", "1", "2"], "doc_id": ["a", "b", "a"], "score": [1, 2.5, 0.0]}
    )
    run = Run.from_dataframe(frame, name="m", tag="t")
    assert run.as_dict() == {"1": {"a": 1.0, "b": 2.5}, "2": {"a": 0.0}}
    assert (run.name, run.tag) == ("m", "t")
    assert all(isinstance(s, float) for s in run.as_dict()["1"].values())
    # PyTerrier's own results (rank and extra columns ignored; qids may be ints)
    pt = pd.DataFrame(
        {
            "qid": [7, 7],
            "query": ["x", "x"],
            "docno": ["d", "e"],
            "score": [0.1, 0.2],
            "rank": [1, 0],
        }
    )
    assert Run.from_dataframe(pt).ranking("7") == [("e", 0.2), ("d", 0.1)]


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"qid": ["1"], "score": [1.0]}), "no column 'docno'"),
        (pd.DataFrame({"qid": [], "docno": [], "score": []}), "no rows"),
        (pd.DataFrame({"qid": ["1", None], "docno": ["a", "b"], "score": [1, 2]}), "missing"),
        (pd.DataFrame({"qid": ["1"], "docno": [math.nan], "score": [1.0]}), "missing"),
        (pd.DataFrame({"qid": ["1"], "docno": ["a"], "score": [math.inf]}), "finite"),
        (pd.DataFrame({"qid": ["1"], "docno": ["a"], "score": [math.nan]}), "finite"),
        (pd.DataFrame({"qid": ["1"], "docno": ["a"], "score": ["1.0"]}), "not a number"),
        (pd.DataFrame({"qid": ["1"], "docno": ["a"], "score": [True]}), "not a number"),
        (
            pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "a"], "score": [1, 2]}, index=[5, 9]),
            r"twice.*rows 5 and 9",
        ),
        (
            pd.DataFrame({"qid": ["1"], "docno": pd.array([pd.NA], dtype="string"), "score": [1]}),
            "missing",
        ),
        ([("1", "a", 1.0)], "pandas DataFrame"),
    ],
)
def test_bad_run_frames_are_one_clear_error(frame, message) -> None:
    with pytest.raises(InputDataError, match=message):
        Run.from_dataframe(frame)


@pytest.mark.parametrize(
    ("labels", "message"),
    [([2.5], "not an integer"), (["1"], "not an integer"), ([math.nan], "not an integer")],
)
def test_bad_qrels_grades(labels, message) -> None:
    frame = pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": labels})
    with pytest.raises(InputDataError, match=message):
        Qrels.from_dataframe(frame)


def test_the_frame_is_not_modified() -> None:
    frame = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "score": [1.0, 2.0]})
    copy = frame.copy()
    Run.from_dataframe(frame)
    pd.testing.assert_frame_equal(frame, copy)
