"""TREC 2017 LiveQA-Med: 104 consumer health questions with judged MedQuAD answers.

``questions.xml`` holds ``<NLM-QUESTION qid="TQn">`` with ``<Original-Question>`` (``<SUBJECT>``,
``<MESSAGE>``); ``qrels.txt`` lines are ``n grade AnswerID`` with grades ``1-Incorrect`` ..
``4-Excellent``; ``answers.csv`` maps ``AnswerID`` to the answer text. 168 (question, answer)
pairs are graded twice with different grades: the loader keeps the higher grade and counts
them in :attr:`LiveQAMed.duplicates`.
"""

from __future__ import annotations

import csv
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from probrank.data.datasets._xml import parse_xml
from probrank.data.datasets.candidate_lists import CandidateList
from probrank.exceptions import InputDataError

__all__ = ["LiveQAMed", "load_liveqa_med"]


@dataclass(frozen=True)
class LiveQAMed:
    """The loaded collection.

    Attributes:
        lists: One :class:`CandidateList` per question with judged answers.
        duplicates: Number of (question, answer) pairs graded more than once (max kept).
    """

    lists: list[CandidateList]
    duplicates: int


def load_liveqa_med(folder: str | Path, *, threshold: int = 3) -> LiveQAMed:
    """Questions, judged answers and grades of LiveQA-Med.

    Args:
        folder: The ``qa/liveqa-med`` folder.
        threshold: Lowest grade that counts as relevant.

    Returns:
        The lists (question text = subject and message of the original question) and the
        number of duplicate judgements; a :class:`UserWarning` says how many were merged.

    Raises:
        InputDataError: a missing file, malformed XML, a malformed qrels line or a judged
            answer without a text.
    """
    folder = Path(folder)
    questions = {}
    for item in parse_xml(folder / "questions.xml").iter("NLM-QUESTION"):
        qid = item.get("qid", "")
        original = item.find("Original-Question")
        if not qid.startswith("TQ") or original is None:
            raise InputDataError(
                f"<NLM-QUESTION qid={qid!r}> needs a TQn qid and <Original-Question>",
                path=folder / "questions.xml",
            )
        parts = [" ".join("".join(e.itertext()).split()) for e in original]
        questions[qid[2:]] = " ".join(p for p in parts if p)
    grades: dict[str, dict[str, int]] = {}
    duplicates = 0
    qrels = folder / "qrels.txt"
    if not qrels.is_file():
        raise InputDataError("no such file", path=qrels)
    with open(qrels, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            grade = fields[1].split("-", 1)[0] if len(fields) == 3 else ""
            if len(fields) != 3 or not grade.isdigit() or fields[0] not in questions:
                raise InputDataError(
                    f"expected 'n grade AnswerID' with a known question, got {line.strip()!r}",
                    path=qrels,
                    line=number,
                )
            judged = grades.setdefault(fields[0], {})
            if fields[2] in judged:
                duplicates += 1
            judged[fields[2]] = max(judged.get(fields[2], 0), int(grade))
    answers_path = folder / "answers.csv"
    if not answers_path.is_file():
        raise InputDataError("no such file", path=answers_path)
    csv.field_size_limit(sys.maxsize)
    with open(answers_path, encoding="utf-8", newline="") as handle:
        answers = {row["AnswerID"]: row["Answer"] for row in csv.DictReader(handle)}
    lists = []
    for n, judged in grades.items():
        ids = sorted(judged)
        missing = [a for a in ids if a not in answers]
        if missing:
            raise InputDataError(f"judged answer {missing[0]!r} has no text", path=answers_path)
        lists.append(
            CandidateList(
                qid=f"TQ{n}",
                query=questions[n],
                candidate_ids=tuple(ids),
                candidates=tuple(" ".join(answers[a].split()) for a in ids),
                labels=tuple(int(judged[a] >= threshold) for a in ids),
                grades=tuple(judged[a] for a in ids),
            )
        )
    if duplicates:
        warnings.warn(
            f"{qrels}: {duplicates} (question, answer) pairs graded more than once; kept the max",
            UserWarning,
            stacklevel=2,
        )
    return LiveQAMed(lists=lists, duplicates=duplicates)
