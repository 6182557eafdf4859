"""MEDIQA 2019 Task 3 (question answering): questions with CHiQA's answers judged 1..4.

Each ``<Question QID>`` holds ``<QuestionText>`` and ``<AnswerList>`` of ``<Answer AID
SystemRank ReferenceRank ReferenceScore>`` elements with ``<AnswerURL>`` and ``<AnswerText>``;
``ReferenceScore`` 3 or 4 means a correct answer. Parsed with defusedxml
(:mod:`probrank.data.datasets._xml`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import Element

from probrank.data.datasets._xml import children, parse_xml
from probrank.data.datasets.candidate_lists import CandidateList
from probrank.exceptions import InputDataError

__all__ = ["MEDIQA_FILES", "MediqaList", "candidate_lists", "load_mediqa"]

MEDIQA_FILES = {
    "train": ("train-liveqamed.xml", "train-alexa.xml"),
    "validation": ("validation.xml",),
    "test": ("test-with-labels.xml",),
}
"""Files of each split inside ``qa/mediqa2019-task3``."""


@dataclass(frozen=True)
class MediqaList(CandidateList):
    """A MEDIQA question's answers with CHiQA's metadata.

    Attributes:
        system_ranks: `n` CHiQA ranks (``SystemRank``).
        reference_ranks: `n` reference ranks (``ReferenceRank``).
        urls: `n` answer URLs (``AnswerURL``; "" when absent).
    """

    system_ranks: tuple[int, ...]
    reference_ranks: tuple[int, ...]
    urls: tuple[str, ...]


def _int_attribute(answer: Element, name: str, path: Path, where: str) -> int:
    value = (answer.get(name) or "").strip()
    digits = value.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()):
        raise InputDataError(f"{where}: {name}={value!r} is not an integer", path=path)
    return int(value)


def _text(element: Element, tag: str, path: Path, where: str) -> str:
    child = element.find(tag)
    if child is None:
        raise InputDataError(f"<{tag}> missing in {where}", path=path)
    return " ".join("".join(child.itertext()).split())


def _mediqa_file(path: Path, threshold: int, prefix: str) -> list[MediqaList]:
    lists = []
    for question in children(parse_xml(path), "Question", path, "a MEDIQA Task 3 file"):
        qid = question.get("QID")
        if qid is None:
            raise InputDataError("<Question> without QID", path=path)
        where = f"<Question QID={qid!r}>"
        query = _text(question, "QuestionText", path, where)
        ids, texts, grades, system, reference, urls = [], [], [], [], [], []
        for answer in question.iter("Answer"):
            aid, score = answer.get("AID"), answer.get("ReferenceScore")
            if aid is None or score is None or not (score.isascii() and score.strip().isdigit()):
                raise InputDataError(
                    f"<Answer AID={aid!r} ReferenceScore={score!r}> in {where}: expected an AID "
                    "and an integer ReferenceScore",
                    path=path,
                )
            ids.append(aid)
            texts.append(_text(answer, "AnswerText", path, f"<Answer AID={aid!r}>"))
            grades.append(int(score))
            system.append(_int_attribute(answer, "SystemRank", path, f"<Answer AID={aid!r}>"))
            reference.append(_int_attribute(answer, "ReferenceRank", path, f"<Answer AID={aid!r}>"))
            url = answer.find("AnswerURL")
            urls.append((url.text or "").strip() if url is not None else "")
        if ids:
            lists.append(
                MediqaList(
                    qid=f"{prefix}{qid}",
                    query=query,
                    candidate_ids=tuple(ids),
                    candidates=tuple(texts),
                    labels=tuple(int(g >= threshold) for g in grades),
                    grades=tuple(grades),
                    system_ranks=tuple(system),
                    reference_ranks=tuple(reference),
                    urls=tuple(urls),
                )
            )
    if not lists:
        raise InputDataError("no <Question> has an <Answer>", path=path)
    return lists


def load_mediqa(
    folder: str | Path, split: str = "train", *, threshold: int = 3
) -> list[MediqaList]:
    """Question lists of one MEDIQA Task 3 split.

    Args:
        folder: The ``qa/mediqa2019-task3`` folder.
        split: ``"train"`` (both training sets), ``"validation"`` or ``"test"``.
        threshold: Lowest ``ReferenceScore`` that counts as relevant.

    Returns:
        One :class:`MediqaList` per question with at least one answer; qids are prefixed by
        the file stem (``train-alexa:12``) so that the two training sets do not collide.

    Raises:
        InputDataError: unknown split, a missing, empty or malformed file, a root without
            ``<Question>`` elements, no answer at all, or a malformed element.
    """
    if split not in MEDIQA_FILES:
        raise InputDataError(f"split must be one of {', '.join(MEDIQA_FILES)}, got {split!r}")
    folder = Path(folder)
    lists = []
    for name in MEDIQA_FILES[split]:
        path = folder / name
        lists += _mediqa_file(path, threshold, path.stem.removesuffix("-with-labels") + ":")
    return lists


def candidate_lists(folder: str | Path, split: str) -> list[CandidateList]:
    """The registry's loader (:mod:`probrank.data.datasets`): :func:`load_mediqa`."""
    return list(load_mediqa(folder, split))
