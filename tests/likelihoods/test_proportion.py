"""Likelihoods of relevant counts: the binomial-KL identity and the ablation losses."""

from __future__ import annotations

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.likelihoods.proportion import (
    beta_binomial_proportion,
    binomial_kl,
    binomial_proportion,
    gaussian_proportion,
    mse_loss,
)


@pytest.mark.parametrize("k", [0, 7, 50, 100])
def test_binomial_nll_gradient_equals_kl_gradient(k: int) -> None:
    n = 100
    p = torch.tensor(k / n, dtype=torch.float64)
    p_hat = torch.tensor([0.01, 0.2, 0.5, 0.93], dtype=torch.float64, requires_grad=True)
    logits = torch.logit(p_hat)
    nll = -binomial_proportion(n)(logits).log_prob(torch.full_like(p_hat, float(k))).sum()
    (g_nll,) = torch.autograd.grad(nll, p_hat)
    kl = binomial_kl(p, p_hat, n).sum()
    (g_kl,) = torch.autograd.grad(kl, p_hat)
    # closed form: d/dp_hat KL = n (p_hat - p) / (p_hat (1 - p_hat))
    expected = n * (p_hat.detach() - p) / (p_hat.detach() * (1 - p_hat.detach()))
    torch.testing.assert_close(g_nll, g_kl, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(g_kl, expected, rtol=1e-10, atol=1e-10)


def test_kl_minus_nll_is_constant_in_p_hat() -> None:
    n, k = 100, 13
    p_hat = torch.linspace(0.02, 0.98, 25, dtype=torch.float64)
    nll = -binomial_proportion(n)(torch.logit(p_hat)).log_prob(torch.full_like(p_hat, k))
    diff = binomial_kl(torch.tensor(k / n, dtype=torch.float64), p_hat, n) - nll
    torch.testing.assert_close(diff, diff[0].expand_as(diff), rtol=0, atol=1e-9)


def test_kl_is_zero_at_truth_and_handles_endpoints() -> None:
    p = torch.tensor([0.0, 0.3, 1.0], dtype=torch.float64)
    p_hat = torch.tensor([0.5, 0.3, 0.5], dtype=torch.float64)
    kl = binomial_kl(p, p_hat, 10)
    assert torch.isfinite(kl).all()
    torch.testing.assert_close(kl[1], torch.tensor(0.0, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(kl[0], 10 * torch.log(torch.tensor(2.0, dtype=torch.float64)))


def test_likelihood_batch_shapes() -> None:
    logits = torch.zeros(3, 4, 5)
    for make in (
        binomial_proportion(100),
        beta_binomial_proportion(100, 10.0),
        gaussian_proportion(100),
    ):
        d = make(logits)
        assert d.batch_shape == (3, 4, 5)
        assert d.event_shape == ()


def test_beta_binomial_mean_and_binomial_limit() -> None:
    logits = torch.tensor([-1.0, 0.3], dtype=torch.float64)
    n = 50
    d = beta_binomial_proportion(n, 5.0)(logits)
    torch.testing.assert_close(d.mean, n * torch.sigmoid(logits))
    k = torch.tensor([7.0, 30.0], dtype=torch.float64)
    wide = beta_binomial_proportion(n, 1e7)(logits).log_prob(k)
    torch.testing.assert_close(
        wide, binomial_proportion(n)(logits).log_prob(k), rtol=1e-4, atol=1e-4
    )
    # over-dispersion: variance larger by (n + c) / (1 + c)
    b = binomial_proportion(n)(logits)
    torch.testing.assert_close(d.variance / b.variance, torch.full_like(logits, (n + 5.0) / 6.0))


def test_gaussian_is_scaled_mse() -> None:
    n, scale = 100, 0.05
    p_hat = torch.tensor([0.1, 0.4, 0.8], dtype=torch.float64)
    k = torch.tensor([20.0, 20.0, 20.0], dtype=torch.float64)
    nll = -gaussian_proportion(n, scale)(torch.logit(p_hat)).log_prob(k)
    quad = (k / n - p_hat) ** 2 / (2 * scale**2)
    const = nll - quad
    torch.testing.assert_close(const, const[0].expand_as(const), rtol=0, atol=1e-9)
    torch.testing.assert_close(mse_loss(p_hat, k / n), ((k / n - p_hat) ** 2).mean())


def test_bad_arguments() -> None:
    with pytest.raises(InputDataError):
        binomial_proportion(0)
    with pytest.raises(InputDataError):
        beta_binomial_proportion(10, 0.0)
