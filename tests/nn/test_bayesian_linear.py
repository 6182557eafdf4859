"""BayesianLinear: priors, estimators and their unbiasedness under the layer's own guide."""

from __future__ import annotations

import math

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro import poutine
from pyro.infer import SVI, Trace_ELBO
from pyro.infer.autoguide import AutoNormal
from pyro.nn import PyroModule

from probrank.exceptions import InputDataError
from probrank.nn.bayesian_linear import BayesianLinear


def _grads(layer: BayesianLinear, x: torch.Tensor, draws: int) -> torch.Tensor:
    """`draws x P` gradients of a nonlinear loss in the guide's loc and scale."""
    poutine.replay(layer, trace=poutine.trace(layer.guide).get_trace())(x)  # register params
    params = [layer.weight_loc_unconstrained, layer.weight_scale_unconstrained]
    rows = []
    for _ in range(draws):
        guide_trace = poutine.trace(layer.guide).get_trace()
        out = poutine.replay(layer, trace=guide_trace)(x)
        loss = torch.sigmoid(out).square().sum() + out.sin().sum()
        grads = torch.autograd.grad(loss, params)
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    return torch.stack(rows)


@pytest.mark.parametrize("estimator", ["flipout", "local_reparam"])
def test_estimator_gradients_unbiased_against_reparam(estimator: str) -> None:
    # Two-sample z-test per gradient coordinate (P = 12), Bonferroni at a total failure rate
    # of 1e-3 (two-sided per-coordinate alpha 1e-3 / 12 -> |z| < 3.94) if the estimators were
    # unbiased and the runs independent; the test is seeded, so it is deterministic.
    x = torch.randn(5, 3, dtype=torch.float64)
    draws = 600
    grads = {}
    for name in (estimator, "reparam"):
        with pyro.get_param_store().scope():
            layer = BayesianLinear(3, 2, estimator=name, init_scale=0.5, seed=1).double()
            grads[name] = _grads(layer, x, draws)
    a, b = grads[estimator], grads["reparam"]
    z = (a.mean(0) - b.mean(0)) / torch.sqrt(a.var(0) / draws + b.var(0) / draws)
    assert z.abs().max() < 3.94
    if estimator == "flipout":
        # the point of flipout: lower variance of the scale gradients over a batch
        assert a.var(0)[6:].sum() < b.var(0)[6:].sum()


def test_estimator_only_with_own_guide_and_in_training() -> None:
    layer = BayesianLinear(4, 3, estimator="flipout", seed=0)
    x = torch.randn(6, 4)
    trace = poutine.trace(layer).get_trace(x)  # prior draw: plain estimator
    weight, bias = trace.nodes["weight"]["value"], trace.nodes["bias"]["value"]
    torch.testing.assert_close(trace.nodes["_RETURN"]["value"], x @ weight.T + bias)
    layer.eval()
    guide_trace = poutine.trace(layer.guide).get_trace()
    out = poutine.replay(layer, trace=guide_trace)(x)
    w = guide_trace.nodes["weight"]["value"]
    torch.testing.assert_close(out, x @ w.T + guide_trace.nodes["bias"]["value"])


def test_scalar_and_callable_priors_and_shapes() -> None:
    layer = BayesianLinear(
        3, 2, weight_prior=dist.Laplace(0.0, 0.5), bias_prior=lambda m: dist.Normal(0.0, 2.0),
        batch_shape=(4,),
    )  # fmt: skip
    x = torch.randn(4, 7, 3)
    trace = poutine.trace(layer).get_trace(x)
    site = trace.nodes["weight"]
    assert site["fn"].event_shape == (4, 2, 3) and site["fn"].batch_shape == ()
    assert trace.nodes["bias"]["fn"].event_shape == (4, 2)
    assert trace.nodes["_RETURN"]["value"].shape == (4, 7, 2)
    with pytest.raises(InputDataError):
        BayesianLinear(3, 2, weight_prior=dist.Normal(torch.zeros(5), 1.0).to_event(1))(x[0])
    with pytest.raises(InputDataError):
        BayesianLinear(3, 2, estimator="dropout")


