"""Posteriors over one question's candidates: covariance, BoTorch, updates, closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.acquisition.logei import qLogExpectedImprovement
from botorch.acquisition.monte_carlo import qExpectedImprovement
from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption
from botorch.models import PairwiseGP
from botorch.models.pairwise_gp import PairwiseLaplaceMarginalLogLikelihood
from botorch.sampling.normal import SobolQMCNormalSampler
from gpytorch.kernels import RBFKernel, ScaleKernel
from linear_operator.operators import RootLinearOperator

from probrank.acquisition.eubo import eubo_matrix
from probrank.exceptions import InputDataError
from probrank.nn.siamese import SiameseUtilityNet
from probrank.posteriors.bradley_terry import BradleyTerryLaplace
from probrank.posteriors.candidate import with_jitter
from probrank.posteriors.gppl import (
    GPPLPosterior,
    PriorMeanPairwiseGP,
    cosine_prior_mean,
    laplace_log_evidence,
)
from probrank.posteriors.laplace import LastLayerLaplacePosterior
from probrank.posteriors.neural import (
    EnsemblePosterior,
    MCDropoutPosterior,
    dropout_passes,
)
from probrank.posteriors.swag import SWAGUtilityPosterior, swag_parameters
from tests.posteriors.conftest import KINDS, H, N
from tests.posteriors.conftest import build as _build
from tests.posteriors.conftest import features as _features


@pytest.mark.parametrize("kind", KINDS)
def test_joint_posterior_is_a_valid_gaussian_with_a_cholesky(kind: str, nets: dict) -> None:
    model = _build(kind, nets)
    for _ in range(2):
        post = model.posterior()
        assert post.mean.shape == (N,) and post.covariance_matrix.shape == (N, N)
        cov = (
            post.covariance_matrix.to_dense()
            if hasattr(post.covariance_matrix, "to_dense")
            else post.covariance_matrix
        )
        torch.testing.assert_close(cov, cov.T, rtol=0, atol=1e-12)
        assert torch.linalg.cholesky_ex(cov).info == 0
        assert bool(torch.isfinite(post.mean).all())
        model.update(0, 1)


def test_mc_dropout_posterior_is_the_jittered_sample_moments_of_seeded_passes(nets: dict) -> None:
    x = _features(N, 7)
    model = MCDropoutPosterior(nets["net"], x, num_samples=20, prediction_seed=11, jitter=1e-5)
    passes = dropout_passes(model.net, x, 20, 11)
    assert passes.shape == (20, N)
    post = model.posterior()
    torch.testing.assert_close(post.mean, passes.mean(0), rtol=1e-12, atol=1e-12)
    expected = torch.cov(passes.T) + 1e-5 * torch.eye(N, dtype=torch.float64)
    torch.testing.assert_close(post.covariance_matrix, expected, rtol=1e-10, atol=1e-12)
    # the caller's network is copied, not trained
    assert nets["net"].output.weight.dtype == torch.float64


def test_ensemble_posterior_is_the_sample_moments_of_the_members(nets: dict) -> None:
    x = _features(N, 8)
    model = EnsemblePosterior(nets["members"], x, jitter=1e-6)
    with torch.no_grad():
        outputs = torch.stack([m.eval()(x) for m in nets["members"]])
    post = model.posterior()
    torch.testing.assert_close(post.mean, outputs.mean(0), rtol=1e-12, atol=1e-12)
    expected = torch.cov(outputs.T) + 1e-6 * torch.eye(N, dtype=torch.float64)
    torch.testing.assert_close(post.covariance_matrix, expected, rtol=1e-10, atol=1e-12)


def test_swag_posterior_uses_draws_around_the_swa_mean(nets: dict) -> None:
    x = _features(N, 9)
    swag = nets["swag"]
    model = SWAGUtilityPosterior(nets["net"], swag, x, num_samples=30, sample_seed=2)
    draws = swag.sample(30, torch.Generator().manual_seed(2))
    outputs = []
    for draw in draws:
        net = SiameseUtilityNet(4 * H, (16, 4), dropout=0.2, activation="tanh").double()
        net.load_state_dict(nets["net"].state_dict())
        params = swag_parameters(net, 2)
        torch.nn.utils.vector_to_parameters(draw, params)
        with torch.no_grad():
            outputs.append(net.eval()(x))
    samples = torch.stack(outputs)
    post = model.posterior()
    torch.testing.assert_close(post.mean, samples.mean(0), rtol=1e-10, atol=1e-10)
    expected = torch.cov(samples.T) + 1e-6 * torch.eye(N, dtype=torch.float64)
    torch.testing.assert_close(post.covariance_matrix, expected, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_botorch_acquisition_functions_run_unchanged(kind: str, nets: dict) -> None:
    model = _build(kind, nets)
    model.update(2, 5)
    botorch_model = model.botorch_model()
    x = model.features
    post = model.posterior()
    best = float(post.mean.max())
    log_ei = LogExpectedImprovement(botorch_model, best_f=best)(x.unsqueeze(1))
    assert log_ei.shape == (N,) and bool(torch.isfinite(log_ei).all())
    mean, var = post.mean, post.covariance_matrix.diagonal()
    z = (mean - best) / var.sqrt()
    normal = torch.distributions.Normal(0.0, 1.0)
    ei = var.sqrt() * (z * normal.cdf(z) + normal.log_prob(z).exp())
    torch.testing.assert_close(log_ei.exp(), ei, rtol=1e-4, atol=1e-8)
    pairs = torch.tensor([[0, 1], [2, 5], [3, 8]])
    sampler = SobolQMCNormalSampler(torch.Size([256]), seed=0)
    qei = qExpectedImprovement(botorch_model, best_f=best, sampler=sampler)(x[pairs])
    qlogei = qLogExpectedImprovement(botorch_model, best_f=best, sampler=sampler)(x[pairs])
    assert qei.shape == (3,) and bool((qei >= 0).all()) and bool(torch.isfinite(qlogei).all())
    eubo = AnalyticExpectedUtilityOfBestOption(pref_model=botorch_model)(x[pairs])
    full = post.covariance_matrix
    expected = eubo_matrix(mean, full)[pairs[:, 0], pairs[:, 1]]
    torch.testing.assert_close(eubo, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", KINDS)
def test_an_update_moves_the_winner_above_the_loser(kind: str, nets: dict) -> None:
    model = _build(kind, nets)
    before = model.posterior()
    order = torch.argsort(before.mean, descending=True)
    loser, winner = int(order[0]), int(order[1])
    model.update(winner, loser)
    after = model.posterior()
    gap_before = float(before.mean[winner] - before.mean[loser])
    gap_after = float(after.mean[winner] - after.mean[loser])
    assert gap_after > gap_before
    assert model.comparisons == [(winner, loser)]
    if kind != "gppl":  # margin-trained networks and the sharp Laplace likelihood (s = 0.05)
        assert gap_after > 0
        return

    # GPPL's probit likelihood has unit noise: one judgement on two strongly correlated
    # candidates moves them together; the probability that the winner is better still rises
    def prob(post) -> float:  # type: ignore[no-untyped-def]
        cov = post.covariance_matrix
        var = cov[winner, winner] + cov[loser, loser] - 2 * cov[winner, loser]
        return float(torch.special.ndtr((post.mean[winner] - post.mean[loser]) / var.sqrt()))

    assert prob(after) > prob(before)


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_judgements_give_bit_identical_posteriors(kind: str, nets: dict) -> None:
    first, second = _build(kind, nets), _build(kind, nets)
    for pair in [(1, 4), (6, 1), (3, 2)]:
        first.update(*pair)
        second.update(*pair)
    assert torch.equal(first.posterior().mean, second.posterior().mean)
    assert torch.equal(first.posterior().covariance_matrix, second.posterior().covariance_matrix)
    with pytest.raises(InputDataError):
        first.update(2, 2)
    with pytest.raises(InputDataError):
        first.update(0, N)


def test_laplace_equals_the_weight_space_laplace_computed_by_autograd(nets: dict) -> None:
    x = _features(N, 21)
    lam, scale = 2.0, 0.3
    model = LastLayerLaplacePosterior(nets["net"], x, prior_precision=lam, scale=scale, jitter=1e-9)
    judgements = [(0, 3), (5, 0), (7, 2), (1, 8)]
    for pair in judgements:
        model.update(*pair)
    with torch.no_grad():
        base, phi = model.net(x), model.net.embed(x)
    d = torch.zeros(len(judgements), N, dtype=torch.float64)
    for row, (w, loser) in enumerate(judgements):
        d[row, w], d[row, loser] = 1.0, -1.0

    def neg_log_posterior(delta: torch.Tensor) -> torch.Tensor:
        f = base + phi @ delta
        return -torch.nn.functional.logsigmoid(d @ f / scale).sum() + 0.5 * lam * delta @ delta

    delta = torch.zeros(phi.shape[1], dtype=torch.float64)
    for _ in range(50):  # Newton with autograd derivatives
        grad = torch.autograd.functional.jacobian(neg_log_posterior, delta)
        hess = torch.autograd.functional.hessian(neg_log_posterior, delta)
        delta = delta - torch.linalg.solve(hess, grad)
    hess = torch.autograd.functional.hessian(neg_log_posterior, delta)
    post = model.posterior()
    torch.testing.assert_close(post.mean, base + phi @ delta, rtol=1e-7, atol=1e-8)
    expected = phi @ torch.linalg.inv(hess) @ phi.T
    torch.testing.assert_close(post.covariance_matrix, expected, rtol=1e-5, atol=1e-7)


def test_laplace_predictive_at_the_candidates_is_the_posterior(nets: dict) -> None:
    x = _features(N, 22)
    model = LastLayerLaplacePosterior(nets["net"], x, residual_variance=0.3, scale=0.2)
    model.update(1, 2)
    model.update(4, 1)
    extra = _features(3, 23)
    joint = model.posterior_at(torch.cat([x, extra]).unsqueeze(0))
    post = model.posterior()
    torch.testing.assert_close(joint.mean[0, :N], post.mean, rtol=1e-8, atol=1e-9)
    torch.testing.assert_close(
        joint.covariance_matrix[0, :N, :N], post.covariance_matrix, rtol=1e-7, atol=1e-9
    )


def _kernel() -> ScaleKernel:
    kernel = ScaleKernel(RBFKernel()).to(torch.float64)
    kernel.base_kernel.lengthscale = 1.3
    kernel.outputscale = 0.8
    kernel.requires_grad_(False)
    return kernel


def test_pairwise_gp_with_a_prior_mean_equals_the_probit_laplace_reference() -> None:
    x = _features(7, 31)
    comparisons = torch.tensor([[0, 1], [2, 1], [3, 0], [6, 5]])
    prior = cosine_prior_mean(H, 3.0)
    gp = PriorMeanPairwiseGP(x, comparisons, prior, covar_module=_kernel(), jitter=1e-8)
    gp.eval()
    post = gp.posterior(x)
    covariance = _kernel()(x).to_dense() + 1e-8 * torch.eye(7, dtype=torch.float64)
    reference = BradleyTerryLaplace(prior(x), covariance, scale=math.sqrt(2.0), link="probit")
    for w, loser in comparisons.tolist():
        reference.update(w, loser)
    expected = reference.posterior()
    torch.testing.assert_close(post.mean.squeeze(-1), expected.mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(
        post.distribution.covariance_matrix, expected.covariance_matrix, rtol=1e-4, atol=1e-6
    )
    # without the prior-mean override the MAP is a different one
    plain = PairwiseGP(x, comparisons, covar_module=_kernel(), jitter=1e-8)
    assert not torch.allclose(plain.utility, gp.utility, atol=1e-3)


def test_corrected_evidence_agrees_with_botorch_at_zero_mean_and_ignores_a_constant_shift() -> None:
    x = _features(7, 32)
    comparisons = torch.tensor([[0, 1], [2, 1], [3, 0], [4, 6]])
    zero = PriorMeanPairwiseGP(
        x, comparisons, lambda z: torch.zeros(z.shape[:-1]), covar_module=_kernel()
    )
    zero.train()
    botorch_mll = PairwiseLaplaceMarginalLogLikelihood(zero.likelihood, zero)
    expected = botorch_mll(zero(zero.datapoints), zero.unconsolidated_comparisons)
    torch.testing.assert_close(laplace_log_evidence(zero), expected.detach(), rtol=1e-8, atol=1e-8)
    # the probit likelihood sees differences only: shifting the prior mean by a constant shifts
    # f_map and leaves the evidence unchanged; BoTorch's objective changes (its bug)
    shifted = PriorMeanPairwiseGP(
        x, comparisons, lambda z: torch.full(z.shape[:-1], 5.0), covar_module=_kernel()
    )
    torch.testing.assert_close(
        shifted.utility.detach(), zero.utility.detach() + 5.0, rtol=0, atol=1e-5
    )
    torch.testing.assert_close(
        laplace_log_evidence(shifted), laplace_log_evidence(zero), rtol=1e-6, atol=1e-6
    )
    shifted.train()
    wrong = PairwiseLaplaceMarginalLogLikelihood(shifted.likelihood, shifted)(
        shifted(shifted.datapoints), shifted.unconsolidated_comparisons
    )
    assert float(wrong.detach()) < float(expected.detach()) - 1.0


def test_gppl_is_seeded_and_leaves_the_global_numpy_rng_alone() -> None:
    x = _features(N, 33)
    np.random.seed(5)  # noqa: NPY002
    state = np.random.get_state()  # noqa: NPY002
    first = GPPLPosterior(x, cosine_prior_mean(H))
    prior = first.posterior()
    torch.testing.assert_close(prior.mean, cosine_prior_mean(H)(x), rtol=0, atol=1e-12)
    first.update(3, 4)
    after = np.random.get_state()  # noqa: NPY002
    assert after[1].tolist() == state[1].tolist() and after[2] == state[2]
    second = GPPLPosterior(x, cosine_prior_mean(H))
    second.update(3, 4)
    assert torch.equal(first.posterior().mean, second.posterior().mean)


def test_with_jitter_keeps_a_lazy_root_and_adds_the_diagonal() -> None:
    from gpytorch.distributions import MultivariateNormal

    root = torch.randn(5, 2, dtype=torch.float64)
    mvn = MultivariateNormal(torch.zeros(5, dtype=torch.float64), RootLinearOperator(root))
    jittered = with_jitter(mvn, 1e-3)
    expected = root @ root.T + 1e-3 * torch.eye(5, dtype=torch.float64)
    torch.testing.assert_close(jittered.covariance_matrix, expected, rtol=1e-12, atol=1e-14)
    assert with_jitter(mvn, 0.0) is mvn
    with pytest.raises(InputDataError):
        with_jitter(mvn, -1.0)


@pytest.mark.parametrize("kind", KINDS)
def test_identical_answers_are_handled(kind: str, nets: dict) -> None:
    x = _features(N, 99)
    x[4] = x[2]  # the same answer text twice
    rebuilt = {
        "mcdropout": lambda: MCDropoutPosterior(nets["net"], x, prediction_seed=3),
        "swag": lambda: SWAGUtilityPosterior(nets["net"], nets["swag"], x, sample_seed=5),
        "laplace": lambda: LastLayerLaplacePosterior(nets["net"], x, residual_variance=0.2),
        "ensemble": lambda: EnsemblePosterior(nets["members"], x),
        "gppl": lambda: GPPLPosterior(x, cosine_prior_mean(H, 2.0), seed=1),
    }[kind]
    twin = rebuilt()
    for pair in [(2, 4), (4, 0), (7, 2)]:
        twin.update(*pair)
        post = twin.posterior()
        assert torch.linalg.cholesky_ex(post.covariance_matrix).info == 0
        torch.testing.assert_close(post.mean[2], post.mean[4], rtol=0, atol=1e-9)
