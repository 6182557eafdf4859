"""NUTS against a conjugate posterior, its divergences; posterior predictive intervals."""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch

from probrank.inference.mcmc import NutsSamples, fit_nuts
from probrank.inference.predictive import credible_interval, posterior_predictive


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
