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


def test_bias_prior_none_is_the_standard_normal_and_bias_false_removes_the_bias() -> None:
    # Regression (docs): the docstring said ``bias_prior=None`` meant "no bias"; it means the
    # standard normal prior, and ``bias=False`` is what removes the bias.
    doc = BayesianLinear.__doc__ or ""
    entry = doc[doc.index("bias_prior:") : doc.index("estimator:")]
    assert "Normal(0, 1)" in entry and "bias=False" in entry and "None for no bias" not in entry
    x = torch.randn(4, 3)  # the default priors are float32 distributions
    layer = BayesianLinear(3, 2, bias_prior=None, seed=0)
    trace = poutine.trace(layer).get_trace(x)
    bias_site = trace.nodes["bias"]
    value = torch.tensor([0.7, -1.9])
    expected = -0.5 * (0.7**2 + 1.9**2) - math.log(2 * math.pi)  # two standard normal densities
    torch.testing.assert_close(
        bias_site["fn"].log_prob(value), torch.tensor(expected), rtol=1e-6, atol=0
    )
    weight = trace.nodes["weight"]["value"]
    torch.testing.assert_close(trace.nodes["_RETURN"]["value"], x @ weight.T + bias_site["value"])
    no_bias = BayesianLinear(3, 2, bias_prior=dist.Normal(0.0, 5.0), bias=False)
    trace = poutine.trace(no_bias).get_trace(x)
    assert "bias" not in trace.nodes and not hasattr(no_bias, "bias_loc")
    torch.testing.assert_close(
        trace.nodes["_RETURN"]["value"], x @ trace.nodes["weight"]["value"].T
    )


def test_guide_fitted_tells_a_trained_own_guide_from_initial_values() -> None:
    reg = _Regression(dist.Normal(0.0, 1.0))
    assert not reg.layer.guide_fitted  # fresh: the initial values describe no posterior
    x = torch.randn(20, 2)
    y = x @ torch.tensor([1.0, -1.0])
    other = _Regression(dist.Normal(0.0, 1.0))
    with pyro.get_param_store().scope():
        svi = SVI(other.model, AutoNormal(other.model), pyro.optim.Adam({"lr": 0.1}), Trace_ELBO())
        for _ in range(5):
            svi.step(x, y)
    assert not other.layer.guide_fitted  # trained through another guide: own guide untouched
    with pyro.get_param_store().scope():
        svi = SVI(reg.model, reg.guide, pyro.optim.Adam({"lr": 0.1}), Trace_ELBO())
        for _ in range(5):
            svi.step(x, y)
    assert reg.layer.guide_fitted
    loaded = _Regression(dist.Normal(0.0, 1.0))
    loaded.load_state_dict(reg.state_dict())
    assert loaded.layer.guide_fitted  # a fitted state loaded into a fresh layer
    assert reg.layer.double().guide_fitted  # a dtype change is not a fit, nor undoes one
    assert not _Regression(dist.Normal(0.0, 1.0)).layer.double().guide_fitted


def _fitted_like(layer: BayesianLinear) -> BayesianLinear:
    """Non-trivial guide parameters (as after fitting): random means and scales, nonzero bias."""
    generator = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for name in ("weight_loc", "weight_scale", "bias_loc", "bias_scale"):
            param = getattr(layer, f"{name}_unconstrained")
            param.copy_(0.5 * torch.randn(param.shape, generator=generator, dtype=param.dtype))
    return layer


def test_sample_draws_from_the_own_guide_with_its_own_generator() -> None:
    layer = _fitted_like(BayesianLinear(4, 3, batch_shape=(2,), seed=0).double())
    state = torch.get_rng_state()
    weight, bias = layer.sample(5, seed=7)
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is not touched
    assert weight.shape == (5, 2, 3, 4) and bias is not None and bias.shape == (5, 2, 3)
    assert weight.dtype == bias.dtype == torch.float64
    # the draws are loc + scale * eps with the eps of a generator seeded by the seed, weights first
    generator = torch.Generator().manual_seed(7)
    eps = torch.randn((5, 2, 3, 4), generator=generator, dtype=torch.float64)
    bias_eps = torch.randn((5, 2, 3), generator=generator, dtype=torch.float64)
    torch.testing.assert_close(weight, layer.weight_loc + layer.weight_scale * eps, rtol=0, atol=0)
    torch.testing.assert_close(bias, layer.bias_loc + layer.bias_scale * bias_eps, rtol=0, atol=0)
    again, _ = layer.sample(5, seed=7)
    other, _ = layer.sample(5, seed=8)
    assert torch.equal(again, weight) and not torch.equal(other, weight)
    no_bias = BayesianLinear(4, 3, bias=False, seed=0)
    assert no_bias.sample(2)[1] is None
    with pytest.raises(InputDataError, match="positive integer"):
        layer.sample(0)


@pytest.mark.parametrize("batch_shape", [(), (2,)])
def test_predictive_is_the_layer_applied_with_each_draw(batch_shape: tuple[int, ...]) -> None:
    layer = _fitted_like(BayesianLinear(4, 3, batch_shape=batch_shape, seed=1).double())
    x = torch.randn(*batch_shape, 5, 6, 4, dtype=torch.float64)  # `*batch x ... x d`
    out = layer.predictive(x, 8, seed=3)
    assert out.shape == (8, *batch_shape, 5, 6, 3)
    weight, bias = layer.sample(8, seed=3)
    assert bias is not None
    for s in range(8):
        w, b = weight[s], bias[s]
        if batch_shape:
            expected = torch.einsum("mijd,mod->mijo", x, w) + b[:, None, None, :]
        else:
            expected = x @ w.T + b
        torch.testing.assert_close(out[s], expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(InputDataError, match="input features"):
        layer.predictive(torch.randn(5, 3, dtype=torch.float64), 2)
    if batch_shape:
        with pytest.raises(InputDataError, match="inputs must be"):
            layer.predictive(torch.randn(3, 5, 4, dtype=torch.float64), 2)


def test_predictive_moments_match_the_guide() -> None:
    # y = x W^T + b is Gaussian under the mean-field guide: mean x loc^T + b_loc, variance
    # x^2 scale^2^T + b_scale^2
    layer = _fitted_like(BayesianLinear(3, 2, seed=2).double())
    x = torch.randn(4, 3, dtype=torch.float64)
    draws = layer.predictive(x, 20000, seed=0)
    mean = x @ layer.weight_loc.T + layer.bias_loc
    variance = x.square() @ layer.weight_scale.square().T + layer.bias_scale.square()
    sd = variance.sqrt()
    # 5 standard errors of a 20000-draw mean and (Gaussian) variance
    assert bool(((draws.mean(0) - mean).abs() <= 5 * sd / math.sqrt(20000)).all())
    assert bool(((draws.var(0) - variance).abs() <= 5 * variance * math.sqrt(2 / 20000)).all())
