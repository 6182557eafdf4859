"""NUTS against a conjugate posterior, its divergences; posterior predictive intervals."""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.nn import PyroModule

from probrank.exceptions import InputDataError
from probrank.inference.mcmc import NutsSamples, fit_nuts
from probrank.inference.predictive import credible_interval, posterior_predictive
from probrank.likelihoods import ordinal
from probrank.nn.bayesian_linear import BayesianLinear


def _model(y: torch.Tensor | None = None, n: int = 5) -> None:
    mu = pyro.sample("mu", dist.Normal(0.0, 1.0))
    with pyro.plate("data", n):
        pyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def test_nuts_matches_conjugate_posterior() -> None:
    y = torch.tensor([1.0, 2.0, 0.5, 1.5, 1.0])
    samples = fit_nuts(_model, y, num_samples=200, warmup_steps=100, num_chains=2, seed=1)
    assert samples["mu"].shape == (2, 200)
    assert isinstance(samples, NutsSamples) and isinstance(samples, dict)
    assert samples.diverging.shape == (2, 200) and samples.diverging.dtype == torch.bool
    assert samples.num_divergences == 0  # a Gaussian posterior has no funnel to diverge in
    assert bool(((samples.acceptance_rate > 0) & (samples.acceptance_rate <= 1)).all())
    post_mean, post_sd = y.sum() / (len(y) + 1), (1 / (len(y) + 1)) ** 0.5
    # MC standard error of the mean with ~150 effective draws is ~0.035; tolerance 0.12.
    torch.testing.assert_close(samples["mu"].mean(), post_mean, rtol=0, atol=0.12)
    torch.testing.assert_close(samples["mu"].std(), torch.tensor(post_sd), rtol=0.2, atol=0)


def _funnel() -> None:
    y = pyro.sample("y", dist.Normal(0.0, 3.0))
    pyro.sample("x", dist.Normal(torch.zeros(2), torch.exp(y / 2)).to_event(1))


def test_nuts_records_divergences_in_a_funnel() -> None:
    # Neal's funnel: the curvature changes by orders of magnitude along y, so a step size
    # adapted in the mouth diverges in the neck (Betancourt 2017)
    samples = fit_nuts(_funnel, num_samples=40, warmup_steps=30, num_chains=2, seed=0,
                       max_tree_depth=5)  # fmt: skip
    assert samples["x"].shape == (2, 40, 2)
    assert samples.diverging.shape == (2, 40)
    assert samples.num_divergences > 0
    assert samples.sample_stats["diverging"] is samples.diverging


def test_credible_interval_and_predictive() -> None:
    draws = torch.randn(4000, 3)
    summary = credible_interval(draws, 0.9)
    torch.testing.assert_close(summary.lower, torch.full((3,), -1.645), rtol=0, atol=0.1)
    torch.testing.assert_close(summary.upper, torch.full((3,), 1.645), rtol=0, atol=0.1)
    before = {k: v.detach().clone() for k, v in pyro.get_param_store().items()}
    posterior = {"mu": torch.full((200,), 2.0)}
    out = posterior_predictive(_model, None, sites=["y"], posterior_samples=posterior, n=4)
    assert out["y"].draws.shape == (200, 4)
    torch.testing.assert_close(out["y"].mean, torch.full((4,), 2.0), rtol=0, atol=0.3)
    assert (out["y"].lower < out["y"].mean).all() and (out["y"].mean < out["y"].upper).all()
    after = {k: v.detach() for k, v in pyro.get_param_store().items()}
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], before[k]) for k in after)


class _Layered(PyroModule):
    """``y ~ Bernoulli(logits = x W^T + b)`` with a :class:`BayesianLinear` output layer."""

    def __init__(self) -> None:
        super().__init__()
        self.output = BayesianLinear(3, 1, seed=0)

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.output(x).squeeze(-1)
        with pyro.plate("data", x.shape[0]):
            return pyro.sample("y", dist.Bernoulli(logits=logits), obs=y)


def test_nuts_chains_go_straight_into_posterior_predictive() -> None:
    # Regression: `chains x draws` draws from fit_nuts failed inside the model ("t() expects a
    # tensor with <= 2 dimensions"); now they are flattened chain-major to S = chains * draws
    model = _Layered()
    weight = torch.randn(2, 30, 1, 3)
    bias = torch.randn(2, 30, 1)
    chained = {"output.weight": weight, "output.bias": bias}
    flat = {"output.weight": weight.reshape(60, 1, 3), "output.bias": bias.reshape(60, 1)}
    x = torch.randn(4, 3)
    by_chain = posterior_predictive(model, None, x, sites=["y"], posterior_samples=chained, seed=3)
    by_draw = posterior_predictive(model, None, x, sites=["y"], posterior_samples=flat, seed=3)
    assert by_chain["y"].draws.shape == (60, 4)
    torch.testing.assert_close(by_chain["y"].draws, by_draw["y"].draws, rtol=0, atol=0)
    # each draw is a Bernoulli with that draw's logits: the mean over draws is close to the
    # mean probability (60 draws x 4 inputs, standard error <= 0.065)
    p = torch.sigmoid(
        torch.einsum("nd,sd->sn", x, flat["output.weight"][:, 0]) + bias.reshape(60, 1)
    )
    torch.testing.assert_close(by_chain["y"].mean, p.mean(0), rtol=0, atol=0.26)


