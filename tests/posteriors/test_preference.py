"""Preference posteriors as BoTorch models: candidates, dtypes, conditioning, fantasies, and
every acquisition function the package documents as working."""

from __future__ import annotations

import copy

import pytest
import torch
from botorch.acquisition.active_learning import qNegIntegratedPosteriorVariance
from botorch.acquisition.analytic import (
    ExpectedImprovement,
    LogExpectedImprovement,
    PosteriorMean,
    UpperConfidenceBound,
)
from botorch.acquisition.knowledge_gradient import qKnowledgeGradient
from botorch.acquisition.logei import qLogExpectedImprovement, qLogNoisyExpectedImprovement
from botorch.acquisition.monte_carlo import (
    qExpectedImprovement,
    qNoisyExpectedImprovement,
    qSimpleRegret,
    qUpperConfidenceBound,
)
from botorch.acquisition.preference import (
    AnalyticExpectedUtilityOfBestOption,
    qExpectedUtilityOfBestOption,
)
from botorch.models.model import Model
from botorch.sampling.normal import SobolQMCNormalSampler
from botorch.sampling.pairwise_samplers import PairwiseSobolQMCNormalSampler

from probrank.acquisition.eubo import eubo_matrix
from probrank.exceptions import InputDataError
from probrank.posteriors import BradleyTerryLaplace, PreferenceUtilityModel
from probrank.posteriors.gppl import GPPLPosterior, cosine_prior_mean
from probrank.posteriors.laplace import LastLayerLaplacePosterior
from probrank.posteriors.neural import MCDropoutPosterior
from tests.posteriors.conftest import KINDS, H, N
from tests.posteriors.conftest import build as _build
from tests.posteriors.conftest import features as _features

F64 = torch.float64
ALL = ["bradley_terry", *KINDS]
PAIRS = torch.tensor([[0, 1], [2, 5], [3, 8]])
NORMAL = torch.distributions.Normal(torch.tensor(0.0, dtype=F64), torch.tensor(1.0, dtype=F64))


def _make(kind: str, nets: dict):  # type: ignore[no-untyped-def]
    if kind == "bradley_terry":
        x = _features(N, 99)
        return BradleyTerryLaplace.from_features(x, torch.linspace(-1.0, 1.0, N), scale=0.5)
    return _build(kind, nets)


def _datapoints(posterior) -> torch.Tensor:  # type: ignore[no-untyped-def]
    return posterior.botorch_model().datapoints


