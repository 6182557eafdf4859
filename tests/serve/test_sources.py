"""Where a judging server's questions and ranker come from, and the project's checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probrank.data.candidates import CandidateList
from probrank.exceptions import InputDataError
from probrank.models.interactive import InteractiveRanker
from probrank.serve.errors import NotFound
from probrank.serve.project import Project, questions_digest
from probrank.serve.sources import (
    MAX_CANDIDATES,
    build_ranker,
    load_questions,
    load_trec_questions,
)


def test_csv_and_jsonl_give_the_same_questions(tmp_path: Path) -> None:
    rows = ["qid,query,candidate_id,candidate"]
    records = []
    for q in range(2):
        candidates = [{"id": f"d{j}", "text": f"answer {q}-{j}, with a comma"} for j in range(3)]
        records.append({"qid": f"0{q}", "query": f"question {q}", "candidates": candidates})
        rows += [f'0{q},question {q},{c["id"]},"{c["text"]}"' for c in candidates]
    (tmp_path / "q.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    from_csv, name = load_questions(str(tmp_path / "q.csv"))
    from_jsonl, _ = load_questions(str(tmp_path / "q.jsonl"))
    assert name.endswith("q.csv")
    assert [item.qid for item in from_csv] == ["00", "01"]  # ids stay text: "00", not 0
    assert questions_digest(from_csv) == questions_digest(from_jsonl)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("qid,query,candidate\n1,q,a\n", r"missing columns \['candidate_id'\]"),
        ("qid,query,candidate_id,candidate\n1,q,a,x\n1,other,b,y\n", "row 3: query '1' has two"),
        (
            "qid,query,candidate_id,candidate,grade\n1,q,a,x,high\n",
            "row 2: 'grade' must be an integer, got 'high'",
        ),
    ],
)
def test_bad_csv_names_the_file_and_row(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputDataError, match=message) as error:
        load_questions(str(path))
    assert str(error.value).startswith(f"{path}: ")


def test_unknown_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match=r"data set \(mediqa, liveqa-med\) or a .jsonl"):
        load_questions(str(tmp_path / "q.tsv"))
    with pytest.raises(InputDataError, match="no such file"):
        load_questions(str(tmp_path / "missing.csv"))


def test_trec_topics_run_and_documents(tmp_path: Path) -> None:
    (tmp_path / "topics.txt").write_text("401\tfirst topic\n402\tsecond topic\n")
    lines = [f"401 Q0 D{j} {j + 1} {10 - j} run" for j in range(5)]
    lines += [f"402 Q0 D{j} {j + 1} {5 - j} run" for j in range(3, 7)]
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    docs = [{"docno": f"D{j}", "text": f"<p>document {j}</p>"} for j in range(7)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    lists, name = load_trec_questions(
        tmp_path / "topics.txt", tmp_path / "run.txt", tmp_path / "docs.jsonl", depth=3
    )
    assert name.endswith("run.txt")
    assert [(item.qid, item.query) for item in lists] == [
        ("401", "first topic"),
        ("402", "second topic"),
    ]
    assert lists[0].candidate_ids == ("D0", "D1", "D2")  # the run's top 3 by score
    assert lists[1].candidates[0] == "<p>document 3</p>"  # kept as text, escaped on the page
    (tmp_path / "few.jsonl").write_text(json.dumps(docs[0]) + "\n")
    with pytest.raises(InputDataError, match="D1"):
        load_trec_questions(
            tmp_path / "topics.txt", tmp_path / "run.txt", tmp_path / "few.jsonl", depth=3
        )
    with pytest.raises(InputDataError, match="--depth must be an integer >= 2"):
        load_trec_questions("t", "r", "d", depth=1)


def test_project_checks_ids_and_sizes(tiny_encoder) -> None:
    ranker = build_ranker(posterior="gppl", encoder=tiny_encoder)  # needs no warm start
    assert isinstance(ranker, InteractiveRanker) and not ranker.fitted
    good = CandidateList("q1", "question", ["a", "b"], ["x", "y"])
    project = Project([good], ranker, source="test")
    assert project.question("q1") is good and project.next_qid("q1") == "q1"
    with pytest.raises(NotFound, match="no question 'q2' in test"):
        project.question("q2")
    cases = [
        ([], "no questions"),
        ([good, good], "appears twice"),
        ([CandidateList("q 1", "question", ["a", "b"], ["x", "y"])], "question id 'q 1'"),
        ([CandidateList("q1", "question", ["a b", "c"], ["x", "y"])], "candidate id 'a b'"),
        ([CandidateList("q1", "question", ["a"], ["x"])], "has 1 candidate"),
    ]
    for questions, message in cases:
        with pytest.raises(InputDataError, match=message):
            Project(questions, ranker, source="test")
    with pytest.raises(InputDataError, match="rounds must be a positive integer"):
        Project([good], ranker, source="test", rounds=0)
    with pytest.raises(InputDataError, match="strategy must be one of"):
        Project([good], ranker, source="test", strategy="best")


@pytest.mark.integration
def test_liveqa_med_questions(shared_data: Path) -> None:
    questions, name = load_questions("liveqa-med")
    assert name == "liveqa-med" and len(questions) == 78  # as the interactive experiments
    assert all(2 <= len(q) <= MAX_CANDIDATES and max(q.grades) >= 3 for q in questions)
    assert load_questions("liveqa")[0] == questions  # the registry's alias
