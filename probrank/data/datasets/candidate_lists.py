"""A query with a list of judged candidates: the common shape of the QA and dialog loaders."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CandidateList", "num_pairs", "pair_texts"]


@dataclass(frozen=True)
class CandidateList:
    """One query (question or dialog context) and its judged candidates.

    Attributes:
        qid: Query id.
        query: Query text.
        candidate_ids: `n` candidate ids (unique within the list).
        candidates: `n` candidate texts.
        labels: `n` binary relevance labels (1 relevant).
        grades: `n` graded judgements (equal to ``labels`` where there are no grades).
    """

    qid: str
    query: str
    candidate_ids: tuple[str, ...]
    candidates: tuple[str, ...]
    labels: tuple[int, ...]
    grades: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.candidates)


def num_pairs(lists: Sequence[CandidateList]) -> int:
    """Number of (query, candidate) pairs in ``lists``."""
    return sum(len(item) for item in lists)


def pair_texts(lists: Sequence[CandidateList]) -> tuple[list[str], list[str]]:
    """The `n` query texts and `n` candidate texts of all pairs, list by list (`n` =
    :func:`num_pairs`), as encoders' ``encode_pairs`` takes them."""
    queries = [item.query for item in lists for _ in item.candidates]
    candidates = [c for item in lists for c in item.candidates]
    return queries, candidates
