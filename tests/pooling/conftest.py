"""Small synthetic pools for the pooling tests."""

from __future__ import annotations

import numpy as np
import pytest

from probrank.data.trec import Qrels, Run


def synthetic_collection(
    *, topics: int = 4, docs: int = 40, depth: int = 20, runs: int = 3, seed: int = 0
) -> tuple[Qrels, list[Run]]:
    """Qrels (grades 0-2, about 20% relevant at grade 2, 80% of documents judged) and runs
    of increasing quality ranking ``depth`` documents per topic."""
    rng = np.random.default_rng(seed)
    judgements: dict[str, dict[str, int]] = {}
    relevant = {}
    for t in range(topics):
        rel = rng.random(docs) < 0.2
        relevant[t] = rel
        judgements[str(t + 1)] = {
            f"d{d}": int(2 * rel[d] if rng.random() < 0.9 else rng.integers(0, 2))
            for d in range(docs)
            if rng.random() < 0.8
        }
    out = []
    for r in range(runs):
        scores: dict[str, dict[str, float]] = {}
        for t in range(topics):
            s = relevant[t] * (0.5 + r) + rng.normal(size=docs)
            order = np.argsort(-s)[:depth]
            scores[str(t + 1)] = {f"d{d}": float(depth - k) for k, d in enumerate(order)}
        out.append(Run(scores, name=f"run{r}"))
    return Qrels(judgements, name="qrels"), out


@pytest.fixture
def collection() -> tuple[Qrels, list[Run]]:
    return synthetic_collection()
