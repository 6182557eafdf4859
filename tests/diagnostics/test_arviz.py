"""Posteriors to ArviZ: shapes, dims and names round-trip for every source; summaries."""

from __future__ import annotations

import gpytorch
import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import MCMC, NUTS, TraceMeanField_ELBO
from pyro.infer.autoguide import AutoNormal
from pyro.nn import PyroModule

from probrank._arviz import ARVIZ_1, get_group, has_group, interval_column_names
from probrank.diagnostics import (
    from_pyro,
    layer_draws,
    output_layer_dims,
    summarize,
    summary,
    to_inference_data,
)
from probrank.exceptions import InputDataError
from probrank.inference import fit_svi
from probrank.inference.mcmc import NutsSamples
from probrank.models.qlfusion import QLFusionNet
from probrank.nn.bayesian_linear import BayesianLinear
from tests.diagnostics.arviz_columns import summary_columns

ARVIZ_COLUMNS = summary_columns()


def test_mcmc_draws_with_named_dims_and_rhat() -> None:
    dims, coords = output_layer_dims("output", 4, 1)
    draws = {"output.weight": torch.randn(2, 100, 1, 4), "output.bias": torch.randn(2, 100, 1)}
    data = to_inference_data(draws, dims=dims, coords=coords)
    posterior = data.posterior
    assert dict(posterior.sizes) == {"chain": 2, "draw": 100, "output": 1, "hidden": 4}
    assert posterior["output.weight"].dims == ("chain", "draw", "output", "hidden")
    np.testing.assert_array_equal(posterior["output.weight"].values, draws["output.weight"])
    table = summary(data, round_to="none")
    assert list(table.columns) == ARVIZ_COLUMNS
    assert len(table) == 5
    assert list(table.index)[:2] == ["output.weight[0, 0]", "output.weight[0, 1]"]
    assert ((table["r_hat"] > 0.9) & (table["r_hat"] < 1.1)).all()
    flat = draws["output.bias"].reshape(-1).double()
    np.testing.assert_allclose(table.loc["output.bias[0]", "mean"], float(flat.mean()), rtol=1e-6)
    np.testing.assert_allclose(table.loc["output.bias[0]", "sd"], float(flat.std()), rtol=1e-6)


def test_guide_draws_have_one_chain_and_no_rhat() -> None:
    data = to_inference_data({"w": torch.randn(50, 3)}, chains=False)
    assert dict(data.posterior.sizes)["chain"] == 1
    table = summary(data, hdi_prob=0.8)
    low, high = interval_column_names(0.8, "hdi")
    assert list(table.columns) == summary_columns(0.8, "hdi")
    assert (table[low] < table[high]).all()
    assert table["r_hat"].isna().all()  # R-hat compares chains: undefined for one


def test_hdi_of_exponential_draws_is_zero_to_its_quantile() -> None:
    # the 90% HDI of Exp(1) is [0, -log(0.1)] = [0, 2.303] (the density decreases)
    draws = torch.distributions.Exponential(torch.tensor(1.0, dtype=torch.float64)).sample(
        (1, 20000)
    )
    table = summary(to_inference_data({"z": draws}), hdi_prob=0.9)
    low, high = interval_column_names(0.9, "hdi")
    np.testing.assert_allclose(table.loc["z", low], 0.0, atol=0.01)
    np.testing.assert_allclose(table.loc["z", high], 2.303, atol=0.08)
    # the equal-tailed interval is the 5% and 95% quantiles: [0.051, 2.996]
    eti_table = (
        summary(to_inference_data({"z": draws}), ci_prob=0.9, ci_kind="eti") if ARVIZ_1 else None
    )
    if eti_table is not None:
        low, high = interval_column_names(0.9, "eti")
        np.testing.assert_allclose(eti_table.loc["z", low], 0.0513, atol=0.01)
        np.testing.assert_allclose(eti_table.loc["z", high], 2.996, atol=0.1)


def test_bad_draws() -> None:
    with pytest.raises(InputDataError):
        to_inference_data({})
    with pytest.raises(InputDataError):
        to_inference_data({"a": torch.randn(2, 10), "b": torch.randn(3, 10)})
    with pytest.raises(InputDataError):
        to_inference_data("not a posterior")


