from __future__ import annotations

from pathlib import Path

import pytest

from probrank.data.datasets.mediqa import load_mediqa
from probrank.exceptions import InputDataError

XML = """<?xml version="1.0" encoding="UTF-8"?>
<Set>
  <Question QID="1">
    <QuestionText>What is flu?</QuestionText>
    <AnswerList>
      <Answer AID="1_Answer1" SystemRank="1" ReferenceRank="2" ReferenceScore="2">
        <AnswerText>Flu is a cold.</AnswerText></Answer>
      <Answer AID="1_Answer2" SystemRank="2" ReferenceRank="1" ReferenceScore="4">
        <AnswerText>Influenza is a viral infection.</AnswerText></Answer>
      <Answer AID="1_Answer3" SystemRank="3" ReferenceRank="3" ReferenceScore="3">
        <AnswerText>It spreads by droplets.</AnswerText></Answer>
    </AnswerList>
  </Question>
</Set>
"""


def _write(folder: Path, text: str = XML) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in (
        "train-liveqamed.xml",
        "train-alexa.xml",
        "validation.xml",
        "test-with-labels.xml",
    ):
        (folder / name).write_text(text)
    return folder


def test_reference_score_three_or_more_is_relevant(tmp_path: Path) -> None:
    lists = load_mediqa(_write(tmp_path), "test")
    assert len(lists) == 1
    item = lists[0]
    assert item.qid == "test:1" and item.query == "What is flu?"
    assert item.grades == (2, 4, 3) and item.labels == (0, 1, 1)
    train = load_mediqa(tmp_path, "train")
    assert [t.qid for t in train] == ["train-liveqamed:1", "train-alexa:1"]


def test_malformed_xml_names_file_and_element(tmp_path: Path) -> None:
    _write(tmp_path, XML.replace("</AnswerList>", ""))
    with pytest.raises(InputDataError, match=r"test-with-labels\.xml.*malformed XML"):
        load_mediqa(tmp_path, "test")
    _write(tmp_path, XML.replace('ReferenceScore="4"', 'ReferenceScore="good"'))
    with pytest.raises(InputDataError, match=r"1_Answer2.*ReferenceScore"):
        load_mediqa(tmp_path, "validation")
    _write(tmp_path, XML.replace("<QuestionText>What is flu?</QuestionText>", ""))
    with pytest.raises(InputDataError, match=r"QuestionText.*QID='1'"):
        load_mediqa(tmp_path, "validation")
    with pytest.raises(InputDataError, match="split"):
        load_mediqa(tmp_path, "dev")


def test_real_mediqa_label_balance(shared_data: Path) -> None:
    folder = shared_data / "qa" / "mediqa2019-task3"
    for split, questions, rate in (
        ("train", 208, 0.37),
        ("validation", 25, 0.40),
        ("test", 150, 0.52),
    ):
        lists = load_mediqa(folder, split)
        labels = [y for item in lists for y in item.labels]
        assert len(lists) == questions
        assert abs(sum(labels) / len(labels) - rate) < 0.01
