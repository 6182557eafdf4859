"""The cascade: no topic is scored by a model that saw its judgements; runs keep the tail."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import pytest
import torch

from probrank.data.candidates import FIRST_STAGE_FEATURES, CandidateList
from probrank.data.folds import split_folds
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.retrieval.cascade import (
    CascadeSettings,
    RelevanceEstimate,
    run_cascade,
)


class RecordingReranker:
    """Scores a candidate by its first-stage min-max score; records what it was fitted on."""

    fitted: ClassVar[list[set[str]]] = []

    def fit(
        self,
        train_lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> RecordingReranker:
        self.seen = {item.qid for item in train_lists}
        RecordingReranker.fitted.append(self.seen)
        assert all(item.feature_names == FIRST_STAGE_FEATURES for item in train_lists)
        return self

    def estimate(self, lists: Sequence[CandidateList]) -> RelevanceEstimate:
        leaked = [item.qid for item in lists if item.qid in self.seen]
        if leaked:
            raise AssertionError(f"scored a training topic {leaked}")
        # reversed order: P(relevant) = 1 - min-max score, so the rerank run flips the top
        mean = torch.tensor([1.0 - row[1] for item in lists for row in item.features])
        return RelevanceEstimate(
            qids=tuple(item.qid for item in lists for _ in item.candidates),
            candidate_ids=tuple(c for item in lists for c in item.candidate_ids),
            probability=mean.double(),
            mean=mean.double(),
            variance=torch.full_like(mean, 0.1).double(),
        )


def _data(num_topics: int = 6, docs: int = 8) -> tuple[Run, dict[str, str], dict[str, str], Qrels]:
    run = Run({f"q{t}": {f"d{d}": float(docs - d) for d in range(docs)} for t in range(num_topics)})
    topics = {f"q{t}": f"query {t}" for t in range(num_topics)}
    documents = {f"d{d}": f"document {d}" for d in range(docs)}
    qrels = Qrels({f"q{t}": {"d0": 1, "d5": 1} for t in range(num_topics)})
    return run, topics, documents, qrels


def test_every_topic_held_out_and_tail_kept() -> None:
    RecordingReranker.fitted = []
    run, topics, documents, qrels = _data()
    settings = CascadeSettings(depth=4, folds=3, criterion="mean_sd", risk_aversion=0.0)
    result = run_cascade(run, topics, documents, qrels, RecordingReranker, settings, progress=False)
    assert len(RecordingReranker.fitted) == 3
    assert sorted(q for fold in result.folds for q in fold) == sorted(topics)
    for fold, seen in zip(result.folds, RecordingReranker.fitted, strict=True):
        assert not seen & set(fold) and seen | set(fold) == set(topics)
    for qid in topics:
        ranking = [doc for doc, _ in result.rerank.ranking(qid)]
        assert ranking == ["d3", "d2", "d1", "d0", "d4", "d5", "d6", "d7"]
        risk = [doc for doc, _ in result.risk.ranking(qid)]
        assert risk[:4] == ["d3", "d2", "d1", "d0"] and risk[4:] == ranking[4:]
    assert result.estimate.qids[:4] == ("q0",) * 4


def test_too_few_topics_for_the_folds() -> None:
    run, topics, documents, qrels = _data(num_topics=2)
    with pytest.raises(InputDataError, match="folds need more"):
        run_cascade(run, topics, documents, qrels, RecordingReranker, CascadeSettings(folds=3))


def test_cascade_folds_are_the_project_folds_in_permutation_order() -> None:
    """The cascade splits topics by the one fold rule (probrank.data.folds) and reports each
    fold in the permutation's order (sort=False), as its committed results list them."""
    run, topics, documents, qrels = _data(num_topics=7)
    result = run_cascade(
        run, topics, documents, qrels, RecordingReranker, CascadeSettings(folds=3, seed=4),
        progress=False,
    )  # fmt: skip
    qids = [item.qid for item in result.lists]
    assert result.folds == split_folds(qids, 3, seed=4, sort=False)
    assert sorted(len(f) for f in result.folds) == [2, 2, 3]
