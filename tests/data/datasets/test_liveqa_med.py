from __future__ import annotations

from pathlib import Path

import pytest

from probrank.data.datasets.liveqa_med import load_liveqa_med
from probrank.exceptions import InputDataError

QUESTIONS = """<?xml version="1.0" encoding="UTF-8"?>
<LiveQA>
  <NLM-QUESTION qid="TQ1"><Original-Question qfile="1.txt"><SUBJECT>Noonan</SUBJECT>
    <MESSAGE>What causes it?</MESSAGE></Original-Question></NLM-QUESTION>
  <NLM-QUESTION qid="TQ2"><Original-Question qfile="2.txt"><SUBJECT>Flu</SUBJECT>
    <MESSAGE>Is it bad?</MESSAGE></Original-Question></NLM-QUESTION>
</LiveQA>
"""


def _write(folder: Path, qrels: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.xml").write_text(QUESTIONS)
    (folder / "qrels.txt").write_text(qrels)
    (folder / "answers.csv").write_text(
        'AnswerID,Answer\nA1,"Genes, mostly."\nA2,"Rest.\nDrink water."\nA3,No idea\n'
    )
    return folder


def test_duplicates_keep_the_highest_grade_and_are_reported(tmp_path: Path) -> None:
    folder = _write(
        tmp_path, "1 1-Incorrect A1\n1 4-Excellent A1\n1 2-Related A3\n2 3-Correct A2\n"
    )
    with pytest.warns(UserWarning, match=r"1 \(question, answer\) pairs graded more than once"):
        data = load_liveqa_med(folder)
    assert data.duplicates == 1
    first, second = data.lists
    assert first.query == "Noonan What causes it?"
    assert first.candidate_ids == ("A1", "A3") and first.grades == (4, 2) and first.labels == (1, 0)
    assert second.candidates == ("Rest. Drink water.",) and second.labels == (1,)


def test_bad_qrels_line_and_missing_answer(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match=r"qrels\.txt:2"):
        load_liveqa_med(_write(tmp_path, "1 1-Incorrect A1\n9 2-Related A3\n"))
    with pytest.raises(InputDataError, match="'A9' has no text"):
        load_liveqa_med(_write(tmp_path, "1 1-Incorrect A9\n"))


def test_real_liveqa_med(shared_data: Path) -> None:
    with pytest.warns(UserWarning, match="168"):
        data = load_liveqa_med(shared_data / "qa" / "liveqa-med")
    assert data.duplicates == 168
    assert sum(max(item.grades) >= 3 for item in data.lists) == 78
    assert sum(max(item.grades) == 4 for item in data.lists) == 50
