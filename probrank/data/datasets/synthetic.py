"""Generated TREC-style runs with known qrels: the project's embedded default data.

Scores follow the score-distribution model Manmatha, Rath and Feng (2001) observed on TREC
runs: relevant documents' scores are Gaussian, non-relevant ones exponential, and a list's
share of relevant documents is the mixture weight its score curve reveals. Each run has its
own quality: the mean of the relevant scores above ``log(num_docs / depth)``, the score the
non-relevant exponential tail reaches at rank ``depth``, so the relevant documents form a
visible shoulder in the top of the list. Each query has its own number of relevant documents,
``1 + Binomial(num_docs - 1, depth / num_docs * Beta(1.5, 2.5))`` (about 0.4 ``depth`` on
average, from a few to more than ``depth``), so the proportion of relevant documents in the
top ``depth`` varies from list to list within a run and the min-max normalised score curve
predicts it (``tests/data/datasets/test_synthetic.py`` checks both). Qrels judge every
relevant document and the non-relevant documents pooled from the runs' top ``pool_depth``, as
TREC pools do.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError

__all__ = ["SyntheticCollection", "score_distribution_runs"]


@dataclass(frozen=True)
class SyntheticCollection:
    """A generated test collection.

    Attributes:
        qrels: Judgements (grades 0, 1, 2).
        runs: The generated runs, best quality first.
        run_quality: ``{run name: mean of the grade-1 relevant scores above log(num_docs /
            depth), in units of the exponential scale}``.
    """

    qrels: Qrels
    runs: list[Run]
    run_quality: dict[str, float]


def score_distribution_runs(
    num_queries: int = 50,
    num_runs: int = 4,
    num_docs: int = 1000,
    depth: int = 100,
    pool_depth: int = 20,
    seed: int = 0,
) -> SyntheticCollection:
    """Generate runs whose scores follow a Gaussian (relevant) / exponential (non-relevant) mix.

    Args:
        num_queries: Queries (ids ``"101"``, ``"102"``, ...).
        num_runs: Runs, with relevant-score means spread from 4.0 down to 1.5 exponential scales
            above ``log(num_docs / depth)``.
        num_docs: Documents per query's candidate collection.
        depth: Documents each run returns per query.
        pool_depth: Top documents of every run that are judged.
        seed: Seed of the generator; the same seed gives the same collection.

    Returns:
        The qrels and the runs.

    Raises:
        InputDataError: a size that is not a positive integer, ``depth > num_docs``, or a seed
            that is not a non-negative integer.
    """
    sizes = {
        "num_queries": num_queries,
        "num_runs": num_runs,
        "num_docs": num_docs,
        "depth": depth,
        "pool_depth": pool_depth,
    }
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
            raise InputDataError(f"{name} must be a positive integer, got {value!r}")
    if depth > num_docs:
        raise InputDataError(f"depth must be <= num_docs, got {depth} > {num_docs}")
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise InputDataError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.default_rng(seed)
    qualities = np.linspace(4.0, 1.5, num_runs)
    names = [f"synth{i + 1}" for i in range(num_runs)]
    offset = float(np.log(num_docs / depth))  # the non-relevant tail's score at rank depth
    judgements: dict[str, dict[str, int]] = {}
    scores: list[dict[str, dict[str, float]]] = [{} for _ in range(num_runs)]
    for q in range(num_queries):
        qid = str(101 + q)
        docs = np.array([f"D{q:03d}-{d:05d}" for d in range(num_docs)])
        rate = min(1.0, depth / num_docs * rng.beta(1.5, 2.5))
        num_relevant = 1 + int(rng.binomial(num_docs - 1, rate))  # every query has one
        relevant = np.zeros(num_docs, dtype=bool)
        relevant[rng.choice(num_docs, num_relevant, replace=False)] = True
        grades = np.where(relevant, rng.choice([1, 2], size=num_docs, p=[0.7, 0.3]), 0)
        judged = {str(d): int(g) for d, g in zip(docs[relevant], grades[relevant], strict=True)}
        for r, quality in enumerate(qualities):
            noise = rng.exponential(1.0, size=num_docs)
            signal = rng.normal(offset + quality + 0.5 * (grades - 1), 1.0, size=num_docs)
            raw = np.where(relevant, signal, noise)
            top = np.argsort(-raw, kind="stable")[:depth]
            scores[r][qid] = {str(docs[i]): round(float(raw[i]), 6) for i in top}
            for i in top[:pool_depth]:
                judged.setdefault(str(docs[i]), 0)
        judgements[qid] = judged
    runs = [Run(s, name=n, tag=n) for s, n in zip(scores, names, strict=True)]
    return SyntheticCollection(
        qrels=Qrels(judgements, name="synthetic"),
        runs=runs,
        run_quality={n: float(v) for n, v in zip(names, qualities, strict=True)},
    )
