"""InteractiveRanker on a tiny random encoder: the warm start, sessions (and their resumption),
the posterior each kind builds, BoTorch on it, ArviZ, and persistence with identical posteriors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from botorch.acquisition import PosteriorMean
from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption
from botorch.posteriors.gpytorch import GPyTorchPosterior

from probrank.data.candidates import CandidateList
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.interactive.log import read_log
from probrank.interactive.simulate import simulate, simulate_session
from probrank.interactive.users import SimulatedUser
from probrank.models import InteractiveRanker, InteractiveRankerSettings
from probrank.posteriors.gppl import GPPLPosterior, cosine_prior_mean
from probrank.posteriors.laplace import LastLayerLaplacePosterior
from probrank.posteriors.neural import EnsemblePosterior, MCDropoutPosterior, as_float64_copy
from probrank.posteriors.swag import SWAGUtilityPosterior
from tests.models.conftest import learnable_lists

KINDS = ["mcdropout", "swag", "laplace", "ensemble", "gppl"]
TABLES = {
    "warm_start": {
        "hidden": (8, 4),
        "max_epochs": 15,
        "patience": 3,
        "swag_epochs": 3,
        "ensemble_size": 2,
    },
    "mcdropout": {"num_samples": 6},
    "swag": {"num_samples": 6},
    "update": {"max_epochs": 2},
}


def _settings(kind: str, **changes: object) -> InteractiveRankerSettings:
    return InteractiveRankerSettings(posterior=kind, **{**TABLES, **changes})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def lists() -> tuple[list[CandidateList], list[CandidateList]]:
    return learnable_lists(24, seed=0), learnable_lists(6, seed=1)


@pytest.fixture(scope="module")
def rankers(lists, tiny_encoder: TransformerEncoder) -> dict[str, InteractiveRanker]:
    """One fitted ranker per posterior (GPPL with the warm-start prior, so that it uses it)."""
    torch.manual_seed(0)
    train, _ = lists
    out = {}
    for kind in KINDS:
        settings = _settings(kind, gppl={"prior": "warm_start"})
        out[kind] = InteractiveRanker(settings, tiny_encoder).fit(train)
    return out


@pytest.fixture(scope="module")
def question(lists) -> CandidateList:
    return lists[1][0]


def test_fit_warm_starts_a_network_that_orders_the_training_answers(rankers, lists) -> None:
    ranker = rankers["laplace"]
    warm = ranker.warm_start
    assert ranker.fitted and warm is not None and warm.members == [warm.net]
    assert 0.0 <= warm.validation_accuracy <= 1.0 and 1 <= warm.epochs <= 15
    assert rankers["swag"].warm_start.swag is not None  # type: ignore[union-attr]
    assert len(rankers["ensemble"].warm_start.members) == 2  # type: ignore[union-attr]
    assert rankers["laplace"].warm_start.swag is None  # only what the posterior uses
    # the warm start learnt from the lists' grades: on held-out lists it puts relevant answers
    # (grades 3-4, written mostly with "good" words) above the others
    _, held_out = lists
    correct = total = 0
    for item in held_out:
        with torch.no_grad():
            utility = warm.net(ranker.features(item.query, item.candidates))
        for i, gi in enumerate(item.labels):
            for j, gj in enumerate(item.labels):
                if gi > gj:
                    correct += int(utility[i] > utility[j])
                    total += 1
    assert total > 10 and correct / total > 0.8


def test_a_session_asks_records_and_ranks(rankers, question: CandidateList) -> None:
    ranker = rankers["laplace"]
    n = len(question)
    session = ranker.session(question.query, question.candidates, seed=0)
    prior = session.posterior()
    assert prior.mean.shape == (n,) and prior.covariance_matrix.shape == (n, n)
    first, second = session.next_pair()
    assert session.next_pair() == (first, second) and first != second
    session.record(second, first)
    after = session.posterior()
    assert not torch.allclose(after.mean, prior.mean, rtol=0, atol=1e-9)
    assert after.mean[second] - after.mean[first] > prior.mean[second] - prior.mean[first]
    ranking = session.ranking()
    assert sorted(ranking) == list(range(n))
    assert session.num_judgements == 1 and session.strategy_name == "ei"
    eubo = ranker.session(question.query, question.candidates, strategy="eubo")
    assert eubo.strategy_name == "eubo"


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_builds_its_posterior_from_the_settings(
    kind: str, rankers, question: CandidateList
) -> None:
    ranker = rankers[kind]
    s, warm = ranker.settings, ranker.warm_start
    assert warm is not None
    x = ranker.features(question.query, question.candidates)
    update = dataclasses.replace(s.update, seed=3)
    direct = {
        "mcdropout": lambda: MCDropoutPosterior(
            warm.net, x, num_samples=6, update=update, prediction_seed=3
        ),
        "swag": lambda: SWAGUtilityPosterior(
            warm.net,
            warm.swag,
            x,
            layers=2,
            num_samples=6,
            sample_seed=3,
            update=update,  # type: ignore[arg-type]
        ),
        "laplace": lambda: LastLayerLaplacePosterior(
            warm.net, x, prior_precision=10.0, residual_variance=0.1, scale=0.3
        ),
        "ensemble": lambda: EnsemblePosterior(warm.members, x, update=update),
        "gppl": None,
    }[kind]
    got = ranker.preference_model(x, seed=3)
    if direct is None:  # GPPL with the warm-start prior mean
        assert isinstance(got, GPPLPosterior)
        with torch.no_grad():
            prior_mean = as_float64_copy(warm.net)(x.double())
        # no judgement yet: the posterior mean is the prior mean
        torch.testing.assert_close(got.posterior().mean, prior_mean, rtol=1e-6, atol=1e-6)
        return
    expected = direct()
    for _ in range(2):  # the same after a judgement (the update is wired the same way)
        a, b = got.posterior(), expected.posterior()
        torch.testing.assert_close(a.mean, b.mean, rtol=0, atol=0)
        torch.testing.assert_close(a.covariance_matrix, b.covariance_matrix, rtol=0, atol=0)
        got.update(0, 1)
        expected.update(0, 1)


def test_gppl_with_the_cosine_prior_needs_no_warm_start(question: CandidateList) -> None:
    x = torch.randn(len(question), 4 * 5, generator=torch.Generator().manual_seed(1))
    ranker = InteractiveRanker(InteractiveRankerSettings(posterior="gppl"))
    assert not ranker.settings.needs_warm_start and not ranker.fitted
    got = ranker.posterior(question.query, question.candidates, features=x).distribution
    expected = GPPLPosterior(x, cosine_prior_mean(5, 1.0), seed=0).posterior()
    torch.testing.assert_close(got.mean, expected.mean.double(), rtol=0, atol=0)


def test_the_session_is_the_simulation_protocols_session(rankers, question) -> None:
    ranker = rankers["mcdropout"]
    x = ranker.features(question.query, question.candidates)
    utilities = torch.tensor(question.grades, dtype=torch.float64)
    by_factory = simulate(
        lambda: ranker.preference_model(x, seed=2),
        SimulatedUser(utilities, 0.3, 5),
        "thompson",
        rounds=4,
        seed=2,
    )
    session = ranker.session(
        question.query, question.candidates, seed=2, features=x, strategy="thompson"
    )
    by_session = simulate_session(session, SimulatedUser(utilities, 0.3, 5), rounds=4)
    assert by_session.pairs == by_factory.pairs and by_session.winners == by_factory.winners
    assert by_session.rankings == by_factory.rankings


def test_posterior_and_botorch_model(rankers, question: CandidateList) -> None:
    ranker = rankers["laplace"]
    n = len(question)
    posterior = ranker.posterior(question.query, question.candidates, seed=0)
    assert isinstance(posterior, GPyTorchPosterior)
    assert posterior.mean.shape == (n, 1) and posterior.mean.dtype == torch.float64
    session = ranker.session(question.query, question.candidates, seed=0)
    torch.testing.assert_close(
        posterior.mean.squeeze(-1), session.posterior().mean.double(), rtol=0, atol=0
    )
    model = ranker.botorch_model(question.query, question.candidates, seed=0)
    X = model.datapoints
    assert X.shape[0] == n and X.dtype == torch.float64
    values = PosteriorMean(model)(X.unsqueeze(-2))
    torch.testing.assert_close(values, posterior.mean.squeeze(-1), rtol=1e-10, atol=1e-12)
    eubo = AnalyticExpectedUtilityOfBestOption(pref_model=model)
    pairs = torch.stack([X[[0, 1]], X[[2, 3]]])
    assert eubo(pairs).shape == (2,)
    conditioned = model.condition_on_observations(X, torch.tensor([[1, 0]]))
    moved = conditioned.posterior(X).mean.squeeze(-1)
    assert float(moved[1] - moved[0]) > float(posterior.mean[1, 0] - posterior.mean[0, 0])


def test_resume_continues_the_logged_session(
    rankers, question: CandidateList, tmp_path: Path
) -> None:
    ranker = rankers["swag"]
    log = tmp_path / "q.jsonl"
    live = ranker.session(question.query, question.candidates, seed=1, log_path=log)
    for _ in range(2):
        first, second = live.next_pair()
        live.record(first, second)
    expected_next = live.next_pair()
    expected_mean = live.posterior().mean
    live.close()
    header = read_log(log).header
    assert header["seed"] == 1
    assert header["metadata"] == {
        "model": "InteractiveRanker",
        "posterior": "swag",
        "query": question.query,
    }
    with ranker.resume(log, question.query, question.candidates) as resumed:
        assert resumed.next_pair() == expected_next and resumed.num_judgements == 2
        torch.testing.assert_close(resumed.posterior().mean, expected_mean, rtol=0, atol=0)
    with pytest.raises(InputDataError, match="'swag' posterior"):
        rankers["laplace"].resume(log, question.query, question.candidates)
    with pytest.raises(InputDataError, match="different prior"):
        ranker.resume(log, question.query, list(reversed(question.candidates)))


def test_to_inference_data_of_the_prior_and_of_a_session(rankers, question) -> None:
    ranker = rankers["laplace"]
    n = len(question)
    data = ranker.to_inference_data(question.query, question.candidates, num_samples=50)
    draws = data["posterior"]["utility"].values
    assert draws.shape == (1, 50, n)
    session = ranker.session(question.query, question.candidates)
    session.record(0, 1)
    later = ranker.to_inference_data(session=session, num_samples=4000, draw_seed=1)
    mean = torch.as_tensor(later["posterior"]["utility"].values).reshape(-1, n).mean(0)
    sd = session.posterior().variance.sqrt()
    # 5 standard errors of a 4000-draw mean
    assert bool(((mean - session.posterior().mean).abs() <= 5 * sd / 4000**0.5).all())
    with pytest.raises(InputDataError, match="question and its candidates, or a session"):
        ranker.to_inference_data()


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_give_identical_posteriors(
    kind: str, rankers, question: CandidateList, tiny_encoder: TransformerEncoder, tmp_path: Path
) -> None:
    ranker = rankers[kind]
    ranker.save(tmp_path / "ranker")
    again = InteractiveRanker.load(tmp_path / "ranker", encoder=tiny_encoder)
    rebuilt = InteractiveRanker.load(tmp_path / "ranker")  # the encoder from the manifest
    assert again.settings == ranker.settings and rebuilt.encoder.revision == tiny_encoder.revision
    assert again.warm_start is not None and ranker.warm_start is not None
    assert again.warm_start.epochs == ranker.warm_start.epochs
    for loaded in (again, rebuilt):
        sessions = [
            r.session(question.query, question.candidates, seed=4) for r in (ranker, loaded)
        ]
        for _ in range(2):
            a, b = (s.posterior() for s in sessions)
            torch.testing.assert_close(a.mean, b.mean, rtol=0, atol=0)
            torch.testing.assert_close(a.covariance_matrix, b.covariance_matrix, rtol=0, atol=0)
            pairs = [s.next_pair() for s in sessions]
            assert pairs[0] == pairs[1]
            for s in sessions:
                s.record(*pairs[0])


def test_an_unfitted_gppl_ranker_round_trips(tmp_path: Path) -> None:
    ranker = InteractiveRanker(InteractiveRankerSettings(posterior="gppl", strategy="eubo"))
    ranker.save(tmp_path / "gppl")
    again = InteractiveRanker.load(tmp_path / "gppl")
    assert again.settings == ranker.settings and not again.fitted


def test_bad_input_is_a_clear_error(
    rankers, question: CandidateList, tiny_encoder: TransformerEncoder, tmp_path: Path
) -> None:
    ranker = rankers["laplace"]
    with pytest.raises(InputDataError, match="not fitted"):
        InteractiveRanker(encoder=tiny_encoder).session(question.query, question.candidates)
    with pytest.raises(InputDataError, match="at least 2 candidates"):
        ranker.session(question.query, question.candidates[:1])
    with pytest.raises(InputDataError, match="feature rows"):
        ranker.session(question.query, question.candidates, features=torch.randn(2, 128))
    with pytest.raises(InputDataError, match="width"):
        ranker.session(question.query, question.candidates, features=torch.randn(6, 12))
    with pytest.raises(InputDataError, match="InteractiveRankerSettings"):
        InteractiveRanker({"posterior": "laplace"})  # type: ignore[arg-type]
    unlabelled = [CandidateList("u", "q", ["a", "b"], ["x", "y"])]
    with pytest.raises(InputDataError, match="no labels"):
        InteractiveRanker(encoder=tiny_encoder).fit(unlabelled, unlabelled)
    ranker.save(tmp_path / "ranker")
    manifest = tmp_path / "ranker" / "manifest.json"
    manifest.write_text(manifest.read_text().replace("InteractiveRanker", "GPFRanker", 1))
    with pytest.raises(InputDataError, match="GPFRanker model, not a InteractiveRanker"):
        InteractiveRanker.load(tmp_path / "ranker")
