"""What a judging server serves: the questions, the interactive ranker and the session settings.

:class:`Project` holds the questions (:class:`~probrank.data.candidates.CandidateList`), the
:class:`~probrank.models.InteractiveRanker` whose sessions choose the pairs, the seed every
session starts from (the same for every annotator, so that annotators meet on the same first
pairs and their agreement can be measured) and an optional budget of judgements per question.
Features are encoded once per question (all at start with :meth:`Project.encode`, or on first
use) and kept in memory.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from probrank._options import parse_enum
from probrank.acquisition.select import Strategy
from probrank.data.candidates import CandidateList
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models.interactive.model import InteractiveRanker
from probrank.serve.errors import NotFound

__all__ = ["Project", "questions_digest"]


def _no_space(value: str, what: str) -> None:
    if not value or any(c.isspace() for c in value):
        raise InputDataError(
            f"{what} {value!r} is empty or holds whitespace (ids go into TREC files)"
        )


def questions_digest(questions: Sequence[CandidateList]) -> str:
    """SHA-256 of every question's id, text, candidate ids and texts, in order."""
    digest = hashlib.sha256()
    for item in questions:
        record = [item.qid, item.query, list(item.candidate_ids), list(item.candidates)]
        digest.update(json.dumps(record, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


class Project:
    """The questions, the ranker and the session settings of one judging server.

    Args:
        questions: The questions, each with at least 2 candidates; ids must be unique and
            free of whitespace (the export is a TREC file). Not modified.
        ranker: The interactive ranker (fitted, unless its posterior needs no warm start).
        source: A name of the data for messages and the database's identity check.
        seed: Seed of every session (default 0).
        strategy: Pair strategy; None: the ranker's.
        rounds: Judgements per annotator and question before the question is done; None:
            until every pair has been asked.
        encoder: The encoder of the features (default: the ranker's); give one with a disk
            cache to encode a data set once.
        features: Features already encoded, ``{qid: n x d}``.

    Raises:
        InputDataError: no questions, a question id twice, a question with fewer than 2
            candidates, an id with whitespace, or a bad ``rounds`` or ``seed``.
    """

    def __init__(
        self,
        questions: Sequence[CandidateList],
        ranker: InteractiveRanker,
        *,
        source: str,
        seed: int = 0,
        strategy: str | Strategy | None = None,
        rounds: int | None = None,
        encoder: TransformerEncoder | None = None,
        features: Mapping[str, Tensor] | None = None,
    ) -> None:
        if not questions:
            raise InputDataError(f"{source}: no questions to judge")
        by_qid: dict[str, CandidateList] = {}
        for item in questions:
            _no_space(item.qid, "question id")
            if item.qid in by_qid:
                raise InputDataError(f"{source}: question id {item.qid!r} appears twice")
            if len(item) < 2:
                raise InputDataError(
                    f"{source}: question {item.qid!r} has {len(item)} candidate; a pair needs 2"
                )
            for cid in item.candidate_ids:
                _no_space(cid, f"question {item.qid!r}: candidate id")
            by_qid[item.qid] = item
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputDataError(f"seed must be a non-negative integer, got {seed!r}")
        if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int)):
            raise InputDataError(f"rounds must be a positive integer, got {rounds!r}")
        if rounds is not None and rounds < 1:
            raise InputDataError(f"rounds must be a positive integer, got {rounds!r}")
        self.questions: tuple[CandidateList, ...] = tuple(questions)
        self._by_qid = by_qid
        self.ranker = ranker
        self.source = source
        self.seed = seed
        self.strategy = (
            parse_enum(Strategy, strategy, "strategy")
            if strategy is not None
            else ranker.settings.strategy
        )
        self.rounds = rounds
        self._encoder = encoder
        self._features: dict[str, Tensor] = dict(features or {})
        self._lock = threading.Lock()

    def question(self, qid: str) -> CandidateList:
        """The question ``qid``.

        Raises:
            NotFound: no such question.
        """
        item = self._by_qid.get(qid)
        if item is None:
            raise NotFound(f"there is no question {qid!r} in {self.source}")
        return item

    def next_qid(self, qid: str) -> str:
        """The question after ``qid`` (the first after the last)."""
        order = [item.qid for item in self.questions]
        return order[(order.index(qid) + 1) % len(order)]

    def _encoder_or_default(self) -> TransformerEncoder:
        return self._encoder if self._encoder is not None else self.ranker.encoder

    def encode(self) -> None:
        """Encode every question not encoded yet, in one batch (the encoder's progress bar)."""
        with self._lock:
            todo = [item for item in self.questions if item.qid not in self._features]
            if not todo:
                return
            queries = [item.query for item in todo for _ in item.candidates]
            texts = [text for item in todo for text in item.candidates]
            with torch.no_grad():
                x = self._encoder_or_default().encode_pairs(queries, texts).float().cpu()
            start = 0
            for item in todo:
                self._features[item.qid] = x[start : start + len(item)].clone()
                start += len(item)

    def encoded(self) -> int:
        """Questions whose features are ready."""
        return len(self._features)

    def features(self, qid: str) -> Tensor:
        """`n x d` pair features of question ``qid``'s candidates (encoded on first use; the
        ones ready are read without waiting for another question's encoding)."""
        item = self.question(qid)
        ready = self._features.get(qid)
        if ready is not None:
            return ready
        with self._lock:
            cached = self._features.get(qid)
            if cached is None:
                with torch.no_grad():
                    queries = [item.query] * len(item)
                    encoded = self._encoder_or_default().encode_pairs(queries, item.candidates)
                cached = self._features[qid] = encoded.float().cpu()
            return cached

    def identity(self) -> dict[str, Any]:
        """The facts that decide how stored judgements replay (checked at every start)."""
        settings = self.ranker.settings
        return {
            "questions": questions_digest(self.questions),
            "posterior": settings.posterior.value,
            "strategy": self.strategy.value,
            "seed": self.seed,
        }

    def __repr__(self) -> str:
        return (
            f"Project({self.source!r}, {len(self.questions)} questions, "
            f"posterior={self.ranker.settings.posterior.value}, strategy={self.strategy.value})"
        )
