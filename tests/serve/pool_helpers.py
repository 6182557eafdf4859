"""Fixtures of the pool-judging tests: a small test collection made by the project's own first
stage on the Vaswani collection of the shared data (three BM25 variants over the full text, three
topics, depth 10), and services and applications over it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

VASWANI = ("collections", "vaswani")
TOPICS = ("1", "2", "3")
DEPTH = 10


@dataclass(frozen=True)
class PoolFiles:
    """The files of a small pooling project.

    Attributes:
        runs: A folder of three BM25 runs (top ``DEPTH`` of ``TOPICS``).
        topics: A topics file of ``TOPICS`` (``qid<TAB>text``).
        docs: Vaswani's ``doc-text.trec`` (read in place).
        qrels: Vaswani's qrels (read in place).
    """

    runs: Path
    topics: Path
    docs: Path
    qrels: Path


@pytest.fixture(scope="session")
def vaswani_pool(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> PoolFiles:
    """Three BM25 runs over the Vaswani collection (Robertson with Porter stems, Lucene's
    idf with k1 0.9 and b 0.4, Robertson without stemming), for three topics, depth 10."""
    from probrank.data.topics import read_topics
    from probrank.retrieval.analysis import Analyzer, Stemmer
    from probrank.retrieval.bm25 import BM25Index, BM25Method, BM25Settings
    from probrank.retrieval.collection import Collection

    folder = shared_data.joinpath(*VASWANI)
    docs = folder / "doc-text.trec"
    every = read_topics(folder / "query-text.trec")
    chosen = {qid: every[qid] for qid in TOPICS}
    root = tmp_path_factory.mktemp("vaswani-pool")
    topics = root / "topics.tsv"
    topics.write_text("".join(f"{q}\t{t}\n" for q, t in chosen.items()), encoding="utf-8")
    runs = root / "runs"
    runs.mkdir()
    collection = Collection.from_trec(docs, progress=False)
    variants = {
        "bm25": BM25Settings(),
        "bm25-lucene": BM25Settings(k1=0.9, b=0.4, method=BM25Method.LUCENE),
        "bm25-nostem": BM25Settings(analyzer=Analyzer(stemmer=Stemmer.NONE)),
    }
    for name, settings in variants.items():
        index = BM25Index.build(collection, settings, progress=False)
        index.search(chosen, k=DEPTH, name=name).write(runs / name)
    return PoolFiles(runs=runs, topics=topics, docs=docs, qrels=folder / "qrels")
