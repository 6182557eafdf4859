from __future__ import annotations

import numpy as np

from probrank.evaluation.measures import evaluate_many
from probrank.pooling.measures import ideal_dcg, run_measures
from probrank.pooling.pool import Pool
from tests.pooling.conftest import synthetic_collection


def test_run_measures_equal_trec_eval() -> None:
    qrels, runs = synthetic_collection(seed=3)
    pool = Pool.from_runs(runs, depth=20)
    grades = pool.grades_from(qrels).astype(np.float64)
    extra = [
        np.array([g for d, g in qrels[q].items() if pool.item(q, d) is None], dtype=float)
        for q in pool.topics
    ]
    ideal = ideal_dcg(pool, grades[None, :], extra)
    maps, ndcgs = run_measures(
        pool, grades, level=2, extra_relevant=pool.unpooled_relevant(qrels, 2), ideal=ideal
    )
    expected = evaluate_many(qrels, runs, ["map", "ndcg_cut_10"], relevance_level=2)
    np.testing.assert_allclose(maps, [v["map"] for v in expected], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ndcgs, [v["ndcg_cut_10"] for v in expected], rtol=0, atol=1e-12)


def test_run_measures_vectorised_over_draws() -> None:
    _qrels, runs = synthetic_collection(seed=4)
    pool = Pool.from_runs(runs, depth=20)
    rng = np.random.default_rng(0)
    draws = rng.integers(0, 3, size=(5, pool.num_items)).astype(float)
    maps, ndcgs = run_measures(pool, draws, level=2, chunk=2)
    for s in range(5):
        m, n = run_measures(pool, draws[s], level=2)
        np.testing.assert_allclose(maps[s], m, atol=1e-12)
        np.testing.assert_allclose(ndcgs[s], n, atol=1e-12)


def test_run_measures_topic_parts_add_up_to_the_measures() -> None:
    """Over a partition of the topics the parts add up to MAP and nDCG@10; a one-topic part
    is that topic's trec_eval AP over the number of topics the run ranks."""
    qrels, runs = synthetic_collection(seed=5)
    pool = Pool.from_runs(runs, depth=20)
    grades = pool.grades_from(qrels).astype(np.float64)
    extra = pool.unpooled_relevant(qrels, 2)
    maps, ndcgs = run_measures(pool, grades, level=2, extra_relevant=extra)
    part = np.arange(pool.num_topics) % 2 == 0
    first = run_measures(pool, grades, level=2, extra_relevant=extra, topics=part)
    rest = run_measures(pool, grades, level=2, extra_relevant=extra, topics=~part)
    np.testing.assert_allclose(first[0] + rest[0], maps, rtol=0, atol=1e-12)
    np.testing.assert_allclose(first[1] + rest[1], ndcgs, rtol=0, atol=1e-12)
    assert np.all(first[0] > 0) and np.all(rest[0] > 0)
    ranked = (pool.rankings[:, :, 0] >= 0).sum(axis=1)
    t = 1
    one, _ = run_measures(
        pool, grades, level=2, extra_relevant=extra, topics=np.arange(pool.num_topics) == t
    )
    qid = pool.topics[t]
    expected = evaluate_many(
        {qid: qrels[qid]}, [run.restrict([qid]) for run in runs], ["map"], relevance_level=2
    )
    np.testing.assert_allclose(one * ranked, [v["map"] for v in expected], rtol=0, atol=1e-12)
