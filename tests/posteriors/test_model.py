from __future__ import annotations

import pytest
import torch
from botorch.acquisition.analytic import (
    ExpectedImprovement,
    LogExpectedImprovement,
    UpperConfidenceBound,
)
from botorch.acquisition.monte_carlo import qExpectedImprovement
from botorch.posteriors.gpytorch import GPyTorchPosterior
from linear_operator.operators import RootLinearOperator

from probrank.exceptions import InputDataError
from probrank.nn.heads import DeepEnsembleHead, FitSettings, MCDropoutHead, SNGPHead
from probrank.posteriors import UtilityModel, sample_mvn


@pytest.fixture
def sngp() -> SNGPHead:
    x = torch.randn(200, 4, dtype=torch.float64)
    y = (x[:, 0] > 0).double()
    head = SNGPHead(4, hidden=16, num_features=64, seed=0).double()
    head.fit(x, y, FitSettings(epochs=3, batch_size=50))
    return head


def test_posterior_shapes_and_covariance_of_the_laplace_head(sngp: SNGPHead) -> None:
    model = UtilityModel(sngp)
    X = torch.randn(3, 5, 4, dtype=torch.float64)
    post = model.posterior(X)
    assert isinstance(post, GPyTorchPosterior)
    assert post.mean.shape == (3, 5, 1) and post.variance.shape == (3, 5, 1)
    assert isinstance(post.distribution.lazy_covariance_matrix, RootLinearOperator)
    phi = sngp.phi(X).detach()
    expected = phi @ sngp.gp.output.covariance @ phi.transpose(-1, -2)
    torch.testing.assert_close(post.distribution.covariance_matrix, expected, rtol=1e-8, atol=1e-10)
    mean, var = sngp.predictive(X)
    torch.testing.assert_close(post.mean.squeeze(-1), mean, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(post.variance.squeeze(-1), var, rtol=1e-8, atol=1e-10)
    noisy = UtilityModel(sngp, noise_variance=0.5).posterior(X, observation_noise=True)
    torch.testing.assert_close(noisy.variance, post.variance + 0.5, rtol=1e-8, atol=1e-10)


def test_botorch_acquisition_functions_run_on_the_model(sngp: SNGPHead) -> None:
    model = UtilityModel(sngp)
    X = torch.randn(7, 1, 4, dtype=torch.float64)
    ei = ExpectedImprovement(model, best_f=0.0)(X)
    ucb = UpperConfidenceBound(model, beta=2.0)(X)
    assert ei.shape == (7,) and torch.all(ei >= 0)
    post = model.posterior(X)
    m, s = post.mean.reshape(-1), post.variance.reshape(-1).sqrt()
    torch.testing.assert_close(ucb, m + 2.0**0.5 * s, rtol=1e-8, atol=1e-10)
    normal = torch.distributions.Normal(0.0, 1.0)
    z = m / s
    expected_ei = s * (z * normal.cdf(z) + normal.log_prob(z).exp())
    torch.testing.assert_close(ei, expected_ei, rtol=1e-6, atol=1e-8)
    qei = qExpectedImprovement(model, best_f=0.0)(torch.randn(4, 3, 4, dtype=torch.float64))
    assert qei.shape == (4,) and torch.all(qei >= 0)


def test_sample_based_posteriors_match_sample_moments() -> None:
    samples = torch.randn(30, 2, 6, dtype=torch.float64)
    mvn = sample_mvn(samples)
    centred = samples - samples.mean(0)
    expected = torch.einsum("sbi,sbj->bij", centred, centred) / 29
    torch.testing.assert_close(mvn.covariance_matrix, expected, rtol=1e-10, atol=1e-12)
    x = torch.randn(100, 3)
    y = (x[:, 0] > 0).float()
    for head in (MCDropoutHead(3, hidden=8, dropout=0.3), DeepEnsembleHead(3, hidden=8)):
        head.fit(x, y, FitSettings(epochs=2))
        post = UtilityModel(head).posterior(torch.randn(2, 4, 3))
        assert post.mean.shape == (2, 4, 1)
        assert torch.all(post.variance > 0)


def test_bad_arguments_raise(sngp: SNGPHead) -> None:
    model = UtilityModel(sngp)
    with pytest.raises(InputDataError, match="one output"):
        model.posterior(torch.randn(2, 4, dtype=torch.float64), output_indices=[1])
    with pytest.raises(InputDataError, match="batch_shape"):
        model.posterior(torch.randn(4, dtype=torch.float64))


@pytest.mark.parametrize("head_class", [SNGPHead, MCDropoutHead, DeepEnsembleHead])
def test_float64_inputs_on_a_float32_head(head_class: type) -> None:
    # Regression: BoTorch's default dtype is float64; a float32 head raised a dtype mismatch,
    # and an acquisition function's ``.to(X)`` converted the caller's head to float64.
    x = torch.randn(100, 4)
    head = head_class(4, hidden=8)
    head.fit(x, (x[:, 0] > 0).float(), FitSettings(epochs=2))
    model = UtilityModel(head)
    X = torch.randn(3, 2, 4, dtype=torch.float64)
    post = model.posterior(X)
    assert post.mean.dtype == torch.float64 and post.mean.shape == (3, 2, 1)
    reference = head.posterior(X.float())  # what the head computes on the same points
    torch.testing.assert_close(post.mean.squeeze(-1), reference.mean.double(), rtol=0, atol=0)
    # the head's (low-rank) covariance operator, evaluated in float64
    expected = reference.lazy_covariance_matrix.to(torch.float64).to_dense()
    torch.testing.assert_close(post.distribution.covariance_matrix, expected, rtol=0, atol=0)
    # float32 round-off, relative to the matrix's scale: an entry that is 0 in exact arithmetic
    # (a candidate whose active units no pass drops has zero variance) is round-off only
    scale = float(expected.abs().max())
    torch.testing.assert_close(
        expected, reference.covariance_matrix.double(), rtol=1e-6, atol=1e-6 * scale
    )
    assert model.posterior(X.float()).mean.dtype == torch.float32
    single = X[:, :1]
    best = float(post.mean.max())
    log_ei = LogExpectedImprovement(model, best_f=best)(single)
    assert log_ei.dtype == torch.float64 and bool(torch.isfinite(log_ei).all())
    assert all(p.dtype == torch.float32 for p in head.parameters())  # the head is left alone
    assert LogExpectedImprovement(model, best_f=best)(single.float()).dtype == torch.float32
