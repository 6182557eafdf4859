from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from linear_operator.operators import RootLinearOperator

from probrank.exceptions import InputDataError
from probrank.nn.rff_gp import (
    LaplaceLinear,
    RandomFourierFeatures,
    RFFGaussianProcess,
    mean_field_probability,
)


def _rbf(x: torch.Tensor, lengthscale: float) -> torch.Tensor:
    return torch.exp(-torch.cdist(x, x).pow(2) / (2 * lengthscale**2))


def test_rff_kernel_approaches_rbf_as_features_grow() -> None:
    x = torch.randn(12, 3, dtype=torch.float64)
    exact = _rbf(x, 1.5)
    errors = []
    for num in (16, 256, 16384):
        phi = RandomFourierFeatures(3, num, lengthscale=1.5, seed=3)(x)
        errors.append(float((phi @ phi.T - exact).abs().max()))
    assert errors[0] > errors[1] > errors[2]
    # one entry's standard deviation is at most 1 / sqrt(L) ~ 0.008 at L = 16384
    assert errors[2] < 0.05


def _fit_map(layer: LaplaceLinear, phi: torch.Tensor, y: torch.Tensor, noise: float) -> None:
    optimizer = torch.optim.LBFGS(
        [layer.beta],
        max_iter=500,
        tolerance_grad=1e-12,
        tolerance_change=1e-14,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = 0.5 * (y - layer(phi)).pow(2).sum() / noise + layer.prior_penalty()
        loss.backward()
        return loss

    optimizer.step(closure)


@pytest.mark.parametrize("use_rff", [False, True])
def test_laplace_equals_exact_bayesian_linear_regression(use_rff: bool) -> None:
    n, d, noise, prior = 80, 5, 0.3, 2.0
    x = torch.randn(n, d, dtype=torch.float64)
    y = x @ torch.randn(d, dtype=torch.float64) + noise**0.5 * torch.randn(n, dtype=torch.float64)
    if use_rff:
        gp = RFFGaussianProcess(
            d,
            64,
            lengthscale=2.0,
            prior_precision=prior,
            likelihood="gaussian",
            noise=noise,
            seed=1,
        ).double()
        gp.output.bias = None
        layer, phi = gp.output, gp.phi(x)
    else:
        layer = LaplaceLinear(d, prior, "gaussian", noise, bias=False).double()
        phi = x
    _fit_map(layer, phi, y, noise)
    layer.accumulate_precision(phi)
    width = phi.shape[1]
    exact_cov = torch.linalg.inv(
        prior * torch.eye(width, dtype=torch.float64) + phi.T @ phi / noise
    )
    exact_mean = exact_cov @ phi.T @ y / noise
    torch.testing.assert_close(layer.beta.detach(), exact_mean, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(layer.covariance, exact_cov, rtol=1e-8, atol=1e-10)
    test_phi = phi[:7]
    mean, var = layer.predictive(test_phi)
    torch.testing.assert_close(
        var, torch.einsum("ql,lk,qk->q", test_phi, exact_cov, test_phi), rtol=1e-8, atol=1e-10
    )
    torch.testing.assert_close(mean, test_phi @ exact_mean, rtol=1e-6, atol=1e-6)


def test_bernoulli_precision_is_the_logistic_hessian() -> None:
    layer = LaplaceLinear(4, 1.0).double()
    with torch.no_grad():
        layer.beta.copy_(torch.tensor([0.5, -1.0, 2.0, 0.0]))
    phi = torch.randn(30, 4, dtype=torch.float64)

    def neg_log_post(beta: torch.Tensor) -> torch.Tensor:
        logits = phi @ beta + layer.bias
        y = (torch.arange(30) % 2).double()
        nll = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="sum")
        return nll + 0.5 * beta.pow(2).sum()

    hessian = torch.autograd.functional.hessian(neg_log_post, layer.beta.detach().clone())
    layer.accumulate_precision(phi)
    torch.testing.assert_close(layer.precision, hessian, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("momentum", [0.99, 0.999])
def test_momentum_precision_approaches_exact_on_stationary_features(momentum: float) -> None:
    # the default momentum 0.999 included: the bias correction makes the running estimate a
    # weighted mean of unbiased batch estimates from the first step on
    n, width, batch = 512, 6, 64
    layer = LaplaceLinear(width).double()
    with torch.no_grad():
        layer.beta.copy_(torch.randn(width, dtype=torch.float64))
    phi = torch.randn(n, width, dtype=torch.float64)
    layer.accumulate_precision(phi)
    exact = layer.precision.clone()
    layer.reset_precision()
    generator = torch.Generator().manual_seed(0)
    errors = []
    for step in range(400):
        rows = torch.randint(0, n, (batch,), generator=generator)
        layer.momentum_update(phi[rows], momentum=momentum, num_data=n)
        if step in (0, 399):
            errors.append(
                float(torch.linalg.norm(layer.precision - exact) / torch.linalg.norm(exact))
            )
    # without the bias correction the data part would hold only 1 - m^400 of the exact one
    # (33% at m = 0.999); with it, one batch of 64 of 512 rows is already unbiased (error ~0.3)
    assert errors[0] < 0.5
    assert errors[1] < 0.05 < errors[0]


def test_paper_momentum_form_is_eq5_from_the_prior() -> None:
    width, prior, momentum = 4, 2.0, 0.9
    layer = LaplaceLinear(width, prior_precision=prior).double()
    with torch.no_grad():
        layer.beta.copy_(torch.randn(width, dtype=torch.float64))
    batches = [torch.randn(8, width, dtype=torch.float64) for _ in range(3)]
    expected = prior * torch.eye(width, dtype=torch.float64)
    for phi in batches:
        p = torch.sigmoid(layer(phi)).detach()
        batch_sum = (phi * (p * (1 - p)).unsqueeze(-1)).T @ phi
        expected = momentum * expected + (1 - momentum) * batch_sum
        layer.momentum_update(phi, momentum, num_data=1000, form="paper")
    torch.testing.assert_close(layer.precision, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(InputDataError, match="form"):
        layer.momentum_update(batches[0], momentum, form="corrected")
    with pytest.raises(InputDataError, match="momentum"):
        layer.accumulate_precision(batches[0])


def test_gemm_variance_equals_the_triangular_solve_variance() -> None:
    generator = torch.Generator().manual_seed(1)
    layer = LaplaceLinear(300).double()
    train = torch.randn(2000, 300, generator=generator, dtype=torch.float64) / 300**0.5
    layer.accumulate_precision(train)
    phi = torch.randn(5, 40, 300, generator=generator, dtype=torch.float64) / 300**0.5
    chol = torch.linalg.cholesky(layer.precision)
    flat = phi.reshape(-1, 300)
    solve_root = torch.linalg.solve_triangular(chol, flat.T, upper=False).T
    reference = solve_root.pow(2).sum(-1).reshape(5, 40)
    mean, variance = layer.predictive(phi)
    torch.testing.assert_close(variance, reference, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(
        layer.covariance_root(phi), solve_root.reshape(phi.shape), rtol=1e-10, atol=1e-10
    )
    torch.testing.assert_close(mean, phi @ layer.beta.detach(), rtol=1e-12, atol=1e-12)


def test_cached_covariance_follows_precision_changes_and_state_dicts() -> None:
    layer = LaplaceLinear(5).double()
    phi = torch.randn(30, 5, dtype=torch.float64)
    first = layer.covariance.clone()  # prior only
    torch.testing.assert_close(first, torch.eye(5, dtype=torch.float64), rtol=0, atol=1e-14)
    layer.accumulate_precision(phi)
    torch.testing.assert_close(
        layer.covariance, torch.linalg.inv(layer.precision), rtol=1e-10, atol=1e-12
    )
    state = {k: v.clone() for k, v in layer.state_dict().items()}
    state["precision_cholesky"] = torch.zeros(0)  # as saved before the cache existed
    fresh = LaplaceLinear(5).double()
    _ = fresh.covariance  # a stale cache that loading must drop
    fresh.load_state_dict(state)
    torch.testing.assert_close(fresh.covariance, layer.covariance, rtol=0, atol=0)


def test_candidate_posterior_covariance_is_phi_sigma_phi() -> None:
    gp = RFFGaussianProcess(3, 50, seed=2).double()
    with torch.no_grad():
        gp.output.beta.copy_(torch.randn(50, dtype=torch.float64))
    train = torch.randn(40, 3, dtype=torch.float64)
    gp.output.accumulate_precision(gp.phi(train))
    x = torch.randn(2, 6, 3, dtype=torch.float64)  # batch 2, q = 6 candidates
    post = gp.posterior(x)
    assert isinstance(post.lazy_covariance_matrix, RootLinearOperator)
    assert post.lazy_covariance_matrix.root.shape == (2, 6, 50)
    phi = gp.phi(x)
    expected = phi @ gp.output.covariance @ phi.transpose(-1, -2)
    torch.testing.assert_close(post.covariance_matrix, expected, rtol=1e-8, atol=1e-10)
    torch.testing.assert_close(post.mean, gp(x), rtol=1e-12, atol=1e-12)


def test_mean_field_probability_matches_monte_carlo() -> None:
    # MacKay's approximation is off by at most 0.0131 on |m| <= 6, v <= 25 (Gauss-Hermite);
    # 200k Monte Carlo draws add a standard error <= 0.0012, so 0.02 fails with p < 1e-6.
    generator = torch.Generator().manual_seed(0)
    means = torch.tensor([-4.0, -1.0, 0.0, 0.5, 2.0, 5.0], dtype=torch.float64)
    variances = torch.tensor([0.0, 0.5, 1.0, 4.0, 9.0, 25.0], dtype=torch.float64)
    m, v = torch.meshgrid(means, variances, indexing="ij")
    draws = torch.randn(200_000, *m.shape, generator=generator, dtype=torch.float64)
    monte_carlo = torch.sigmoid(m + v.sqrt() * draws).mean(0)
    approx = mean_field_probability(m, v)
    torch.testing.assert_close(approx, monte_carlo, rtol=0, atol=0.02)
    torch.testing.assert_close(approx[:, 0], torch.sigmoid(means), rtol=1e-12, atol=1e-12)
    # with the exact probit factor pi / 8 the error is far below the logit-scale gap
    assert float((approx - monte_carlo).abs().max()) > 0  # not identical: an approximation
    assert math.isclose(float(mean_field_probability(torch.tensor(0.0), torch.tensor(7.0))), 0.5)


def test_rff_layer_is_distance_aware() -> None:
    gp = RFFGaussianProcess(2, 512, lengthscale=1.0, seed=0).double()
    train = torch.randn(300, 2, dtype=torch.float64)
    gp.output.accumulate_precision(gp.phi(train))
    _, near = gp.predictive(torch.zeros(1, 2, dtype=torch.float64))
    _, far = gp.predictive(torch.full((1, 2), 20.0, dtype=torch.float64))
    assert float(near) < 0.1 < 0.8 < float(far)
    assert np.isfinite(float(far))