def test_nuts_samples_carry_divergences_into_sample_stats() -> None:
    diverging = torch.zeros(3, 40, dtype=torch.bool)
    diverging[1, [2, 7]] = True
    samples = NutsSamples({"mu": torch.randn(3, 40)}, diverging, torch.full((3,), 0.9))
    data = to_inference_data(samples)
    assert has_group(data, "sample_stats")
    stats = get_group(data, "sample_stats")
    assert stats["diverging"].dims == ("chain", "draw")
    np.testing.assert_array_equal(stats["diverging"].values, diverging.numpy())
    assert summarize(samples).attrs["divergences"] == 2


def test_pyro_mcmc_object() -> None:
    def model() -> None:
        pyro.sample("mu", dist.Normal(torch.zeros(2), 1.0).to_event(1))

    mcmc = MCMC(NUTS(model), num_samples=30, warmup_steps=20, disable_progbar=True)
    mcmc.run()
    data = to_inference_data(mcmc, dims={"mu": ["feature"]}, coords={"feature": ["a", "b"]})
    posterior = get_group(data, "posterior")
    assert posterior["mu"].dims == ("chain", "draw", "feature")
    assert list(posterior["mu"].coords["feature"].values) == ["a", "b"]
    np.testing.assert_allclose(
        posterior["mu"].values, mcmc.get_samples(group_by_chain=True)["mu"].numpy()
    )
    assert get_group(data, "sample_stats")["diverging"].shape == (1, 30)
    assert list(summary(data).index) == ["mu[a]", "mu[b]"]


def test_bayesian_layer_draws_follow_its_guide() -> None:
    layer = BayesianLinear(3, 2, seed=1)
    layer.weight_scale = torch.full((2, 3), 0.1)  # as if fitted: sets the guide parameter
    assert layer.guide_fitted
    data = to_inference_data(layer, num_samples=4000, seed=3)
    posterior = get_group(data, "posterior")
    assert posterior["weight"].dims == ("chain", "draw", "output", "feature")
    assert dict(posterior.sizes) == {"chain": 1, "draw": 4000, "output": 2, "feature": 3}
    weights = torch.as_tensor(posterior["weight"].values[0])
    # Monte Carlo: 4000 draws, standard error of the mean 0.1 / 63 = 0.0016
    torch.testing.assert_close(weights.mean(0), layer.weight_loc.detach(), rtol=0, atol=0.008)
    torch.testing.assert_close(weights.std(0), layer.weight_scale.detach(), rtol=0.06, atol=0)
    again, _ = layer_draws(layer, 4000, seed=3)
    np.testing.assert_array_equal(again["weight"].numpy(), posterior["weight"].values[0])


def test_summarize_qlfusion_output_layer_after_svi() -> None:
    from probrank.models.qlfusion import train_quantifier

    generator = torch.Generator().manual_seed(0)
    x = torch.rand(2, 12, 8, generator=generator).sort(-1, descending=True).values
    counts = torch.randint(0, 9, (2, 12), generator=generator).float()
    part = {"x": x, "counts": counts, "mask": torch.ones(2, 12, dtype=torch.bool)}
    trained = train_quantifier(
        part, part, batch_sizes=(4,), max_epochs=3, patience=2, hidden=5, progress=False
    )
    table = summarize(trained.net, num_samples=3000, seed=0)
    assert len(table) == 2 * (5 + 1)  # members x (hidden weights + bias)
    assert "output.weight[1, 0, 4]" in table.index and "output.bias[1, 0]" in table.index
    loc = trained.net.output.weight_loc.detach()  # type: ignore[union-attr]
    np.testing.assert_allclose(
        table.loc["output.weight[1, 0, 4]", "mean"], float(loc[1, 0, 4]), atol=0.004
    )
    data = to_inference_data(trained.net, num_samples=10)
    assert get_group(data, "posterior")["output.weight"].dims == (
        "chain",
        "draw",
        "member",
        "output",
        "feature",
    )


def test_several_layers_get_prefixed_dims() -> None:
    net = QLFusionNet(6, 3, num_models=1)
    net.extra = BayesianLinear(4, 2)
    with pytest.raises(InputDataError, match="initial"):
        layer_draws(net, 5)  # neither layer's guide was fitted
    for layer in (net.output, net.extra):
        layer.weight_loc = layer.weight_loc + 0.1  # as if fitted
    draws, dims = layer_draws(net, 5)
    assert dims["output.weight"] == ["output.member", "output.output", "output.feature"]
    assert dims["extra.bias"] == ["extra.output"]
    assert draws["extra.weight"].shape == (5, 2, 4)


