"""Questions for the interactive-ranking experiments: candidates, grades, features, utilities.

* LiveQA-Med (``liveqa-med``, TREC 2017 test questions): the questions whose best candidate has
  grade >= 3 (78 of 103 judged ones; 10-42 candidates each). 168 (question, answer) pairs are
  graded twice with different grades; the loader keeps the higher grade.
* MEDIQA 2019 Task 3 (``mediqa``): ``train`` (warm start), ``validation`` (every choice of
  hyperparameters) and ``test`` (a second evaluation set), questions with a best
  ``ReferenceScore`` >= 3 and at least 2 answers.

Features are the frozen bi-encoder's pair features ``(u, v, u*v, |u-v|)`` of (question, answer),
read from the on-disk embedding cache. The simulated user's utilities are the grades with the
ROUGE-L tie-break of :func:`~probrank.interactive.users.utilities_from_grades`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank.data.candidates import CandidateList, pair_texts
from probrank.data.datasets import DatasetName, dataset_info, dataset_names, load_candidate_lists
from probrank.exceptions import InputDataError

__all__ = [
    "Question",
    "encode_lists",
    "load_lists",
    "prepare_questions",
]


@dataclass(frozen=True)
class Question:
    """One question ready for simulated or human sessions.

    Attributes:
        qid: Question id (``TQ5``, ``test:12``...).
        query: Question text.
        candidates: `n` answer texts.
        grades: `n` grades.
        features: `n x d` pair features (float32).
        utilities: `n` simulated-user utilities (float64; grades with the ROUGE-L tie-break).
    """

    qid: str
    query: str
    candidates: tuple[str, ...]
    grades: tuple[int, ...]
    features: Tensor
    utilities: Tensor

    @property
    def num_candidates(self) -> int:
        return len(self.candidates)


def load_lists(
    dataset: str | DatasetName,
    split: str,
    *,
    folder: str | Path | None = None,
    min_best_grade: int = 3,
    min_candidates: int = 2,
    max_candidates: int = 45,
) -> list[CandidateList]:
    """The candidate lists of a data set's split that an interactive session can use.

    Args:
        dataset: A graded data set of the registry (:mod:`probrank.data.datasets`):
            ``"liveqa-med"`` or ``"mediqa"``.
        split: ``"test"`` for LiveQA-Med; ``"train"``, ``"validation"`` or ``"test"`` for MEDIQA.
        folder: The data set's folder (default: under the shared data folder).
        min_best_grade: Keep questions whose best candidate has at least this grade.
        min_candidates: Keep questions with at least this many candidates (>= 2).
        max_candidates: Keep questions with at most this many candidates.

    Raises:
        InputDataError: Unknown data set or split, missing files, nothing left to use.
    """
    usable = dataset_names(graded=True, generated=False)
    if isinstance(dataset, DatasetName):
        dataset = dataset.value
    if dataset not in usable:
        choices = ", ".join(repr(name) for name in usable)
        raise InputDataError(f"data must be one of {choices}, got {dataset!r}")
    kind = dataset_info(dataset).name
    lists = load_candidate_lists(kind, split, folder=Path(folder) if folder is not None else None)
    kept = [
        item
        for item in lists
        if max(item.grades) >= min_best_grade
        and max(min_candidates, 2) <= len(item) <= max_candidates
    ]
    if not kept:
        raise InputDataError(f"no {kind.value} {split} question passes the filters")
    return kept


def encode_lists(encoder: Any, lists: Sequence[CandidateList]) -> list[Tensor]:
    """Per list, the `n x d` float32 pair features of (query, candidate)."""
    queries, candidates = pair_texts(lists)
    with torch.no_grad():
        features = encoder.encode_pairs(queries, candidates).float().cpu()
    out, start = [], 0
    for item in lists:
        out.append(features[start : start + len(item)].clone())
        start += len(item)
    return out


def prepare_questions(lists: Sequence[CandidateList], features: Sequence[Tensor]) -> list[Question]:
    """Questions with features and simulated-user utilities (ROUGE-L tie-break)."""
    from probrank.interactive.users import utilities_from_grades

    if len(lists) != len(features):
        raise InputDataError(f"{len(lists)} lists but {len(features)} feature blocks")
    return [
        Question(
            qid=item.qid,
            query=item.query,
            candidates=tuple(item.candidates),
            grades=tuple(int(g) for g in item.grades),
            features=block,
            utilities=utilities_from_grades(item.grades, item.candidates),
        )
        for item, block in zip(lists, features, strict=True)
    ]