def test_wrong_draws_are_refused_naming_the_site() -> None:
    model = _Layered()
    x = torch.randn(4, 3)
    bad_shape = {"output.weight": torch.randn(10, 3), "output.bias": torch.randn(10, 1)}
    with pytest.raises(InputDataError, match=r"'output\.weight' has shape \(10, 3\)"):
        posterior_predictive(model, None, x, sites=["y"], posterior_samples=bad_shape)
    unknown = {"output.weight": torch.randn(10, 1, 3), "w": torch.randn(10)}
    with pytest.raises(InputDataError, match="'w' is not a latent site"):
        posterior_predictive(model, None, x, sites=["y"], posterior_samples=unknown)
    disagree = {"output.weight": torch.randn(10, 1, 3), "output.bias": torch.randn(2, 5, 1)}
    with pytest.raises(InputDataError, match="disagree"):
        posterior_predictive(model, None, x, sites=["y"], posterior_samples=disagree)
    with pytest.raises(InputDataError, match="no site"):
        posterior_predictive(
            model, None, x, sites=["nope"], posterior_samples={"output.bias": torch.randn(5, 1)}
        )


@pytest.mark.parametrize("kind", ["ordinal", "categorical"])
def test_integer_valued_sites_are_summarised_in_floating_point(kind: str) -> None:
    # Regression: quantile() on the long draws of an ordinal / Categorical site raised
    # "quantile() input tensor must be either float or double dtype"
    cutpoints = torch.tensor([-1.0, 0.5, 2.0])

    def model(n: int) -> None:
        u = pyro.sample("u", dist.Normal(0.0, 1.0))
        with pyro.plate("items", n):
            if kind == "ordinal":
                pyro.sample("grade", ordinal(cutpoints)(u.expand(n)))
            else:
                pyro.sample("grade", dist.Categorical(logits=torch.stack([u, -u, u]).expand(n, 3)))

    samples = {"u": torch.linspace(-2.0, 2.0, 400).reshape(2, 200)}
    out = posterior_predictive(model, None, 5, sites=["grade"], posterior_samples=samples)
    grade = out["grade"]
    assert not grade.draws.is_floating_point() and grade.draws.shape == (400, 5)
    assert grade.mean.dtype == torch.get_default_dtype()
    torch.testing.assert_close(grade.mean, grade.draws.float().mean(0))
    assert bool((grade.lower <= grade.upper).all()) and bool((grade.upper <= 3).all())
    if kind == "ordinal":  # P(grade) under u ~ U(-2, 2) averaged: E[grade] in closed form
        u = samples["u"].reshape(-1, 1)
        expected = torch.sigmoid(u - cutpoints).sum(-1).mean()
        torch.testing.assert_close(grade.mean, expected.expand(5), rtol=0, atol=0.15)


def test_default_mass_matrix_is_dense_for_small_models(monkeypatch: pytest.MonkeyPatch) -> None:
    import probrank.inference.mcmc as mcmc

    seen: list[bool] = []
    real = mcmc.NUTS

    def recording(*args: object, **kwargs: object) -> object:
        seen.append(bool(kwargs["full_mass"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(mcmc, "NUTS", recording)

    def small() -> None:
        pyro.sample("w", dist.Normal(torch.zeros(3), 1.0).to_event(1))

    def large() -> None:
        pyro.sample("w", dist.Normal(torch.zeros(mcmc.DENSE_MASS_MAX_DIM + 1), 1.0).to_event(1))

    assert mcmc.latent_dimension(small) == 3
    fit_nuts(small, num_samples=4, warmup_steps=2, num_chains=1)
    fit_nuts(large, num_samples=4, warmup_steps=2, num_chains=1)
    fit_nuts(small, num_samples=4, warmup_steps=2, num_chains=1, full_mass=False)
    assert seen == [True, False, False]


def test_nuts_samples_give_pyro_predictive_flat_draws_like_mcmc() -> None:
    # Regression (issue 31): fit_nuts' chains x draws broke pyro.infer.Predictive ("t() expects
    # a tensor with <= 2 dimensions"); get_samples() is MCMC.get_samples(): flat by default
    model = _Layered()
    weight, bias = torch.randn(2, 30, 1, 3), torch.randn(2, 30, 1)
    samples = NutsSamples(
        {"output.weight": weight, "output.bias": bias},
        torch.zeros(2, 30, dtype=torch.bool),
        torch.ones(2),
    )
    flat = samples.get_samples()
    assert flat["output.weight"].shape == (60, 1, 3)
    torch.testing.assert_close(flat["output.weight"][30:], weight[1], rtol=0, atol=0)
    grouped = samples.get_samples(group_by_chain=True)
    assert grouped["output.bias"].shape == (2, 30, 1)
    x = torch.randn(4, 3)
    pyro.set_rng_seed(0)
    predicted = pyro.infer.Predictive(model, posterior_samples=flat, return_sites=["y"])(x)
    assert predicted["y"].shape == (60, 4)
