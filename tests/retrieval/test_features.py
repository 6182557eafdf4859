"""Dense side features of the cascade's second stage: the cosine, its min-max and its rank."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
import torch
from torch import Tensor

from probrank.data.candidates import FIRST_STAGE_FEATURES, CandidateList
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.experiments.cascade.config import SecondStageSettings
from probrank.experiments.cascade.protocol import _make_reranker
from probrank.models import GPFRankerSettings
from probrank.models.rerankers import GPFReranker
from probrank.retrieval.cascade import CascadeSettings, RelevanceEstimate, run_cascade
from probrank.retrieval.features import (
    DENSE_FEATURES,
    SideFeatureReranker,
    SideFeaturesOnly,
    cosine_similarities,
    with_dense_features,
)


class TableEncoder:
    """Vectors from a table; unknown texts get a seeded random vector (fixed per text)."""

    def __init__(self, table: dict[str, list[float]] | None = None, dim: int = 2) -> None:
        self.table = {k: torch.tensor(v, dtype=torch.float32) for k, v in (table or {}).items()}
        self.dim = dim
        self.calls = 0

    def encode_texts(self, texts: Sequence[str]) -> Tensor:
        self.calls += 1
        out = []
        for text in texts:
            if text not in self.table:
                seed = sum(ord(c) * (i + 1) for i, c in enumerate(text))
                generator = torch.Generator().manual_seed(seed)
                self.table[text] = torch.randn(self.dim, generator=generator)
            out.append(self.table[text])
        return torch.stack(out)


def _list(features: bool = True) -> CandidateList:
    return CandidateList(
        "q1",
        "query",
        ["a", "b", "c"],
        ["doc a", "doc b", "doc c"],
        [1, 0, 0],
        [2, 0, 0],
        features=[(3.0, 1.0, 0.0), (2.0, 0.5, math.log(2)), (1.0, 0.0, math.log(3))]
        if features
        else None,
        feature_names=FIRST_STAGE_FEATURES if features else None,
    )


def test_dense_features_are_the_cosine_its_minmax_and_log_rank() -> None:
    encoder = TableEncoder(
        {"query": [1.0, 0.0], "doc a": [0.0, 2.0], "doc b": [3.0, 0.0], "doc c": [1.0, 1.0]}
    )
    item = _list()
    cosine = cosine_similarities(item, encoder)
    assert torch.allclose(cosine, torch.tensor([0.0, 1.0, math.sqrt(0.5)], dtype=torch.float64))
    (out,) = with_dense_features([item], encoder)
    assert out.feature_names == (*FIRST_STAGE_FEATURES, *DENSE_FEATURES)
    assert (out.labels, out.grades, out.candidate_ids) == (
        item.labels,
        item.grades,
        item.candidate_ids,
    )
    assert out.features[0][:3] == item.features[0]
    dense = [row[3:] for row in out.features]
    assert dense[0] == pytest.approx((0.0, 0.0, math.log(3)))
    assert dense[1] == pytest.approx((1.0, 1.0, 0.0))
    assert dense[2] == pytest.approx((math.sqrt(0.5), math.sqrt(0.5), math.log(2)))
    assert item.feature_names == FIRST_STAGE_FEATURES  # the input is not modified


def test_dense_features_without_side_features_and_with_ties() -> None:
    encoder = TableEncoder({"query": [1.0, 0.0], "doc a": [1.0, 1.0]})
    encoder.table["doc b"] = encoder.table["doc c"] = encoder.table["doc a"]
    (out,) = with_dense_features([_list(features=False)], encoder)
    assert out.feature_names == DENSE_FEATURES
    assert [row[1] for row in out.features] == [1.0, 1.0, 1.0]  # all tie: min-max 1
    assert [row[2] for row in out.features] == pytest.approx([0.0, math.log(2), math.log(3)])
    unlabelled = CandidateList("q", "query", ["a"], ["doc a"])
    (plain,) = with_dense_features([unlabelled], encoder)
    assert plain.labels == () and plain.feature_names == DENSE_FEATURES


class Recording:
    """Records the side features it was fitted on; scores by the dense cosine."""

    def __init__(self) -> None:
        self.names: list[tuple[str, ...]] = []

    def fit(
        self,
        train_lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> Recording:
        self.names.append(train_lists[0].feature_names)
        self.seen = {item.qid for item in train_lists}
        return self

    def estimate(self, lists: Sequence[CandidateList]) -> RelevanceEstimate:
        assert not self.seen & {item.qid for item in lists}
        cosine = torch.tensor([row[3] for item in lists for row in item.features])
        return RelevanceEstimate(
            qids=tuple(item.qid for item in lists for _ in item.candidates),
            candidate_ids=tuple(c for item in lists for c in item.candidate_ids),
            probability=(cosine + 1).double() / 2,
            mean=cosine.double(),
            variance=torch.full_like(cosine, 0.1).double(),
        )


def test_wrapped_reranker_sees_the_dense_features_in_the_cascade() -> None:
    docs = 6
    run = Run({f"q{t}": {f"d{d}": float(docs - d) for d in range(docs)} for t in range(4)})
    topics = {f"q{t}": f"query {t}" for t in range(4)}
    documents = {f"d{d}": f"document {d}" for d in range(docs)}
    qrels = Qrels({f"q{t}": {"d0": 1} for t in range(4)})
    encoder = TableEncoder({f"query {t}": [1.0, 0.0] for t in range(4)})
    for d in range(docs):  # cosine rises with d: the rerank run reverses BM25's top 4
        angle = (docs - d) / docs * math.pi / 2
        encoder.table[f"document {d}"] = torch.tensor([math.cos(angle), math.sin(angle)])
    inner = Recording()
    result = run_cascade(
        run,
        topics,
        documents,
        qrels,
        lambda: SideFeatureReranker(inner, encoder),
        CascadeSettings(depth=4, folds=2),
        progress=False,
    )
    assert inner.names == [(*FIRST_STAGE_FEATURES, *DENSE_FEATURES)] * 2
    assert all(item.feature_names == FIRST_STAGE_FEATURES for item in result.lists)
    for qid in topics:
        ranking = [doc for doc, _ in result.rerank.ranking(qid)]
        assert ranking == ["d3", "d2", "d1", "d0", "d4", "d5"]


def _labelled_lists(num: int, n: int = 12) -> list[CandidateList]:
    generator = torch.Generator().manual_seed(3)
    lists = []
    for t in range(num):
        scores = torch.rand(n, generator=generator).tolist()
        lists.append(
            CandidateList(
                f"q{t}",
                f"query {t}",
                [f"d{t}-{i}" for i in range(n)],
                [f"document {t} {i}" for i in range(n)],
                [int(s > 0.6) for s in scores],
                features=[(s, s, 0.0) for s in scores],
                feature_names=FIRST_STAGE_FEATURES,
            )
        )
    return lists


def test_gpf_on_side_features_only_is_seeded() -> None:
    encoder = TableEncoder(dim=4)
    settings = GPFRankerSettings(epochs=(2,), gammas=(2.0,), num_features=16, hidden=8)
    lists = _labelled_lists(8)

    def fitted() -> tuple[GPFReranker, RelevanceEstimate]:
        gpf = GPFReranker(settings, SideFeaturesOnly(encoder))  # type: ignore[arg-type]
        model = SideFeatureReranker(gpf, encoder).fit(lists[:6], seed=1)
        return gpf, model.estimate(lists[6:])

    gpf, first = fitted()
    _, second = fitted()
    x = gpf.model.features(with_dense_features(lists[6:], encoder))
    assert x.shape == (24, len(FIRST_STAGE_FEATURES) + len(DENSE_FEATURES))
    assert torch.equal(first.probability, second.probability)
    assert ((first.probability > 0) & (first.probability < 1)).all()
    assert len(first.covariances) == 2


def test_protocol_builds_the_configured_second_stage() -> None:
    encoder = TableEncoder()
    plain = _make_reranker(SecondStageSettings(model="gpf"), encoder, seed=0, smoke=True)()
    assert isinstance(plain, GPFReranker) and plain.model.encoder is encoder
    dense = _make_reranker(
        SecondStageSettings(model="gpf", dense_features=True, pair_features=False), encoder, 0, True
    )()
    assert isinstance(dense, SideFeatureReranker) and isinstance(dense.inner, GPFReranker)
    assert isinstance(dense.inner.model.encoder, SideFeaturesOnly)
    with pytest.raises(InputDataError, match="pair_features"):
        _make_reranker(
            SecondStageSettings(model="multitask", pair_features=False), encoder, 0, True
        )