class _Regression(PyroModule):
    def __init__(self, prior: dist.Distribution) -> None:
        super().__init__()
        self.layer = BayesianLinear(
            2, 1, weight_prior=prior, bias=False, estimator="reparam", init_scale=0.1
        )

    def model(self, x: torch.Tensor, y: torch.Tensor) -> None:
        mean = self.layer(x).squeeze(-1)
        with pyro.plate("data", x.shape[0]):
            pyro.sample("y", dist.Normal(mean, 1.0), obs=y)

    def guide(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.layer.guide()


def _posterior_mean(prior: dist.Distribution, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Posterior mean of the layer's weight by self-normalised importance sampling from the
    prior the layer itself puts on its ``weight`` site (200k draws)."""
    reg = _Regression(prior).double()
    trace = poutine.trace(reg.model).get_trace(x, y)
    weight_prior = trace.nodes["layer.weight"]["fn"]
    w = weight_prior.sample((200_000,)).reshape(200_000, -1)  # S x 2
    log_lik = dist.Normal(w @ x.T, 1.0).log_prob(y).sum(-1)
    weights = torch.softmax(log_lik, 0)
    return (weights.unsqueeze(-1) * w).sum(0)


def test_prior_swap_normal_exact_and_laplace_shrinks_small_effects_more() -> None:
    # Orthogonal design: x^T x = n I, so coefficients decouple; unit noise.
    n = 8
    x = torch.zeros(n, 2, dtype=torch.float64)
    x[: n // 2, 0] = math.sqrt(2.0)
    x[n // 2 :, 1] = math.sqrt(2.0)
    w_ls = torch.tensor([2.0, 0.25], dtype=torch.float64)  # a large and a small effect
    y = x @ w_ls  # noise-free, so least squares gives exactly w_ls
    s2 = 0.5  # prior variance
    exact = w_ls * n / (n + 1 / s2)  # conjugate Normal posterior mean
    zero = torch.tensor(0.0, dtype=torch.float64)
    normal = _posterior_mean(dist.Normal(zero, math.sqrt(s2)), x, y)
    # Monte Carlo error of 200k draws is ~1e-3 here; 0.01 is > 5 standard errors.
    torch.testing.assert_close(normal, exact, rtol=0, atol=0.01)
    laplace = _posterior_mean(dist.Laplace(zero, math.sqrt(s2 / 2)), x, y)  # same variance
    shrink_normal = normal / w_ls
    shrink_laplace = laplace / w_ls
    # Laplace: heavier tails and a sharper peak: the large effect is shrunk less, the small
    # one more, than under the Normal prior of the same variance.
    assert shrink_laplace[0] > shrink_normal[0] + 0.01
    assert shrink_laplace[1] < shrink_normal[1] - 0.01


def test_other_guides_fall_back_to_plain_estimator_and_train() -> None:
    reg = _Regression(dist.Normal(0.0, 1.0))
    reg.layer.estimator = reg.layer.estimator.__class__("flipout")
    x = torch.randn(20, 2)
    y = x @ torch.tensor([1.0, -1.0])
    guide = AutoNormal(reg.model)
    with pyro.get_param_store().scope():
        svi = SVI(reg.model, guide, pyro.optim.Adam({"lr": 0.1}), Trace_ELBO())
        for _ in range(300):
            svi.step(x, y)
        loc = guide.median(x, y)["layer.weight"].reshape(-1)
    # exact conjugate posterior mean under N(0, 1) priors and unit noise
    exact = torch.linalg.solve(x.T @ x + torch.eye(2), x.T @ y)
    torch.testing.assert_close(loc, exact, rtol=0, atol=0.25)