@pytest.mark.parametrize("kind", ALL)
def test_the_documented_acquisition_functions_run_and_agree_with_closed_forms(
    kind: str, nets: dict
) -> None:
    posterior = _make(kind, nets)
    posterior.update(2, 5)
    model = posterior.botorch_model()
    assert isinstance(model, Model) and isinstance(model, PreferenceUtilityModel)
    x = _datapoints(posterior)
    joint = posterior.posterior()
    mean, cov = joint.mean, joint.covariance_matrix
    sd = cov.diagonal().sqrt()
    best = float(mean.max())
    single = x.unsqueeze(1)  # N x 1 x d
    z = (mean - best) / sd
    ei = sd * (z * NORMAL.cdf(z) + NORMAL.log_prob(z).exp())
    torch.testing.assert_close(
        LogExpectedImprovement(model, best_f=best)(single).exp(), ei, rtol=1e-6, atol=1e-10
    )
    with pytest.warns(Warning):  # BoTorch's advice to prefer LogEI
        torch.testing.assert_close(
            ExpectedImprovement(model, best_f=best)(single), ei, rtol=1e-6, atol=1e-10
        )
    ucb = UpperConfidenceBound(model, beta=4.0)(single)
    torch.testing.assert_close(ucb, mean + 2.0 * sd, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(PosteriorMean(model)(single), mean, rtol=1e-12, atol=1e-12)
    # pairs: EUBO = E max(f_a, f_b) in closed form; its Monte Carlo forms agree to QMC error
    pairs = x[PAIRS]
    eubo = eubo_matrix(mean, cov)[PAIRS[:, 0], PAIRS[:, 1]]
    analytic = AnalyticExpectedUtilityOfBestOption(pref_model=model)(pairs)
    torch.testing.assert_close(analytic, eubo, rtol=1e-6, atol=1e-7)
    sampler = SobolQMCNormalSampler(torch.Size([4096]), seed=0)
    scale = float(sd.max())
    for mc in (
        qExpectedUtilityOfBestOption(pref_model=model, sampler=sampler),
        qSimpleRegret(model, sampler=sampler),
    ):
        torch.testing.assert_close(mc(pairs), eubo, rtol=0, atol=0.01 * scale)
    torch.testing.assert_close(
        qUpperConfidenceBound(model, beta=4.0, sampler=sampler)(single),
        ucb,
        rtol=0,
        atol=0.01 * scale,
    )
    for q_ei in (
        qExpectedImprovement(model, best_f=best, sampler=sampler),
        qLogExpectedImprovement(model, best_f=best, sampler=sampler),
    ):
        value = q_ei(single)
        value = value.exp() if isinstance(q_ei, qLogExpectedImprovement) else value
        torch.testing.assert_close(value, ei, rtol=0, atol=0.01 * scale)
    for noisy in (qNoisyExpectedImprovement, qLogNoisyExpectedImprovement):
        value = noisy(model, X_baseline=x, sampler=sampler, cache_root=False)(pairs)
        assert value.shape == (3,) and bool(torch.isfinite(value).all())


@pytest.mark.parametrize("kind", ALL)
def test_conditioning_on_observations_equals_updating(kind: str, nets: dict) -> None:
    updated, fresh = _make(kind, nets), _make(kind, nets)
    updated.update(2, 5)
    before = fresh.posterior()
    x = _datapoints(fresh)
    model = fresh.botorch_model()
    # X in another order, float32 like a user's tensors: rows are matched to the candidates
    for points, judged in ((x[[5, 2]], [[1, 0]]), (x[[5, 2, 2]].float(), [[1, 0], [2, 1]])):
        conditioned = model.condition_on_observations(points, torch.tensor(judged))
        assert conditioned.batch_shape == torch.Size([])
        post = conditioned.posterior(x)
        expected = updated.posterior()
        torch.testing.assert_close(post.mean.squeeze(-1), expected.mean, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(
            post.distribution.covariance_matrix, expected.covariance_matrix, rtol=1e-10, atol=1e-12
        )
    after = fresh.posterior()  # the model it came from is unchanged
    assert fresh.comparisons == [] and torch.equal(after.mean, before.mean)


@pytest.mark.parametrize("kind", ["laplace", "gppl", "mcdropout"])
def test_conditioning_on_a_new_point_equals_a_posterior_that_had_it(kind: str, nets: dict) -> None:
    x, new = _features(N, 51), _features(1, 52)
    build = {
        "laplace": lambda f: LastLayerLaplacePosterior(
            nets["net"], f, residual_variance=0.2, scale=0.3
        ),
        "gppl": lambda f: GPPLPosterior(f, cosine_prior_mean(H, 2.0), lengthscale=2.0, seed=1),
        "mcdropout": lambda f: MCDropoutPosterior(nets["net"], f, prediction_seed=3),
    }[kind]
    reference = build(torch.cat([x, new]))
    reference.update(N, 4)  # the new point beat candidate 4
    model = build(x).botorch_model()
    conditioned = model.condition_on_observations(torch.cat([x[[4]], new]), torch.tensor([[1, 0]]))
    post = conditioned.posterior(torch.cat([x, new]))
    expected = reference.posterior()
    torch.testing.assert_close(post.mean.squeeze(-1), expected.mean, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(
        post.distribution.covariance_matrix, expected.covariance_matrix, rtol=1e-6, atol=1e-9
    )


def test_bradley_terry_knows_only_its_candidates(nets: dict) -> None:
    index_model = BradleyTerryLaplace(torch.zeros(4), torch.eye(4, dtype=F64)).botorch_model()
    torch.testing.assert_close(index_model.datapoints, torch.arange(4.0, dtype=F64)[:, None])
    post = index_model.condition_on_observations(
        torch.tensor([[3.0], [1.0]]), torch.tensor([[0, 1]])
    ).posterior(torch.tensor([[1.0], [3.0]], dtype=F64))
    assert float(post.mean[1, 0]) > 0 > float(post.mean[0, 0])  # 3 beat 1
    with pytest.raises(InputDataError, match="only its candidates"):
        index_model.posterior(torch.tensor([[0.5]]))
    features_model = _make("bradley_terry", nets).botorch_model()
    with pytest.raises(InputDataError, match="only its candidates"):
        features_model.posterior(_features(2, 7))


def test_knowledge_gradient_and_fantasies_match_judgements_by_hand() -> None:
    x = _features(N, 61)
    bt = BradleyTerryLaplace.from_features(x, torch.linspace(-1.0, 1.0, N), scale=0.5)
    bt.update(6, 1)
    model = bt.botorch_model()
    actual = x[PAIRS]  # b = 3 candidate pairs
    fantasy_points = x[torch.tensor([[4, 7], [0, 7], [8, 2]])]  # b x F: KG's inner choices
    value = qKnowledgeGradient(
        model, num_fantasies=2, sampler=PairwiseSobolQMCNormalSampler(torch.Size([2]), seed=7)
    )(torch.cat([actual, fantasy_points], -2))
    # by hand: the same sampler's comparisons, each applied to a copy by update()
    sampled = PairwiseSobolQMCNormalSampler(torch.Size([2]), seed=7)(model.posterior(actual))
    assert sampled.shape == (2, 3, 1, 2) and not sampled.is_floating_point()
    expected = torch.zeros(3, dtype=F64)
    for f in range(2):
        for b in range(3):
            judged = copy.deepcopy(bt)
            winner, loser = sampled[f, b, 0].tolist()
            judged.update(int(PAIRS[b, winner]), int(PAIRS[b, loser]))
            choice = [[4, 7], [0, 7], [8, 2]][b][f]
            expected[b] += judged.posterior().mean[choice] / 2
    torch.testing.assert_close(value, expected, rtol=1e-10, atol=1e-12)
    # the fantasy model is `F x b`, and broadcasts X without the fantasy dimension
    fantasy = model.fantasize(actual, PairwiseSobolQMCNormalSampler(torch.Size([2]), seed=7))
    assert fantasy.batch_shape == (2, 3)
    assert fantasy.posterior(x[None, None]).mean.shape == (2, 3, N, 1)
    assert fantasy.posterior(actual).mean.shape == (2, 3, 2, 1)


@pytest.mark.parametrize("kind", ALL)
def test_look_ahead_acquisition_runs_on_every_posterior(kind: str, nets: dict) -> None:
    posterior = _make(kind, nets)
    model = posterior.botorch_model()
    x = _datapoints(posterior)
    pairs = x[PAIRS[:2]]
    kg = qKnowledgeGradient(
        model, num_fantasies=2, sampler=PairwiseSobolQMCNormalSampler(torch.Size([2]), seed=0)
    )(torch.cat([pairs, x[torch.tensor([[4, 7], [0, 7]])]], -2))
    assert kg.shape == (2,) and bool(torch.isfinite(kg).all())
    nipv = qNegIntegratedPosteriorVariance(
        model, mc_points=x, sampler=PairwiseSobolQMCNormalSampler(torch.Size([1]), seed=0)
    )(pairs)
    assert nipv.shape == (2,) and bool(torch.isfinite(nipv).all())
    if kind in ("bradley_terry", "laplace", "gppl"):
        # a Laplace posterior's variance can only shrink with a judgement
        assert bool((nipv >= -posterior.posterior().variance.mean() - 1e-12).all())


def test_real_valued_fantasies_are_refused_with_the_pairwise_sampler_named() -> None:
    x = _features(N, 71)
    model = BradleyTerryLaplace.from_features(x).botorch_model()
    with pytest.raises(InputDataError, match="PairwiseSobolQMCNormalSampler"):
        model.fantasize(x[PAIRS], SobolQMCNormalSampler(torch.Size([2]), seed=0))
    with pytest.raises(InputDataError, match=r"\[0, 2\)"):
        model.condition_on_observations(x[[0, 1]], torch.tensor([[0, 2]]))
    with pytest.raises(InputDataError, match="batch_shape x q"):
        model.posterior(x[0])
