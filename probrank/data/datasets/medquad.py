"""MedQuAD: 47k medical question-answer pairs from 12 NIH sources, one XML file per document.

Answers of the A.D.A.M., MedlinePlus drugs and herbs folders were removed for copyright; such
pairs are skipped unless ``include_empty_answers=True``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from probrank._progress import progress_bar
from probrank.data.datasets._xml import parse_xml
from probrank.exceptions import InputDataError

__all__ = ["DOCUMENT_ROOTS", "MedQuADPair", "read_medquad"]

DOCUMENT_ROOTS = ("Document", "DiseaseFile", "doc")
"""Root elements of MedQuAD's documents: ``<Document>`` (11,269 of them), ``<DiseaseFile>``
(one CDC file, same children) and ``<doc>`` (4 NINDS files in another, lower-case schema
without ``<QAPair>``, which therefore add no pair)."""


@dataclass(frozen=True)
class MedQuADPair:
    """One question-answer pair and the document it comes from."""

    qid: str
    question: str
    answer: str
    qtype: str
    focus: str
    source: str
    url: str


def read_medquad(
    root: str | os.PathLike[str],
    *,
    include_empty_answers: bool = False,
    progress: bool = True,
) -> list[MedQuADPair]:
    """Read every ``*.xml`` document under ``root`` (sorted by path, so the order is stable).

    Raises:
        InputDataError: ``root`` is not a folder or holds no XML file, a document is empty,
            malformed or not UTF-8, its root element is not a MedQuAD document's, or no
            document has a question with an answer (the message names the file).
    """
    root = Path(root)
    if not root.is_dir():
        raise InputDataError("not a folder" if root.exists() else "no such folder", path=root)
    files = sorted(root.rglob("*.xml"))
    if not files:
        raise InputDataError("no MedQuAD XML documents found", path=root)
    pairs = []
    # the bar appears after a second only: a file that fails at once leaves stderr to the error
    bar = progress_bar(
        files, desc="MedQuAD", unit="doc", disable=not progress, leave=False, delay=1.0
    )
    for path in bar:
        document = parse_xml(path)
        if document.tag not in DOCUMENT_ROOTS:
            raise InputDataError(
                f"root element <{document.tag}> is not a MedQuAD document's "
                f"({', '.join(f'<{r}>' for r in DOCUMENT_ROOTS)})",
                path=path,
            )
        focus_element = document.find("Focus")
        focus = (focus_element.text or "").strip() if focus_element is not None else ""
        for pair in document.iter("QAPair"):
            question = pair.find("Question")
            if question is None or not (question.text or "").strip():
                raise InputDataError(
                    f'<QAPair pid="{pair.get("pid")}"> has no <Question>', path=path
                )
            answer_element = pair.find("Answer")
            answer = (
                " ".join("".join(answer_element.itertext()).split())
                if answer_element is not None
                else ""
            )
            if not answer and not include_empty_answers:
                continue
            pairs.append(
                MedQuADPair(
                    qid=question.get("qid", ""),
                    question=" ".join((question.text or "").split()),
                    answer=answer,
                    qtype=question.get("qtype", ""),
                    focus=focus,
                    source=document.get("source", ""),
                    url=document.get("url", ""),
                )
            )
    if not pairs:
        what = "question-answer pair" if include_empty_answers else "question with an answer"
        raise InputDataError(f"no {what} in {len(files)} documents", path=root)
    return pairs
