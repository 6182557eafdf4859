"""MultiTaskRanker on a tiny random encoder: filters and ranks a learnable task, its exact
utility posterior matches Monte Carlo draws, BoTorch runs on it, persistence is exact."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyro
import pytest
import torch
from botorch.acquisition import PosteriorMean, qExpectedImprovement
from botorch.posteriors.gpytorch import GPyTorchPosterior

from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models import MultiTaskRanker, MultiTaskSettings
from probrank.models.multitask import KeepTop
from tests.models.conftest import learnable_lists

SMALL = MultiTaskSettings(
    hidden=16,
    weight_decay=1.0,
    lr=3e-3,
    max_epochs=120,
    patience=20,
    ranking_weights=(0.6, 0.9),
    posterior_samples=100,
)


@pytest.fixture(scope="module")
def data():
    return learnable_lists(40, seed=0), learnable_lists(12, seed=1)


@pytest.fixture(scope="module")
def ranker(data, tiny_encoder: TransformerEncoder) -> MultiTaskRanker:
    train, _ = data
    return MultiTaskRanker(SMALL, tiny_encoder).fit(train)


def test_filters_and_ranks_a_learnable_task(data, ranker) -> None:
    _, test = data
    results = ranker.filter_and_rank(test)
    assert [r.qid for r in results] == [item.qid for item in test]
    choice = ranker.choice
    correct = total = 0
    for item, ranked in zip(test, results, strict=True):
        assert sorted(ranked.candidate_ids) == sorted(item.candidate_ids)
        assert list(ranked.utility_mean) == sorted(ranked.utility_mean, reverse=True)
        assert all(0 < p < 1 for p in ranked.probabilities)
        assert all(sd > 0 for sd in ranked.utility_sd)
        above = [p > choice["threshold"] for p in ranked.probabilities]
        expected = [a or (choice["keep_top"] and i == 0) for i, a in enumerate(above)]
        assert list(ranked.keep) == expected
        assert ranked.kept == tuple(
            c for c, k in zip(ranked.candidate_ids, expected, strict=True) if k
        )
        truth = dict(zip(item.candidate_ids, item.labels, strict=True))
        correct += sum(
            int(k) == truth[c] for c, k in zip(ranked.candidate_ids, ranked.keep, strict=True)
        )
        total += len(item)
        relevant = [c for c in ranked.candidate_ids if truth[c]]
        if relevant:  # relevant answers are ranked first
            assert set(ranked.candidate_ids[: len(relevant)]) == set(relevant)
    assert correct / total >= 0.85
    assert choice["ranking_weight"] in SMALL.ranking_weights
    assert choice["threshold"] in SMALL.thresholds


def test_utility_posterior_is_the_exact_gaussian_of_the_sampled_utilities(data, tiny_encoder):
    train, test = data
    settings = dataclasses.replace(SMALL, posterior_samples=4000, ranking_weights=(0.75,))
    ranker = MultiTaskRanker(settings, tiny_encoder).fit(train)
    _, mean, sd = ranker.predict(test[:3])
    posterior = ranker.posterior(test[:3])
    assert isinstance(posterior, GPyTorchPosterior) and posterior.mean.dtype == torch.float64
    torch.testing.assert_close(posterior.mean[:, 0], mean, rtol=0, atol=4 * float(sd.max()) / 60)
    torch.testing.assert_close(posterior.variance[:, 0].sqrt(), sd, rtol=0.06, atol=0)


@pytest.mark.filterwarnings("ignore:.*has known numerical issues")
def test_botorch_acquisition_functions_run_on_the_model(data, ranker) -> None:
    _, test = data
    x = ranker.features(test)
    model = ranker.botorch_model()
    posterior = ranker.posterior(test)
    torch.testing.assert_close(model.posterior(x).mean, posterior.mean, rtol=1e-12, atol=1e-12)
    means = PosteriorMean(model)(x[:4].unsqueeze(1))
    torch.testing.assert_close(means, posterior.mean[:4, 0], rtol=1e-12, atol=1e-12)
    value = qExpectedImprovement(model, best_f=float(posterior.mean.max()))(x[:6].reshape(2, 3, -1))
    assert value.shape == (2,) and bool((value >= 0).all())


def test_round_trip_gives_identical_predictions(data, ranker, tiny_encoder, tmp_path: Path):
    _, test = data
    ranker.save(tmp_path / "mt")
    loaded = MultiTaskRanker.load(tmp_path / "mt", encoder=tiny_encoder)
    for a, b in zip(ranker.predict(test), loaded.predict(test), strict=True):
        assert torch.equal(a, b)
    assert loaded.filter_and_rank(test) == ranker.filter_and_rank(test)
    assert torch.equal(loaded.posterior(test).mean, ranker.posterior(test).mean)
    assert loaded.choice == ranker.choice and loaded.settings == ranker.settings


def test_to_inference_data_draws_the_output_layer(ranker) -> None:
    draws = ranker.to_inference_data(num_samples=25).posterior
    width = SMALL.hidden
    assert draws["output.weight"].shape == (1, 25, 1, width)
    assert draws["output.bias"].shape == (1, 25, 1)


def test_deterministic_twin_keep_top_rule_and_its_limits(data, tiny_encoder) -> None:
    train, test = data
    settings = dataclasses.replace(
        SMALL, bayesian=False, keep_top="always", ranking_weights=(0.75,)
    )
    twin = MultiTaskRanker(settings, tiny_encoder).fit(train)
    assert twin.settings.keep_top is KeepTop.ALWAYS and twin.choice["keep_top"] is True
    assert all(r.keep[0] for r in twin.filter_and_rank(test))
    assert all(sd == 0 for r in twin.filter_and_rank(test) for sd in r.utility_sd)
    assert float(twin.posterior(test).variance.max()) < 1e-5
    with pytest.raises(InputDataError, match="deterministic twin"):
        twin.to_inference_data()


def test_fit_is_seeded_does_not_modify_inputs_and_leaves_no_global_state(data, tiny_encoder):
    train, test = data
    before = list(train)
    settings = dataclasses.replace(SMALL, ranking_weights=(0.75,))
    with pyro.get_param_store().scope():  # an empty store that fitting must leave empty
        a = MultiTaskRanker(settings, tiny_encoder).fit(train, train[:8])
        b = MultiTaskRanker(settings, tiny_encoder).fit(train, train[:8])
        assert len(pyro.get_param_store()) == 0
    assert train == before
    assert torch.equal(a.predict(test)[0], b.predict(test)[0])


def test_unfitted_use_and_bad_input_are_clear_errors(data, tiny_encoder) -> None:
    train, test = data
    with pytest.raises(InputDataError, match="not fitted"):
        MultiTaskRanker(SMALL, tiny_encoder).filter_and_rank(test)
    unlabelled = [type(t)(t.qid, t.query, t.candidate_ids, t.candidates) for t in train]
    with pytest.raises(InputDataError, match="has no labels"):
        MultiTaskRanker(SMALL, tiny_encoder).fit(unlabelled)
    with pytest.raises(InputDataError, match="at least 2 training lists"):
        MultiTaskRanker(SMALL, tiny_encoder).fit(train[:1])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"ranking_weights": (1.5,)}, "ranking_weights must lie in \\[0, 1\\]"),
        ({"thresholds": (0.0,)}, "thresholds must lie in \\(0, 1\\)"),
        ({"keep_top": "sometimes"}, "keep_top must be one of"),
        ({"hidden": 0}, "hidden must be a positive integer"),
        ({"weight_decay": -1.0}, "weight_decay must be >= 0"),
        ({"bayesian": "yes"}, "bayesian must be true or false"),
    ],
)
def test_bad_settings_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        MultiTaskSettings(**changes)
