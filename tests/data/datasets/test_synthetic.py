"""The generated default collection: deterministic, well-formed, and faithful to its model."""

from __future__ import annotations

import numpy as np
import pytest

from probrank.data.datasets.synthetic import score_distribution_runs
from probrank.exceptions import InputDataError


def test_same_seed_same_collection_and_different_seed_differs():
    a = score_distribution_runs(num_queries=5, num_docs=200, depth=50, seed=3)
    b = score_distribution_runs(num_queries=5, num_docs=200, depth=50, seed=3)
    c = score_distribution_runs(num_queries=5, num_docs=200, depth=50, seed=4)
    assert [r.to_dict() for r in a.runs] == [r.to_dict() for r in b.runs]
    assert a.qrels.to_dict() == b.qrels.to_dict()
    assert a.runs[0].to_dict() != c.runs[0].to_dict()


def test_shapes_pool_and_score_model():
    col = score_distribution_runs(num_queries=30, num_runs=3, num_docs=2000, depth=2000, seed=1)
    assert len(col.runs) == 3 and len(col.qrels) == 30
    run = col.runs[0]
    assert all(len(docs) == 2000 for docs in run.values())
    rel, nonrel = [], []
    for qid, docs in run.items():
        judged = col.qrels[qid]
        for doc, score in docs.items():
            (rel if judged.get(doc, 0) > 0 else nonrel).append((score, judged.get(doc, 0)))
    nonrel_scores = np.array([s for s, _ in nonrel])
    # non-relevant scores are Exponential(1): mean 1, no negatives
    assert nonrel_scores.min() >= 0 and abs(nonrel_scores.mean() - 1.0) < 0.02
    grade1 = np.array([s for s, g in rel if g == 1])
    # relevant grade-1 scores are N(quality, 1) with quality 4.0 for the first run
    assert abs(grade1.mean() - 4.0) < 0.1 and abs(grade1.std() - 1.0) < 0.1
    assert col.run_quality == {"synth1": 4.0, "synth2": 2.75, "synth3": 1.5}


def test_every_query_has_a_relevant_document():
    col = score_distribution_runs(num_queries=40, num_docs=50, depth=10, seed=2)
    assert all(n >= 1 for n in col.qrels.num_relevant().values())


def test_bad_sizes():
    with pytest.raises(InputDataError):
        score_distribution_runs(num_docs=10, depth=20)


def test_lists_of_a_run_vary_and_their_score_curve_reveals_it():
    """Manmatha et al. (2001): the share of relevant documents in a list is the mixture weight
    of its score distribution, so within one run the min-max normalised score curve of the top
    ``depth`` (QLFusion's input) predicts the list's proportion of relevant documents."""
    from scipy.stats import spearmanr

    from probrank.fusion.normalize import normalize_scores

    col = score_distribution_runs(num_queries=60, num_docs=1000, depth=100, seed=0)
    for run in col.runs[:3]:  # the weakest run's shoulder is the least visible
        area, share = [], []
        for qid in run:
            top = run.ranking(qid, 100)
            judged = col.qrels[qid]
            area.append(float(np.mean(normalize_scores([s for _, s in top], "minmax"))))
            share.append(np.mean([judged.get(doc, 0) > 0 for doc, _ in top]))
        assert np.std(share) > 0.15  # list-level variation within the run
        assert spearmanr(area, share).statistic > 0.6  # that the score curve reveals
