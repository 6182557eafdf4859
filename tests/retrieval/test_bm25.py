"""BM25 with bm25s: scores against a hand-written BM25, the analyzer, the saved index."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from probrank.exceptions import InputDataError
from probrank.retrieval.analysis import Analyzer
from probrank.retrieval.bm25 import BM25Index, BM25Settings, open_or_build
from probrank.retrieval.collection import Collection

DOCS = {
    "d1": "the cat sat on the mat",
    "d2": "dogs and cats living together",
    "d3": "a dog chased the cat and the cat ran",
    "d4": "quantum physics of crystals",
    "d5": "cats cats cats",
}


def _reference(query: str, analyzer: Analyzer, k1: float, b: float) -> dict[str, float]:
    """Robertson BM25 written out: idf max(0, log((N - df + 0.5) / (df + 0.5))), tf / (tf +
    k1 (1 - b + b dl / avgdl)), summed over the query's terms with repeats."""
    terms = {d: analyzer.tokens(t) for d, t in DOCS.items()}
    n = len(terms)
    avgdl = sum(len(t) for t in terms.values()) / n
    out = {}
    for doc, tokens in terms.items():
        counts = Counter(tokens)
        score, matched = 0.0, False
        for term in analyzer.tokens(query):
            df = sum(1 for t in terms.values() if term in t)
            if df == 0 or counts[term] == 0:
                continue
            matched = True
            idf = max(0.0, math.log((n - df + 0.5) / (df + 0.5)))
            tf = counts[term]
            score += idf * tf / (tf + k1 * (1 - b + b * len(tokens) / avgdl))
        if matched:
            out[doc] = score
    return out


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (0.9, 0.4)])
def test_scores_equal_hand_written_bm25(k1: float, b: float) -> None:
    settings = BM25Settings(k1=k1, b=b)
    index = BM25Index.build(Collection(DOCS), settings, progress=False)
    for query in ("cat", "dog physics", "cats dogs cats"):
        run = index.search({"q": query}, k=10)
        expected = _reference(query, settings.analyzer, k1, b)
        got = dict(run["q"])
        assert set(got) == set(expected)
        for doc, value in expected.items():
            assert got[doc] == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_analyzer_defaults_and_options() -> None:
    assert Analyzer().tokens("The Cats are RUNNING, the dog ran!") == ["cat", "run", "dog", "ran"]
    plain = Analyzer(stopwords="none", stemmer="none")
    assert plain.tokens("The Cats") == ["the", "cats"]
    with pytest.raises(InputDataError, match="stemmer must be one of"):
        Analyzer(stemmer="krovetz")


def test_unknown_terms_and_k() -> None:
    index = BM25Index.build(Collection(DOCS), progress=False)
    run = index.search({"q1": "zebra", "q2": "cat"}, k=2)
    assert len(run["q1"]) == 0 and len(run["q2"]) == 2
    with pytest.raises(InputDataError, match="k must be"):
        index.search({"q": "cat"}, k=0)


def test_save_load_and_reuse(tmp_path: Path) -> None:
    collection = Collection(DOCS)
    index, built = open_or_build(tmp_path / "idx", collection, progress=False)
    assert built
    topics = {"a": "cat mat", "b": "dog"}
    loaded, built = open_or_build(tmp_path / "idx", collection, progress=False)
    assert not built
    assert loaded.search(topics).as_dict() == index.search(topics).as_dict()
    other = Collection({**DOCS, "d6": "another cat"})
    _, built = open_or_build(tmp_path / "idx", other, progress=False)
    assert built  # another collection: rebuilt, never reused
    _, built = open_or_build(tmp_path / "idx", other, BM25Settings(k1=2.0), progress=False)
    assert built
    with pytest.raises(InputDataError, match="built with"):
        BM25Index.load(tmp_path / "idx", settings=BM25Settings())


def test_damaged_index_is_refused(tmp_path: Path) -> None:
    BM25Index.build(Collection(DOCS), progress=False).save(tmp_path / "idx")
    data = (tmp_path / "idx" / "data.npy").read_bytes()
    (tmp_path / "idx" / "data.npy").write_bytes(data[:-8])
    with pytest.raises(InputDataError, match="SHA-256"):
        BM25Index.load(tmp_path / "idx")
    manifest = tmp_path / "idx" / "manifest.json"
    document = json.loads(manifest.read_text())
    document["format_version"] = 99
    manifest.write_text(json.dumps(document))
    with pytest.raises(InputDataError, match="format version"):
        BM25Index.load(tmp_path / "idx")
    with pytest.raises(InputDataError, match=r"no manifest\.json"):
        BM25Index.load(tmp_path / "missing")


def test_matching_documents_only() -> None:
    index = BM25Index.build(Collection(DOCS), progress=False)
    rows, scores = index.score("crystals")
    assert [index.docnos[i] for i in rows] == ["d4"]
    assert np.all(np.isfinite(scores))
