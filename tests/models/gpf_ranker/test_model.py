"""GPFRanker on a tiny random encoder: learns a learnable label, calibrated probabilities with a
positive predictive variance, reranking, BoTorch acquisition on its posterior, persistence."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyro
import pytest
import torch
from botorch.acquisition import ExpectedImprovement, PosteriorMean, qExpectedImprovement
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.sampling import SobolQMCNormalSampler

from probrank.data.trec import Run
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models import GPFRanker, GPFRankerSettings
from tests.encoders.conftest import make_tiny_bert
from tests.models.conftest import learnable_lists

SMALL = GPFRankerSettings(
    hidden=32, num_features=128, epochs=(3, 10), gammas=(1.0, 2.0), batch_size=32
)


@pytest.fixture(scope="module")
def data():
    return learnable_lists(40, seed=0), learnable_lists(12, seed=1)


@pytest.fixture(scope="module")
def ranker(data, tiny_encoder: TransformerEncoder) -> GPFRanker:
    train, _ = data
    return GPFRanker(SMALL, tiny_encoder).fit(train)


def test_learns_the_label_with_probabilities_in_the_unit_interval(data, ranker) -> None:
    _, test = data
    predictions = ranker.predict(test)
    labels = torch.tensor([y for item in test for y in item.labels])
    n = labels.numel()
    assert predictions.probability.shape == predictions.variance.shape == (n,)
    assert bool(((predictions.probability > 0) & (predictions.probability < 1)).all())
    assert bool((predictions.variance > 0).all())
    accuracy = ((predictions.probability > 0.5).long() == labels).double().mean()
    assert accuracy >= 0.85
    assert predictions.qids[:6] == (test[0].qid,) * 6
    assert predictions.candidate_ids[:6] == test[0].candidate_ids
    frame = predictions.to_dataframe()
    assert list(frame.columns) == ["qid", "candidate_id", "probability", "mean", "variance"]
    assert set(ranker.selected) >= {"epochs", "gamma", "lambda", "T", "val NLL"}
    assert ranker.selected["epochs"] in SMALL.epochs and ranker.selected["gamma"] in SMALL.gammas


def test_variance_is_larger_far_from_the_training_data(data, ranker) -> None:
    _, test = data
    x = ranker.features(test).double()
    model = ranker.botorch_model()
    near = model.posterior(x).variance.mean()
    far = model.posterior(x + 20.0).variance.mean()  # a shifted input: the GP's prior returns
    assert far > 2 * near


def test_round_trip_gives_identical_predictions(data, ranker, tiny_encoder, tmp_path: Path) -> None:
    _, test = data
    ranker.save(tmp_path / "gpf")
    loaded = GPFRanker.load(tmp_path / "gpf", encoder=tiny_encoder)
    a, b = ranker.predict(test), loaded.predict(test)
    for name in ("probability", "mean", "variance"):
        assert torch.equal(getattr(a, name), getattr(b, name))
    pa, pb = ranker.posterior(test), loaded.posterior(test)
    assert torch.equal(pa.mean, pb.mean)
    assert torch.equal(pa.distribution.covariance_matrix, pb.distribution.covariance_matrix)
    assert loaded.selected == ranker.selected and loaded.settings == ranker.settings


def test_loading_with_another_encoder_is_refused(data, ranker, tmp_path: Path) -> None:
    ranker.save(tmp_path / "gpf")
    other = make_tiny_bert(tmp_path / "other-bert", seed=1)
    encoder = TransformerEncoder(other, mode="bi", pooling="mean", show_progress=False)
    with pytest.raises(InputDataError, match="revision"):
        GPFRanker.load(tmp_path / "gpf", encoder=encoder)
    cross = TransformerEncoder(ranker.encoder.path, mode="cross", show_progress=False)
    with pytest.raises(InputDataError, match="mode is 'cross'"):
        GPFRanker.load(tmp_path / "gpf", encoder=cross)


def test_rerank_orders_each_topic_by_the_chosen_criterion(data, ranker) -> None:
    _, test = data
    topics = {item.qid: item.query for item in test}
    documents = {f"{item.qid}/{c}": t for item in test for c, t in zip(item.candidate_ids,
                 item.candidates, strict=True)}  # fmt: skip
    run = Run(
        {item.qid: {f"{item.qid}/{c}": float(i) for i, c in enumerate(item.candidate_ids)}
         for item in test},
        name="bm25",
    )  # fmt: skip
    reranked = ranker.rerank(run, topics, documents, depth=4)
    assert isinstance(reranked, Run) and reranked.name == "bm25.gpf"
    assert set(reranked) == set(topics) and all(len(reranked[q]) == 4 for q in reranked)
    predictions = ranker.predict(
        [type(item)(item.qid, item.query, [f"{item.qid}/{c}" for c in item.candidate_ids],
                    item.candidates) for item in test]
    )  # fmt: skip
    probability = dict(
        zip(predictions.candidate_ids, predictions.probability.tolist(), strict=True)
    )
    mean = dict(zip(predictions.candidate_ids, predictions.mean.tolist(), strict=True))
    sd = dict(zip(predictions.candidate_ids, predictions.variance.sqrt().tolist(), strict=True))
    for qid in reranked:
        for doc, score in reranked[qid].items():
            assert score == pytest.approx(probability[doc], rel=1e-6)
        # the top 4 of the input run (highest input scores) are the candidates rescored
        assert set(reranked[qid]) == {doc for doc, _ in run.ranking(qid, 4)}
    lower = ranker.rerank(run, topics, documents, depth=4, criterion="lower")
    qid = next(iter(lower))
    for doc, score in lower[qid].items():
        assert score == pytest.approx(mean[doc] - SMALL.risk_aversion * sd[doc], rel=1e-5)


@pytest.mark.filterwarnings("ignore:.*has known numerical issues")
def test_botorch_acquisition_functions_run_on_the_posterior(data, ranker) -> None:
    _, test = data
    posterior = ranker.posterior(test)
    assert isinstance(posterior, GPyTorchPosterior) and posterior.mean.dtype == torch.float64
    n = sum(len(item) for item in test)
    assert posterior.mean.shape == (n, 1)
    sampler = SobolQMCNormalSampler(torch.Size([512]), seed=0)
    draws = sampler(posterior)
    assert draws.shape == (512, n, 1)
    torch.testing.assert_close(draws.mean(0), posterior.mean, rtol=0, atol=0.15)
    model = ranker.botorch_model()
    x = ranker.features(test).double()
    same = model.posterior(x)
    torch.testing.assert_close(same.mean, posterior.mean, rtol=1e-6, atol=1e-6)
    means = PosteriorMean(model)(x[:5].unsqueeze(1))
    torch.testing.assert_close(means, posterior.mean[:5, 0], rtol=1e-6, atol=1e-6)
    best = float(posterior.mean.max())
    exact = ExpectedImprovement(model, best_f=best)(x[:8].unsqueeze(1))
    monte_carlo = qExpectedImprovement(
        model, best_f=best, sampler=SobolQMCNormalSampler(torch.Size([4096]), seed=0)
    )(x[:8].unsqueeze(1))
    torch.testing.assert_close(monte_carlo, exact, rtol=0.05, atol=1e-3)
    joint = qExpectedImprovement(model, best_f=best)(x[:6].reshape(2, 3, -1))
    assert joint.shape == (2,) and bool((joint >= 0).all())


def test_to_inference_data_of_the_weights_and_of_the_logits(data, ranker) -> None:
    _, test = data
    weights = ranker.to_inference_data(num_samples=30).posterior["beta"]
    assert weights.dims == ("chain", "draw", "feature") and weights.shape == (1, 30, 128)
    logits = ranker.to_inference_data(test[:2], num_samples=20).posterior["logit"]
    assert logits.shape == (1, 20, 12)
    assert list(logits["candidate"].values[:2]) == [f"{test[0].qid}/d0", f"{test[0].qid}/d1"]


def test_fit_is_seeded_does_not_modify_inputs_and_leaves_no_global_state(
    data, tiny_encoder
) -> None:
    train, test = data
    before = list(train)
    with pyro.get_param_store().scope():  # an empty store that fitting must leave empty
        a = GPFRanker(SMALL, tiny_encoder).fit(train, train[:10])
        b = GPFRanker(SMALL, tiny_encoder).fit(train, train[:10])
        assert len(pyro.get_param_store()) == 0
    assert train == before
    assert torch.equal(a.predict(test).probability, b.predict(test).probability)


def test_other_heads_and_their_limits(data, tiny_encoder) -> None:
    train, test = data
    settings = dataclasses.replace(SMALL, head="deterministic", temperature=False)
    det = GPFRanker(settings, tiny_encoder).fit(train)
    assert set(det.selected) == {"epochs", "T", "val NLL", "seed"} and det.selected["T"] == 1.0
    assert bool((det.predict(test).variance > 0).all())  # a near point mass
    with pytest.raises(InputDataError, match="no weight posterior; pass lists"):
        det.to_inference_data()


def test_unfitted_use_and_bad_input_are_clear_errors(data, tiny_encoder) -> None:
    train, test = data
    with pytest.raises(InputDataError, match="not fitted"):
        GPFRanker(SMALL, tiny_encoder).predict(test)
    unlabelled = [type(t)(t.qid, t.query, t.candidate_ids, t.candidates) for t in train]
    with pytest.raises(InputDataError, match="has no labels"):
        GPFRanker(SMALL, tiny_encoder).fit(unlabelled)
    with pytest.raises(InputDataError, match="non-empty sequence of CandidateList"):
        GPFRanker(SMALL, tiny_encoder).fit([])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"head": "bert"}, "head must be one of"),
        ({"gammas": (0.5,)}, "gamma"),
        ({"epochs": ()}, "epochs must not be empty"),
        ({"epochs": (0, 5)}, "epochs must be a positive integer"),
        ({"mean_field_factors": (-1.0,)}, "mean_field_factors must be >= 0"),
        ({"criterion": "best"}, "criterion must be one of"),
        ({"dropout": 1.0}, "dropout must lie in \\[0, 1\\)"),
    ],
)
def test_bad_settings_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        GPFRankerSettings(**changes)
