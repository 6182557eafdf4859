"""probrank.testing: a fixed joint posterior behind BoTorch's Model API."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.acquisition.analytic import ExpectedImprovement, PosteriorMean
from botorch.acquisition.monte_carlo import qExpectedImprovement
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.sampling.normal import SobolQMCNormalSampler
from linear_operator.operators import RootLinearOperator

from probrank.exceptions import InputDataError
from probrank.testing import FixedPosteriorModel, random_mvn

# BoTorch's legacy (q)ExpectedImprovement is used on purpose: it is the reference here
pytestmark = pytest.mark.filterwarnings("ignore:.*ExpectedImprovement has known numerical issues")


def test_posterior_selects_the_named_candidates_jointly() -> None:
    mvn = random_mvn(6, generator=torch.Generator().manual_seed(0))
    model = FixedPosteriorModel(mvn)
    X = torch.tensor([[[4.0], [1.0], [1.0]], [[0.0], [5.0], [2.0]]], dtype=torch.float64)
    post = model.posterior(X)
    assert isinstance(post, GPyTorchPosterior)
    assert post.mean.shape == (2, 3, 1)
    index = torch.tensor([[4, 1, 1], [0, 5, 2]])
    torch.testing.assert_close(post.mean.squeeze(-1), mvn.mean[index], rtol=0, atol=0)
    cov = mvn.covariance_matrix
    expected = torch.stack([cov[i][:, i] for i in index])
    torch.testing.assert_close(post.distribution.covariance_matrix, expected, rtol=0, atol=0)
    assert model.datapoints.shape == (6, 1) and model.num_outputs == 1


def test_low_rank_posteriors_keep_their_covariance() -> None:
    mvn = random_mvn(5, rank=2, generator=torch.Generator().manual_seed(1))
    assert isinstance(mvn.lazy_covariance_matrix, RootLinearOperator)
    post = FixedPosteriorModel(mvn).posterior(torch.arange(5.0, dtype=torch.float64).view(1, 5, 1))
    torch.testing.assert_close(
        post.distribution.covariance_matrix[0], mvn.covariance_matrix, rtol=1e-12, atol=1e-12
    )


def test_bad_inputs_are_refused() -> None:
    model = FixedPosteriorModel(random_mvn(3))
    with pytest.raises(InputDataError, match="integral"):
        model.posterior(torch.tensor([[[0.5]]], dtype=torch.float64))
    with pytest.raises(InputDataError, match="out of range"):
        model.posterior(torch.tensor([[[3.0]]], dtype=torch.float64))
    with pytest.raises(InputDataError, match="batch_shape x q x 1"):
        model.posterior(torch.zeros(1, 2, 2, dtype=torch.float64))


def test_botorch_acquisition_functions_run_unchanged() -> None:
    mvn = random_mvn(8, generator=torch.Generator().manual_seed(2))
    model = FixedPosteriorModel(mvn)
    best_f = mvn.mean.max()  # a float64 tensor: BoTorch stores a Python float as float32
    single = torch.arange(8, dtype=torch.float64).view(8, 1, 1)
    with torch.no_grad():
        analytic = ExpectedImprovement(model, best_f=best_f)(single)
        sampler = SobolQMCNormalSampler(sample_shape=torch.Size([4096]), seed=0)
        mc = qExpectedImprovement(model, best_f=best_f, sampler=sampler)(single)
        means = PosteriorMean(model)(single)
    torch.testing.assert_close(means, mvn.mean, rtol=0, atol=1e-15)
    sd = mvn.variance.sqrt()
    u = (mvn.mean - best_f) / sd
    closed = sd * (torch.exp(-0.5 * u**2) / math.sqrt(2 * math.pi) + u * torch.special.ndtr(u))
    torch.testing.assert_close(analytic, closed, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(mc, analytic, rtol=0.02, atol=2e-3)  # QMC with 4096 points


def test_q_expected_improvement_on_a_correlated_pair_matches_monte_carlo() -> None:
    mvn = random_mvn(4, generator=torch.Generator().manual_seed(3))
    model = FixedPosteriorModel(mvn)
    best_f = mvn.mean.max()  # a float64 tensor: BoTorch stores a Python float as float32
    X = torch.tensor([[[0.0], [2.0]]], dtype=torch.float64)
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([8192]), seed=1)
    with torch.no_grad():
        value = float(qExpectedImprovement(model, best_f=best_f, sampler=sampler)(X))
    index = torch.tensor([0, 2])
    cov = mvn.covariance_matrix[index][:, index]
    chol = torch.linalg.cholesky(cov)
    z = torch.randn(1_000_000, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    f = mvn.mean[index] + z @ chol.T
    improvement = (f.max(dim=1).values - best_f).clamp(min=0.0)
    stderr = float(improvement.std()) / 1000.0
    assert abs(value - float(improvement.mean())) <= 5 * stderr + 0.01 * value
