"""Candidate lists from DataFrames, JSONL and TREC files, each validated with a clear error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from probrank.data.candidates import CandidateList, split_lists, write_jsonl
from probrank.data.datasets import candidate_lists
from probrank.data.datasets.mediqa import MediqaList
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError


def test_loaders_share_the_one_class_and_labels_are_optional() -> None:
    assert candidate_lists.CandidateList is CandidateList
    plain = CandidateList("q1", "query", ["a", "b"], ["text a", "text b"])
    assert plain.labels == () and plain.grades == () and not plain.has_labels
    labelled = CandidateList("q1", "query", ("a", "b"), ("x", "y"), (1, 0))
    assert labelled.grades == (1, 0) and labelled.has_labels
    graded = CandidateList("q1", "query", ("a", "b", "c"), ("x", "y", "z"), grades=(0, 2, 1))
    assert graded.labels == (0, 1, 1)
    mediqa = MediqaList(
        "t:1", "q", ("a", "b"), ("x", "y"), (1, 0), (4, 1), (1, 2), (2, 1), ("", "")
    )
    assert isinstance(mediqa, CandidateList) and mediqa.system_ranks == (1, 2)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("q", "t", (), ()), "has no candidates"),
        (("q", "t", ("a",), ("x", "y")), "1 candidate ids but 2 candidate texts"),
        (("q", "t", ("a", "a"), ("x", "y")), "candidate id 'a' appears twice"),
        (("q", "t", ("a", "b"), ("x", "y"), (1, 2)), "labels must be 0 or 1, got 2"),
        (("q", "t", ("a", "b"), ("x", "y"), (1, 0.5)), "label must be an integer, got 0.5"),
        (("q", "t", ("a", "b"), ("x", None)), "the text of candidate 'b' must be a string"),
        (("q", None, ("a",), ("x",)), "the query must be a string"),
        (("q", "t", ("a", "b"), ("x", "y"), (1,)), "2 candidates, 1 labels"),
    ],
)
def test_bad_lists_are_refused(arguments: tuple, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        CandidateList(*arguments)


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "qid": [7, 7, 3, 7],
            "query": ["flu", "flu", "knee", "flu"],
            "candidate_id": ["a", "b", "c", "d"],
            "candidate": ["fever", "cough", "pain", "rest"],
            "grade": [2, 0, 1, 1],
        },
        index=[10, 11, 12, 13],
    )


def test_from_dataframe_groups_rows_in_order_and_derives_labels_from_grades() -> None:
    frame = _frame()
    before = frame.copy()
    lists = CandidateList.from_dataframe(frame, relevance_level=2)
    pd.testing.assert_frame_equal(frame, before)  # not modified
    assert [item.qid for item in lists] == ["7", "3"]
    first = lists[0]
    assert first.candidate_ids == ("a", "b", "d") and first.candidates == ("fever", "cough", "rest")
    assert first.grades == (2, 0, 1) and first.labels == (1, 0, 0)
    unlabelled = CandidateList.from_dataframe(frame.drop(columns="grade"))
    assert not any(item.has_labels for item in unlabelled)
    labelled = CandidateList.from_dataframe(frame.assign(label=[0, 1, 1, 0]))
    assert labelled[0].labels == (0, 1, 0) and labelled[0].grades == (2, 0, 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns=["candidate"]), "missing columns \\['candidate'\\]"),
        (lambda f: f.iloc[:0], "no rows"),
        (lambda f: f.assign(candidate_id=["a", "a", "c", "d"]), "row 11: candidate 'a' .* row 10"),
        (lambda f: f.assign(query=["flu", "cold", "knee", "flu"]), "row 11: query '7' has two"),
        (lambda f: f.assign(candidate=["x", None, "y", "z"]), "row 11: 'candidate' must be a str"),
        (lambda f: f.assign(grade=[1, 2.5, 1, 1]), "row 11: 'grade' must be an integer"),
        (lambda f: f.assign(label=[1, None, 1, 1]), "row 11: 'label' must be an integer"),
    ],
)
def test_from_dataframe_names_the_bad_row(change, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        CandidateList.from_dataframe(change(_frame()))


def test_jsonl_round_trip_and_gzip(tmp_path: Path) -> None:
    lists = [
        CandidateList("q1", "how to fix sound", ("a", "b"), ("reboot", "no"), (1, 0), (3, 1)),
        CandidateList("q2", "kernel", ("c",), ("update the kernel ✓",)),
    ]
    path = write_jsonl(lists, tmp_path / "lists.jsonl")
    assert CandidateList.from_jsonl(path) == lists
    packed = tmp_path / "lists.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert CandidateList.from_jsonl(packed) == lists


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{bad"], ":1: invalid JSON"),
        (['{"qid": 1, "query": "q"}'], ":1: missing keys \\['candidates'\\]"),
        (['{"qid": 1, "query": "q", "candidates": [{"id": "a"}]}'], "every candidate needs 'text'"),
        (
            ['{"qid": 1, "query": "q", "candidates": [{"id": "a", "text": "x", "label": 1},'
             ' {"id": "b", "text": "y"}]}'],
            "'label' given for some candidates only",
        ),
        (
            ['{"qid": 1, "query": "q", "candidates": [{"id": "a", "text": "x"}]}', "",
             '{"qid": 1, "query": "q", "candidates": [{"id": "b", "text": "y"}]}'],
            ":3: query '1' appears twice \\(first on line 1\\)",
        ),
        ([""], "no candidate lists"),
    ],
)  # fmt: skip
def test_from_jsonl_names_the_line(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputDataError, match=message):
        CandidateList.from_jsonl(path)


def _run() -> Run:
    return Run({"301": {"d1": 1.0, "d2": 3.0, "d3": 2.0, "d4": 0.5}, "302": {"d9": 1.0}}, "bm25")


def test_from_trec_uses_trec_order_depth_qrels_and_a_topics_file(tmp_path: Path) -> None:
    topics = tmp_path / "topics.txt"
    topics.write_text(
        "<top>\n<num> Number: 301\n<title> foreign\n minorities\n<desc> ...\n</top>\n"
        "<top>\n<num> Number: 302\n<title> poliomyelitis\n</top>\n"
    )
    documents = {f"d{i}": f"text {i}" for i in range(1, 10)}
    qrels = Qrels({"301": {"d2": 2, "d1": 1, "d3": -1}})
    lists = CandidateList.from_trec(topics, _run(), documents, qrels, depth=3, relevance_level=2)
    assert [item.qid for item in lists] == ["301", "302"]
    first = lists[0]
    assert first.query == "foreign minorities"
    assert first.candidate_ids == ("d2", "d3", "d1")  # by score, cut at 3
    assert first.candidates == ("text 2", "text 3", "text 1")
    assert first.grades == (2, -1, 1) and first.labels == (1, 0, 0)
    assert lists[1].labels == (0,)  # unjudged: grade 0
    by_function = CandidateList.from_trec(
        {"301": "q", "302": "r"}, _run(), lambda doc: f"text {doc[1:]}", depth=None
    )
    assert len(by_function[0]) == 4 and not by_function[0].has_labels


def test_from_trec_refuses_missing_texts() -> None:
    documents = {"d1": "a", "d2": "b", "d3": "c", "d9": "z"}
    with pytest.raises(InputDataError, match="no topic text for query '302'"):
        CandidateList.from_trec({"301": "q"}, _run(), documents, depth=3)
    with pytest.raises(InputDataError, match="no text for document 'd4' \\(query '301'\\)"):
        CandidateList.from_trec({"301": "q", "302": "r"}, _run(), documents)
    with pytest.raises(InputDataError, match="documents must be a mapping"):
        CandidateList.from_trec({"301": "q", "302": "r"}, _run(), ["a", "b"])  # type: ignore[arg-type]
    with pytest.raises(InputDataError, match="depth must be a positive integer"):
        CandidateList.from_trec({"301": "q"}, _run(), documents, depth=0)


def test_split_lists_is_seeded_disjoint_and_complete() -> None:
    lists = [CandidateList(f"q{i}", "q", ("a",), ("x",), (1,)) for i in range(10)]
    train, val = split_lists(lists, None, 0.3, seed=4)
    again = split_lists(lists, None, 0.3, seed=4)
    assert (train, val) == again
    assert len(val) == 3 and {i.qid for i in train} | {i.qid for i in val} == {
        f"q{i}" for i in range(10)
    }
    assert not {i.qid for i in train} & {i.qid for i in val}
    assert split_lists(lists[:4], lists[4:], 0.3, seed=0) == (lists[:4], lists[4:])
    with pytest.raises(InputDataError, match="at least 2 training lists"):
        split_lists(lists[:1], None, 0.3, seed=0)
    unlabelled = [CandidateList("u", "q", ("a",), ("x",))]
    with pytest.raises(InputDataError, match="list 'u' has no labels"):
        split_lists(unlabelled, None, 0.3, seed=0)
    with pytest.raises(InputDataError, match="query id 'q0' appears twice"):
        split_lists([lists[0], lists[0]], None, 0.3, seed=0)


def test_write_jsonl_output_is_one_object_per_line(tmp_path: Path) -> None:
    item = CandidateList("q1", "query", ("a",), ("x",), (1,), (4,))
    path = write_jsonl([item], tmp_path / "out.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records == [
        {
            "qid": "q1",
            "query": "query",
            "candidates": [{"id": "a", "text": "x", "label": 1, "grade": 4}],
        }
    ]
