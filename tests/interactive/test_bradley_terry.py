"""BradleyTerryLaplace: the MAP is a stationary point, the covariance the inverse Hessian."""

from __future__ import annotations

import itertools
import math
import random

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.posteriors.bradley_terry import BradleyTerryLaplace, Link, rbf_kernel
from probrank.posteriors.protocol import PreferenceModel


def _model(link: str = "logistic", scale: float = 0.7) -> BradleyTerryLaplace:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(9, 4, generator=generator, dtype=torch.float64)
    prior_mean = torch.randn(9, generator=generator, dtype=torch.float64)
    return BradleyTerryLaplace.from_features(
        features, prior_mean, outputscale=1.3, jitter=1e-4, link=link, scale=scale
    )


JUDGEMENTS = [(0, 1), (2, 1), (0, 2), (3, 4), (4, 3), (5, 0), (5, 0), (8, 7), (6, 8)]


def _log_posterior(model: BradleyTerryLaplace, f: torch.Tensor) -> torch.Tensor:
    winners = torch.tensor([w for w, _ in model.comparisons])
    losers = torch.tensor([loser for _, loser in model.comparisons])
    z = (f[winners] - f[losers]) / model.scale
    if model.link is Link.LOGISTIC:
        log_lik = torch.nn.functional.logsigmoid(z).sum()
    else:
        log_lik = torch.special.log_ndtr(z).sum()
    r = f - model.prior_mean
    return log_lik - 0.5 * r @ torch.linalg.solve(model.prior_covariance, r)


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_laplace_posterior_against_autograd(link: str) -> None:
    model = _model(link)
    for winner, loser in JUDGEMENTS:
        model.update(winner, loser)
    posterior = model.posterior()
    f = posterior.mean.clone().requires_grad_(True)
    (gradient,) = torch.autograd.grad(_log_posterior(model, f), f)
    torch.testing.assert_close(gradient, torch.zeros_like(gradient), rtol=0, atol=1e-9)
    hessian = torch.autograd.functional.hessian(lambda v: _log_posterior(model, v), posterior.mean)
    expected = torch.linalg.inv(-hessian)
    torch.testing.assert_close(posterior.covariance_matrix, expected, rtol=1e-8, atol=1e-10)


def test_no_judgement_means_the_prior() -> None:
    model = _model()
    posterior = model.posterior()
    torch.testing.assert_close(posterior.mean, model.prior_mean, rtol=0, atol=0)
    torch.testing.assert_close(posterior.covariance_matrix, model.prior_covariance, rtol=0, atol=0)
    assert isinstance(model, PreferenceModel)


def test_the_order_of_judgements_does_not_matter() -> None:
    reference = _model()
    for pair in JUDGEMENTS:
        reference.update(*pair)
    shuffled = list(JUDGEMENTS)
    random.Random(1).shuffle(shuffled)
    other = _model()
    for pair in shuffled:
        other.update(*pair)
    torch.testing.assert_close(
        other.posterior().mean, reference.posterior().mean, atol=1e-10, rtol=0
    )
    torch.testing.assert_close(
        other.posterior().covariance_matrix,
        reference.posterior().covariance_matrix,
        atol=1e-10,
        rtol=0,
    )


def test_a_judgement_moves_the_winner_above_the_loser_and_shrinks_uncertainty() -> None:
    model = _model()
    prior = model.posterior()
    model.update(7, 2)
    posterior = model.posterior()
    before = prior.mean[7] - prior.mean[2]
    after = posterior.mean[7] - posterior.mean[2]
    assert after > before
    w = torch.zeros(9, dtype=torch.float64)
    w[7], w[2] = 1.0, -1.0
    assert w @ posterior.covariance_matrix @ w < w @ prior.covariance_matrix @ w
    # repeated consistent judgements keep pushing in the same direction
    for _ in range(5):
        model.update(7, 2)
    assert model.posterior().mean[7] - model.posterior().mean[2] > after


def test_same_inputs_same_bits() -> None:
    first, second = _model(), _model()
    for pair in JUDGEMENTS:
        first.update(*pair)
        second.update(*pair)
    assert torch.equal(first.posterior().mean, second.posterior().mean)
    assert torch.equal(first.posterior().covariance_matrix, second.posterior().covariance_matrix)


def test_strong_evidence_converges() -> None:
    # a near-deterministic likelihood and many judgements: the damped Newton must still converge
    model = BradleyTerryLaplace(torch.zeros(4), torch.eye(4), scale=0.01)
    for winner, loser in itertools.permutations(range(4), 2):
        if winner < loser:
            model.update(winner, loser)
    mean = model.posterior().mean
    assert torch.all(mean[:-1] > mean[1:])


def test_rbf_kernel() -> None:
    x = torch.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]], dtype=torch.float64)
    kernel = rbf_kernel(x, lengthscale=2.0, outputscale=1.5, jitter=0.01)
    assert kernel[0, 1] == pytest.approx(1.5 * math.exp(-25 / 8), rel=1e-12)
    assert kernel[0, 0] == pytest.approx(1.51, rel=1e-12)
    median = rbf_kernel(x, jitter=0.0)  # median distance of {5, 1, sqrt(18)} is sqrt(18)
    assert median[0, 1] == pytest.approx(math.exp(-25 / 36), rel=1e-12)


def test_bad_inputs() -> None:
    with pytest.raises(InputDataError, match="not positive definite"):
        BradleyTerryLaplace(torch.zeros(2), torch.ones(2, 2))
    with pytest.raises(InputDataError, match="not symmetric"):
        BradleyTerryLaplace(torch.zeros(2), torch.tensor([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(InputDataError, match="prior_mean must be n"):
        BradleyTerryLaplace(torch.zeros(3), torch.eye(2))
    with pytest.raises(InputDataError, match="link must be one of"):
        BradleyTerryLaplace(torch.zeros(2), torch.eye(2), link="cauchit")
    model = BradleyTerryLaplace(torch.zeros(3), torch.eye(3))
    with pytest.raises(InputDataError, match="must differ"):
        model.update(1, 1)
    with pytest.raises(InputDataError, match="out of range"):
        model.update(0, 3)
    assert model.comparisons == []


def test_inputs_are_not_mutated() -> None:
    mean, cov = torch.zeros(3), torch.eye(3)
    model = BradleyTerryLaplace(mean, cov)
    model.update(0, 1)
    assert torch.equal(mean, torch.zeros(3)) and torch.equal(cov, torch.eye(3))
    posterior = model.posterior()
    posterior.mean.add_(100.0)  # a caller scribbling on the returned posterior
    assert model.posterior().mean.abs().max() < 10
