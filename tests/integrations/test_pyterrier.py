"""probrank transformers in a tiny PyTerrier pipeline, run by pt.Experiment without Java."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
import torch

from probrank.data.candidates import FIRST_STAGE_FEATURES, CandidateList
from probrank.data.trec import Run
from probrank.encoders.transformer import TransformerEncoder
from probrank.models import GPFRanker, GPFRankerSettings
from probrank.retrieval.bm25 import BM25Index
from probrank.retrieval.collection import Collection
from tests.encoders.conftest import make_tiny_bert
from tests.models.conftest import learnable_lists

pt = pytest.importorskip("pyterrier", reason="the pyterrier extra is not installed")
pd = pytest.importorskip("pandas")

SETTINGS = GPFRankerSettings(
    epochs=(2,), gammas=(2.0,), num_features=32, hidden=16, mean_field_factors=(0.0,)
)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> TransformerEncoder:
    path = make_tiny_bert(tmp_path_factory.mktemp("pt-tiny-bert"))
    return TransformerEncoder(path, mode="bi", pooling="mean", show_progress=False)


def _corpus() -> tuple[Collection, dict[str, str], dict[str, dict[str, int]]]:
    lists = learnable_lists(4, seed=7, size=6)
    docs, topics, qrels = {}, {}, {}
    for item in lists:
        topics[item.qid] = item.query
        for cid, text, label in zip(item.candidate_ids, item.candidates, item.labels, strict=True):
            docno = f"{item.qid}-{cid}"
            docs[docno] = f"{item.query} {text}"
            qrels.setdefault(item.qid, {})[docno] = label
    return Collection(docs), topics, qrels


def test_pipeline_in_experiment(encoder: TransformerEncoder) -> None:
    from probrank.integrations.pyterrier import BM25Retriever, ProbrankReranker

    collection, topics, qrels = _corpus()
    ranker = GPFRanker(SETTINGS, encoder).fit(learnable_lists(10, seed=1))
    bm25 = BM25Retriever(BM25Index.build(collection, progress=False), k=10)
    reranker = ProbrankReranker(ranker, collection, num_draws=200)
    pipeline = bm25 >> reranker
    topics_df = pd.DataFrame({"qid": list(topics), "query": list(topics.values())})
    results = pipeline.transform(topics_df)
    assert {"score", "score_sd", "logit_mean", "logit_sd", "rank"} <= set(results.columns)
    assert float(results["score"].min()) >= 0 and float(results["score"].max()) <= 1
    assert float(results["score_sd"].min()) >= 0
    # score is the ranker's own P(relevant) of those documents
    first = results[results["qid"] == results["qid"].iloc[0]]
    lists = [
        CandidateList(
            str(first["qid"].iloc[0]),
            str(first["query"].iloc[0]),
            list(first["docno"]),
            [collection[d] for d in first["docno"]],
        )
    ]
    expected = ranker.predict(lists).probability.double()
    torch.testing.assert_close(
        torch.tensor(first["score"].to_numpy(), dtype=torch.float64), expected, rtol=1e-6, atol=1e-7
    )
    assert list(first["rank"]) == list(range(len(first)))
    qrels_df = pd.DataFrame(
        [{"qid": q, "docno": d, "label": g} for q, docs in qrels.items() for d, g in docs.items()]
    )
    table = pt.Experiment(
        [bm25, pipeline], topics_df, qrels_df, eval_metrics=["map"], names=["bm25", "gpf"]
    )
    assert list(table["name"]) == ["bm25", "gpf"]
    assert table["map"].between(0, 1).all()


def test_side_features_round_trip(encoder: TransformerEncoder, tmp_path: Path) -> None:
    lists = []
    for item in learnable_lists(8, seed=3):
        scores = [float(len(item) - i) for i in range(len(item))]
        run = Run({item.qid: dict(zip(item.candidate_ids, scores, strict=True))})
        texts = dict(zip(item.candidate_ids, item.candidates, strict=True))
        labels = {item.qid: dict(zip(item.candidate_ids, item.labels, strict=True))}
        from probrank.data.trec import Qrels

        lists += CandidateList.from_trec(
            {item.qid: item.query}, run, texts, Qrels(labels), first_stage_features=True
        )
    ranker = GPFRanker(SETTINGS, encoder).fit(lists)
    assert ranker.side_features == FIRST_STAGE_FEATURES
    ranker.save(tmp_path / "model")
    again = GPFRanker.load(tmp_path / "model", encoder=encoder)
    assert again.side_features == FIRST_STAGE_FEATURES
    assert torch.equal(again.predict(lists).probability, ranker.predict(lists).probability)
    plain = [CandidateList(i.qid, i.query, i.candidate_ids, i.candidates) for i in lists]
    with pytest.raises(Exception, match="side features"):
        ranker.predict(plain)


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyterrier", None)
    monkeypatch.delitem(sys.modules, "probrank.integrations.pyterrier", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'probrank\[pyterrier\]'"):
        importlib.import_module("probrank.integrations.pyterrier")
