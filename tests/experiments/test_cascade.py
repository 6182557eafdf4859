"""The cascade protocol's parts on Vaswani (integration: ../shared/data)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from probrank.data.trec import Qrels
from probrank.evaluation.measures import evaluate
from probrank.experiments import load_config
from probrank.experiments.cascade.collections import load_collection
from probrank.experiments.cascade.protocol import _stage_measures
from probrank.models import GPFRankerSettings
from probrank.models.rerankers import GPFReranker
from probrank.retrieval.bm25 import BM25Index
from probrank.retrieval.cascade import CascadeSettings, run_cascade
from tests.encoders.conftest import make_tiny_bert

CONFIGS = Path(__file__).resolve().parents[2] / "models" / "cascade"


@pytest.mark.parametrize(
    "name",
    [
        "vaswani",
        "liveqa_medquad",
        "ablations/vaswani_pair",
        "ablations/vaswani_pair_dense",
        "ablations/liveqa_medquad_pair",
    ],
)
def test_configs_match_the_schema(name: str) -> None:
    config = load_config(CONFIGS / f"{name}.toml")
    assert config.experiment.protocol == "cascade"


@pytest.mark.integration
def test_vaswani_bm25_and_a_cascade_on_a_subset(shared_data: Path, tmp_path: Path) -> None:
    from probrank.encoders.transformer import TransformerEncoder

    data = load_collection("vaswani", shared_data, progress=False)
    assert len(data.collection) == 11429 and len(data.topics) == 93
    index = BM25Index.build(data.collection, progress=False)
    bm25 = index.search(data.topics, k=1000)
    assert evaluate(data.qrels, bm25, ["AP"])["AP"] >= 0.29  # the target (Terrier: 0.296)
    bm25.write(tmp_path / "bm25.run")
    # the cascade on 6 topics, 10 documents each, a tiny random encoder
    topics = {q: data.topics[q] for q in list(data.topics)[:6]}
    qrels = Qrels({q: data.qrels[q] for q in topics})
    encoder = TransformerEncoder(
        make_tiny_bert(tmp_path / "bert"), mode="bi", pooling="mean", max_length=64
    )
    encoder.show_progress = False
    settings = GPFRankerSettings(epochs=(2,), gammas=(2.0,), num_features=32, hidden=16)
    result = run_cascade(
        bm25.restrict(topics),
        topics,
        data.collection,
        qrels,
        lambda: GPFReranker(settings, encoder),
        CascadeSettings(depth=10, folds=2),
        progress=False,
    )
    for qid in topics:
        first = [doc for doc, _ in bm25.ranking(qid)]
        reranked = [doc for doc, _ in result.rerank.ranking(qid)]
        assert set(reranked[:10]) == set(first[:10]) and reranked[10:] == first[10:]
        assert [d for d, _ in result.risk.ranking(qid)][10:] == first[10:]
    measures = _stage_measures(result, qrels, seed=0, n_bins=10)
    for stage in ("bm25", "rerank", "risk"):
        assert all(0.0 <= measures[stage][m] <= 1.0 for m in ("nDCG@10", "AP", "P@10", "ECE"))
        assert not math.isnan(measures[stage]["ERCE"])
    assert measures["rerank"]["ECE"] == measures["risk"]["ECE"]