@pytest.mark.parametrize("kind", ["torch", "gpytorch", "tuple"])
def test_laplace_gaussian_draws(kind: str) -> None:
    mean = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    root = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.8, 0.0], [0.0, -0.3, 0.4]], dtype=torch.float64)
    cov = root @ root.T
    source: object = {
        "torch": torch.distributions.MultivariateNormal(mean, cov),
        "gpytorch": gpytorch.distributions.MultivariateNormal(mean, cov),
        "tuple": (mean, cov),
    }[kind]
    data = to_inference_data(source, num_samples=20000, var_name="utility", seed=1)
    posterior = get_group(data, "posterior")
    assert posterior["utility"].dims == ("chain", "draw", "candidate")
    draws = torch.as_tensor(posterior["utility"].values[0])
    torch.testing.assert_close(draws.mean(0), mean, rtol=0, atol=0.03)
    torch.testing.assert_close(torch.cov(draws.T), cov, rtol=0, atol=0.04)


def _binomial_model(x: torch.Tensor, y: torch.Tensor | None = None) -> None:
    w = pyro.sample("w", dist.Normal(torch.zeros(2, dtype=x.dtype), 1.0).to_event(1))
    p = pyro.deterministic("p", torch.sigmoid(x @ w))
    with pyro.plate("query", x.shape[0]):
        pyro.sample("y", dist.Binomial(10, probs=p), obs=y)


def test_from_pyro_log_likelihood_and_predictive_from_chains() -> None:
    x = torch.randn(6, 2, dtype=torch.float64)
    y = torch.tensor([1.0, 4.0, 9.0, 0.0, 10.0, 5.0], dtype=torch.float64)
    w = torch.randn(2, 25, 2, dtype=torch.float64)
    diverging = torch.zeros(2, 25, dtype=torch.bool)
    samples = NutsSamples({"w": w}, diverging, torch.ones(2))
    data = from_pyro(
        _binomial_model, x, y, posterior_samples=samples, dims={"y": ["query"], "p": ["query"]}
    )
    for group in ("posterior", "posterior_predictive", "log_likelihood", "observed_data"):
        assert has_group(data, group)
    loglik = get_group(data, "log_likelihood")["y"]
    assert loglik.dims == ("chain", "draw", "query")
    expected = dist.Binomial(10, logits=torch.einsum("nd,csd->csn", x, w)).log_prob(y)
    np.testing.assert_allclose(loglik.values, expected.numpy(), rtol=1e-10)
    np.testing.assert_allclose(
        get_group(data, "posterior")["p"].values,
        torch.sigmoid(torch.einsum("nd,csd->csn", x, w)).numpy(),
        rtol=1e-10,
    )
    np.testing.assert_array_equal(get_group(data, "observed_data")["y"].values, y.numpy())
    replicated = get_group(data, "posterior_predictive")["y"].values
    assert replicated.shape == (2, 25, 6)
    assert ((replicated >= 0) & (replicated <= 10)).all()
    assert get_group(data, "sample_stats")["diverging"].shape == (2, 25)


def test_from_pyro_with_a_guide_is_seeded_and_leaves_the_store_alone() -> None:
    x = torch.randn(5, 2)
    y = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])

    def guide(x: torch.Tensor, y: torch.Tensor | None = None) -> None:
        pyro.sample("w", dist.Normal(torch.tensor([1.0, -1.0]), 0.1).to_event(1))

    before = set(pyro.get_param_store().keys())
    first = from_pyro(_binomial_model, x, y, guide=guide, num_samples=300, seed=4)
    second = from_pyro(_binomial_model, x, y, guide=guide, num_samples=300, seed=4)
    assert set(pyro.get_param_store().keys()) == before
    w = get_group(first, "posterior")["w"].values
    assert w.shape == (1, 300, 2)
    np.testing.assert_array_equal(w, get_group(second, "posterior")["w"].values)
    np.testing.assert_allclose(w[0].mean(0), [1.0, -1.0], atol=0.03)
    with pytest.raises(InputDataError):
        from_pyro(_binomial_model, x, y)


SIGMA = 0.5
F64 = torch.float64


