"""MAP and nDCG@10 of every run of a pool, vectorised over draws of the items' grades.

The values are trec_eval's (``map`` with ``-l level``, ``ndcg_cut_10`` with graded gains) for
qrels that hold exactly the given grades, plus ``extra_relevant`` relevant documents per topic
outside the pool (they count in each topic's number of relevant documents, as unretrieved
relevant documents do in trec_eval): :func:`run_measures` on the full qrels' grades gives the
full qrels' values. Each run is averaged over the topics it ranks documents for.
"""

from __future__ import annotations

import numpy as np

from probrank.pooling.pool import Pool

__all__ = ["ideal_dcg", "run_measures"]

CUTOFF = 10


def _discounts(depth: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, depth + 2, dtype=np.float64))


def ideal_dcg(
    pool: Pool, gains: np.ndarray, extra_gains: list[np.ndarray] | None = None
) -> np.ndarray:
    """The ideal DCG@10 of each topic.

    Args:
        pool: The pool.
        gains: Grades of the items (negative counted 0), `s x num_items`.
        extra_gains: Per topic, grades of judged documents outside the pool (optional).

    Returns:
        `s x num_topics`.
    """
    discount = _discounts(CUTOFF)
    out = np.zeros((gains.shape[0], pool.num_topics))
    for t in range(pool.num_topics):
        block = np.maximum(gains[:, pool.topic_start[t] : pool.topic_start[t + 1]], 0)
        if extra_gains is not None and len(extra_gains[t]):
            extra = np.broadcast_to(extra_gains[t], (gains.shape[0], len(extra_gains[t])))
            block = np.concatenate([block, extra], axis=1)
        k = min(CUTOFF, block.shape[1])
        if k == 0:
            continue
        top = -np.partition(-block, k - 1, axis=1)[:, :k]
        top = -np.sort(-top, axis=1)
        out[:, t] = top @ discount[:k]
    return out


def run_measures(
    pool: Pool,
    gains: np.ndarray,
    *,
    level: int = 1,
    extra_relevant: np.ndarray | None = None,
    ideal: np.ndarray | None = None,
    chunk: int = 16,
    topics: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """MAP and nDCG@10 of every run under each draw of the items' grades.

    Args:
        pool: The pool.
        gains: Grades of the items, `s x num_items` (or `num_items`).
        level: The relevance level: AP counts grades >= ``level`` as relevant.
        extra_relevant: Relevant documents outside the pool per topic, `s x num_topics` or
            `num_topics` (default none).
        ideal: Ideal DCG@10 per topic, `s x num_topics` (default: from ``gains`` alone).
        chunk: Draws evaluated at once (memory: `chunk x num_runs x num_topics x depth`).
        topics: Which topics' AP and nDCG@10 to add up, `num_topics` (bool; default all).
            The sums are still divided by all the topics a run ranks, so the results over a
            partition of the topics add up to the MAP and nDCG@10: each part's share of them.

    Returns:
        ``(map, ndcg)``, each `s x num_runs` (or `num_runs` for one vector of grades).
    """
    single = gains.ndim == 1
    gains = np.atleast_2d(np.asarray(gains, dtype=np.float64))
    draws = gains.shape[0]
    if extra_relevant is None:
        extra = np.zeros((draws, pool.num_topics))
    else:
        extra = np.broadcast_to(
            np.asarray(extra_relevant, dtype=np.float64), (draws, pool.num_topics)
        )
    if ideal is None:
        ideal = ideal_dcg(pool, gains)
    ideal = np.broadcast_to(ideal, (draws, pool.num_topics))
    rankings = pool.rankings
    valid = rankings >= 0
    safe = np.where(valid, rankings, 0)
    has_topic = valid[:, :, 0]  # runs x topics
    topic_count = np.maximum(has_topic.sum(axis=1), 1)
    if topics is not None:
        has_topic = has_topic & np.asarray(topics, dtype=bool)[None, :]
    ranks = np.arange(1, pool.depth + 1, dtype=np.float64)
    discount = _discounts(min(CUTOFF, pool.depth))
    maps = np.zeros((draws, pool.num_runs))
    ndcgs = np.zeros((draws, pool.num_runs))
    for start in range(0, draws, chunk):
        g = gains[start : start + chunk]
        relevant = (g >= level).astype(np.float64)
        total = np.zeros((len(g), pool.num_topics))
        np.add.at(total.T, pool.item_topic, relevant.T)
        total += extra[start : start + chunk]
        rel = relevant[:, safe] * valid  # s x runs x topics x depth
        precision_sum = (np.cumsum(rel, axis=-1) / ranks * rel).sum(axis=-1)
        ap = np.where(total[:, None, :] > 0, precision_sum / np.maximum(total[:, None, :], 1), 0.0)
        maps[start : start + chunk] = (ap * has_topic).sum(axis=-1) / topic_count
        top = np.maximum(g[:, safe[..., : len(discount)]], 0) * valid[..., : len(discount)]
        dcg = top @ discount
        idcg = ideal[start : start + chunk][:, None, :]
        nd = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)
        ndcgs[start : start + chunk] = (nd * has_topic).sum(axis=-1) / topic_count
    if single:
        return maps[0], ndcgs[0]
    return maps, ndcgs
