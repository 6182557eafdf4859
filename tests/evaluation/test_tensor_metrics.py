"""Tensor metrics equal ir-measures (trec_eval) to 1e-9 on real runs, and closed forms on toys."""

from __future__ import annotations

import pytest
import torch

from probrank.data import Qrels, RankingBatch, Run
from probrank.evaluation import evaluate_batch, evaluate_per_query, recall_n_at_k
from probrank.exceptions import InputDataError

MEASURES = ["P@5", "P@10", "R@10", "R@100", "nDCG@10", "nDCG@20", "AP", "RR"]


@pytest.mark.integration
def test_tensor_metrics_equal_ir_measures_on_all_robust03_runs(shared_data):
    folder = shared_data / "fusion" / "robust03"
    qrels = Qrels.read(folder / "qrels.txt")
    paths = sorted((folder / "runs").glob("input.*.gz"))
    assert len(paths) == 17
    for path in paths:
        run = Run.read(path).truncate(100)
        batch = RankingBatch.from_run(run, qrels, depth=100)
        reference = evaluate_per_query(qrels, run, MEASURES)
        got = evaluate_batch(batch, MEASURES)
        for name in MEASURES:
            want = torch.tensor(reference.loc[list(batch.query_ids), name].to_numpy())
            torch.testing.assert_close(
                got[name], want, rtol=0, atol=1e-9, msg=f"{path.name} {name}"
            )


def _toy() -> RankingBatch:
    run = Run({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0, "y": 1.0}})
    qrels = Qrels({"q1": {"a": 0, "b": 2, "c": 1, "z": 3}, "q2": {"x": 1}})
    return RankingBatch.from_run(run, qrels, depth=10)


def test_batch_shapes_padding_and_order():
    batch = _toy()
    assert batch.query_ids == ("q1", "q2")
    assert batch.doc_ids == (("a", "b", "c"), ("y", "x"))  # tie broken by docno descending
    assert batch.scores.shape == (2, 3) and batch.scores.dtype == torch.float64
    assert batch.mask.tolist() == [[True, True, True], [True, True, False]]
    assert batch.gains.tolist() == [[0.0, 2.0, 1.0], [0.0, 1.0, 0.0]]
    assert batch.num_relevant.tolist() == [3, 1]
    assert batch.ideal_gains.shape == (2, 10)
    assert batch.ideal_gains[0, :4].tolist() == [3.0, 2.0, 1.0, 0.0]


def test_closed_forms_on_toy():
    batch = _toy()
    got = evaluate_batch(batch, ["P@2", "R@2", "AP", "RR", "nDCG@3"])
    torch.testing.assert_close(got["P@2"], torch.tensor([0.5, 0.5], dtype=torch.float64))
    torch.testing.assert_close(got["R@2"], torch.tensor([1 / 3, 1.0], dtype=torch.float64))
    torch.testing.assert_close(
        got["AP"], torch.tensor([(1 / 2 + 2 / 3) / 3, 0.5], dtype=torch.float64)
    )
    torch.testing.assert_close(got["RR"], torch.tensor([0.5, 0.5], dtype=torch.float64))
    dcg = 2 / torch.log2(torch.tensor(3.0)) + 1 / 2
    idcg = 3 + 2 / torch.log2(torch.tensor(3.0)) + 1 / 2
    torch.testing.assert_close(got["nDCG@3"][0], (dcg / idcg).double())


def test_model_scores_reorder_and_ties_keep_stored_order():
    batch = _toy()
    scores = torch.tensor([[0.0, 5.0, 1.0], [2.0, 2.0, 0.0]], dtype=torch.float64)
    got = evaluate_batch(batch, ["RR", "P@1"], scores=scores)
    assert got["RR"].tolist() == [1.0, 0.5]
    with pytest.raises(InputDataError, match="shape"):
        evaluate_batch(batch, ["RR"], scores=scores[:, :2])


def test_recall_n_at_k_one_true_among_ten():
    scores = torch.tensor([[0.9, 0.1] + [0.0] * 8, [0.1, 0.9] + [0.0] * 8])
    relevant = torch.zeros(2, 10, dtype=torch.bool)
    relevant[:, 0] = True
    assert recall_n_at_k(scores, relevant, 1).tolist() == [1.0, 0.0]
    assert recall_n_at_k(scores, relevant, 2).tolist() == [1.0, 1.0]
    assert evaluate_batch(_toy(), ["R10@1"])["R10@1"].shape == (2,)


@pytest.mark.parametrize("bad", ["P", "nDCG@", "AP@5", "MAP", "P@x"])
def test_bad_measure_names(bad):
    with pytest.raises(InputDataError):
        evaluate_batch(_toy(), [bad])


def test_from_run_rejects_disjoint_queries_and_bad_depth():
    run = Run({"q9": {"a": 1.0}})
    with pytest.raises(InputDataError, match="share no query"):
        RankingBatch.from_run(run, Qrels({"q1": {"a": 1}}))
    with pytest.raises(InputDataError, match="depth"):
        RankingBatch.from_run(run, depth=0)
    assert RankingBatch.from_run(run).gains.sum() == 0


def test_ap_is_ap_at_the_batch_depth_as_documented():
    # relevant documents at ranks 1 and 3 (of 2 relevant): full AP = (1 + 2/3) / 2; a batch
    # cut at depth 2 sees only rank 1: AP@2 = (1 + 0) / 2, the denominator still 2
    run = Run({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    qrels = Qrels({"q": {"a": 1, "b": 0, "c": 1}})
    full = evaluate_batch(RankingBatch.from_run(run, qrels, depth=3), ["AP"])["AP"]
    cut = evaluate_batch(RankingBatch.from_run(run, qrels, depth=2), ["AP"])["AP"]
    torch.testing.assert_close(full, torch.tensor([(1 + 2 / 3) / 2], dtype=torch.float64))
    torch.testing.assert_close(cut, torch.tensor([0.5], dtype=torch.float64))
    assert "AP at the batch depth" in " ".join((evaluate_batch.__doc__ or "").split())