class _Regression(PyroModule):
    """``y ~ N(w x + b, SIGMA^2)`` with standard normal priors on ``w`` and ``b``."""

    def __init__(self) -> None:
        super().__init__()
        prior = dist.Normal(torch.tensor(0.0, dtype=F64), torch.tensor(1.0, dtype=F64))
        self.layer = BayesianLinear(1, 1, prior, prior, seed=0).double()

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> None:
        mean = self.layer(x.unsqueeze(-1)).squeeze(-1)
        with pyro.plate("data", x.shape[0]):
            pyro.sample("y", dist.Normal(mean, SIGMA), obs=y)


def test_summarize_a_layer_fitted_with_an_autonormal_guide() -> None:
    # Regression: summarize(layer) used to summarise the layer's own, never-trained guide
    # (the initial weight, near 0) instead of the AutoNormal posterior (near 2).
    x = torch.linspace(-1.0, 1.0, 20, dtype=F64)
    y = 2.0 * x - 0.5 + SIGMA * torch.randn(20, dtype=F64)
    model = _Regression()
    guide = AutoNormal(model, init_scale=0.05)
    optimizer = pyro.optim.ClippedAdam({"lr": 0.05, "lrd": 0.992})  # decays to 4e-4
    fit_svi(model, guide, [x, y], optimizer=optimizer, loss=TraceMeanField_ELBO(),
            max_epochs=600, patience=None, seed=0, progress=False)  # fmt: skip
    assert not model.layer.guide_fitted
    with pytest.raises(InputDataError, match="guide=guide"):
        summarize(model.layer)
    with pytest.raises(InputDataError, match="no posterior"):
        to_inference_data(model)
    table = summarize(model.layer, guide=guide, num_samples=4000, seed=1)
    assert list(table.index) == ["layer.weight[0, 0]", "layer.bias[0]"]
    # the summary describes the fitted guide: its means and sds up to Monte Carlo error
    # (4000 draws: standard error of a mean sd / 63, of an sd 1.1%)
    sites = ["layer.weight", "layer.bias"]
    median = guide.median()
    bands = guide.quantiles([0.15865525393145707, 0.8413447460685429])  # mean -/+ one sd
    centre = torch.stack([median[k].detach().reshape(()) for k in sites])
    spread = torch.stack([(bands[k][1] - bands[k][0]).detach().reshape(()) / 2 for k in sites])
    np.testing.assert_allclose(table["mean"].to_numpy(), centre.numpy(), rtol=0,
                               atol=float(4 * spread.max() / 63))  # fmt: skip
    np.testing.assert_allclose(table["sd"].to_numpy(), spread.numpy(), rtol=0.045)
    # ... and that is the posterior of this conjugate model: a mean-field Gaussian fit has the
    # exact means (precision I + A^T A / s^2, A = [x, 1]); SVI leaves them within 0.1 sd
    design = torch.stack([x, torch.ones_like(x)], -1)
    precision = torch.eye(2, dtype=F64) + design.T @ design / SIGMA**2
    mean = torch.linalg.solve(precision, design.T @ y / SIGMA**2)
    sd = precision.diagonal().rsqrt()
    assert float(mean[0]) > 1.5  # the fitted slope, far from the layer's initial weight
    np.testing.assert_allclose(table["mean"].to_numpy(), mean.numpy(), rtol=0,
                               atol=0.1 * float(sd.min()))  # fmt: skip
    again = summarize(model.layer, guide=guide, num_samples=4000, seed=1)
    np.testing.assert_array_equal(again["mean"].to_numpy(), table["mean"].to_numpy())


def test_a_guide_without_the_layer_sites_is_refused() -> None:
    layer = BayesianLinear(2, 1)

    def other_guide() -> None:
        pyro.sample("z", dist.Normal(0.0, 1.0))

    with pytest.raises(InputDataError, match="no site"):
        summarize(layer, guide=other_guide, num_samples=5)


def test_arviz_data_goes_through_every_path_unchanged() -> None:
    # Regression: InferenceData is a Mapping, so it was dispatched as draws and raised TypeError.
    data = to_inference_data({"w": torch.randn(2, 50, 3, dtype=F64)})
    assert to_inference_data(data) is data
    assert to_inference_data(data, num_samples=10, seed=3) is data
    expected = summary(data)
    for table in (summarize(data), summarize(data, num_samples=10), summarize(data, chains=True)):
        np.testing.assert_array_equal(table.to_numpy(), expected.to_numpy())
    with pytest.raises(InputDataError, match="unchanged"):
        to_inference_data(data, dims={"w": ["feature"]})
