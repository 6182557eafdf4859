"""TREC 2017 LiveQA-Med: 104 consumer health questions with judged MedQuAD answers.

``questions.xml`` holds ``<NLM-QUESTION qid="TQn">`` with ``<Original-Question>`` (``<SUBJECT>``,
``<MESSAGE>``); ``qrels.txt`` lines are ``n grade AnswerID`` with grades ``1-Incorrect`` ..
``4-Excellent``; ``answers.csv`` maps ``AnswerID`` to the answer text. 168 (question, answer)
pairs are graded twice with different grades: the loader keeps the higher grade and counts
them in :attr:`LiveQAMed.duplicates`.
"""

from __future__ import annotations

import csv
import io
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from probrank.data._io import read_text_lines
from probrank.data.datasets._xml import children, parse_xml
from probrank.data.datasets.candidate_lists import CandidateList
from probrank.exceptions import InputDataError

__all__ = ["LiveQAMed", "candidate_lists", "load_liveqa_med"]


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
        InputDataError: a missing, empty or non-UTF-8 file or a folder in its place, malformed
            XML or a root without ``<NLM-QUESTION>`` elements, a malformed qrels line, an
            ``answers.csv`` without its columns, or a judged answer without a text.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputDataError("no such folder", path=folder)
    questions = {}
    path = folder / "questions.xml"
    for item in children(parse_xml(path), "NLM-QUESTION", path, "a LiveQA-Med questions file"):
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
    for number, line in enumerate(read_text_lines(qrels), start=1):
        fields = line.split()
        if not fields:
            continue
        grade = fields[1].split("-", 1)[0] if len(fields) == 3 else ""
        if (
            len(fields) != 3
            or not (grade.isascii() and grade.isdigit())
            or fields[0] not in questions
        ):
            raise InputDataError(
                f"expected 'n grade AnswerID' with a known question, got {line.strip()!r}",
                path=qrels,
                line=number,
            )
        judged = grades.setdefault(fields[0], {})
        if fields[2] in judged:
            duplicates += 1
        judged[fields[2]] = max(judged.get(fields[2], 0), int(grade))
    if not grades:
        raise InputDataError("no judgements", path=qrels)
    answers_path = folder / "answers.csv"
    answers = _read_answers(answers_path)
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


_ANSWER_COLUMNS = ("AnswerID", "Answer")


def _read_answers(path: Path) -> dict[str, str]:
    """``{AnswerID: Answer}`` of ``answers.csv`` (header ``AnswerID,Answer``)."""
    text = "\n".join(read_text_lines(path))
    csv.field_size_limit(sys.maxsize)
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    try:
        header = reader.fieldnames or []
        missing = [c for c in _ANSWER_COLUMNS if c not in header]
        if missing:
            raise InputDataError(
                f"missing column {missing[0]!r} (header {header!r}, expected AnswerID,Answer)",
                path=path,
                line=1,
            )
        answers = {}
        for row in reader:
            if row["AnswerID"] is None or row["Answer"] is None:
                raise InputDataError(
                    "expected the 2 columns AnswerID,Answer", path=path, line=reader.line_num
                )
            answers[row["AnswerID"]] = row["Answer"]
    except csv.Error as exc:
        raise InputDataError(f"malformed CSV: {exc}", path=path, line=reader.line_num) from None
    if not answers:
        raise InputDataError("no answers", path=path)
    return answers


def candidate_lists(folder: str | Path, split: str = "test") -> list[CandidateList]:
    """The registry's loader (:mod:`probrank.data.datasets`): the lists of
    :func:`load_liveqa_med`, without its note on merged duplicate grades (the higher grade is
    kept). The registry checks ``split`` (``"test"`` only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return list(load_liveqa_med(folder).lists)
