"""Relevance, preference and ordinal likelihoods against closed forms, scipy and gradcheck."""

from __future__ import annotations

import math

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import MCMC, NUTS
from scipy.stats import norm

from probrank.exceptions import InputDataError
from probrank.likelihoods import bernoulli_relevance, bradley_terry, ordinal, thurstone


def test_bernoulli_relevance_is_a_shifted_scaled_logistic() -> None:
    u = torch.tensor([[-2.0, 0.5, 3.0], [0.0, 1.0, -1.0]], dtype=torch.float64)
    y = torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    d = bernoulli_relevance(temperature=2.0, bias=0.5)(u)
    assert d.batch_shape == u.shape
    p = 1.0 / (1.0 + torch.exp(-(u - 0.5) / 2.0))
    expected = y * torch.log(p) + (1 - y) * torch.log1p(-p)
    torch.testing.assert_close(d.log_prob(y), expected)


def test_bradley_terry_log_prob_is_minus_softplus() -> None:
    diff = torch.linspace(-40.0, 40.0, 9, dtype=torch.float64)
    lp = bradley_terry(temperature=0.5)(diff).log_prob(torch.ones_like(diff))
    torch.testing.assert_close(lp, -torch.nn.functional.softplus(-diff / 0.5))
    assert torch.isfinite(lp).all()


def test_thurstone_matches_the_normal_cdf_and_stays_finite_in_the_tails() -> None:
    diff = torch.tensor([-3.0, -0.7, 0.0, 0.4, 2.5], dtype=torch.float64)
    likelihood = thurstone(noise=1.5)
    p = likelihood(diff).probs
    torch.testing.assert_close(p, torch.as_tensor(norm.cdf(diff.numpy() / (1.5 * math.sqrt(2)))))
    far = torch.tensor([-80.0, 80.0], dtype=torch.float64, requires_grad=True)
    lp = likelihood(far).log_prob(torch.ones(2, dtype=torch.float64))
    torch.testing.assert_close(
        lp.detach(), torch.as_tensor(norm.logcdf(far.detach().numpy() / (1.5 * math.sqrt(2))))
    )
    lp.sum().backward()
    assert far.grad is not None and torch.isfinite(far.grad).all() and far.grad[0] > 1.0


def test_preference_gradients_pass_gradcheck() -> None:
    diff = torch.tensor([-1.3, 0.2, 2.1], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)
    for likelihood in (bradley_terry(0.7), thurstone(0.9), bernoulli_relevance(1.3, -0.2)):
        assert torch.autograd.gradcheck(lambda d, lk=likelihood: lk(d).log_prob(y).sum(), (diff,))


def test_ordinal_probabilities_are_differences_of_cumulative_sigmoids() -> None:
    cut = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64)
    u = torch.tensor([[-0.3, 1.7], [4.0, -3.0]], dtype=torch.float64)
    d = ordinal(cut)(u)
    assert d.batch_shape == u.shape
    cumulative = torch.sigmoid(cut - u.unsqueeze(-1))
    ones, zeros = torch.ones_like(u).unsqueeze(-1), torch.zeros_like(u).unsqueeze(-1)
    expected = torch.cat([cumulative, ones], -1) - torch.cat([zeros, cumulative], -1)
    grades = torch.arange(4, dtype=torch.float64).view(4, 1, 1).expand(4, 2, 2)
    torch.testing.assert_close(d.log_prob(grades).exp(), expected.permute(2, 0, 1))
    torch.testing.assert_close(d.log_prob(grades).exp().sum(0), torch.ones_like(u))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: bradley_terry(0.0), "temperature"),
        (lambda: bernoulli_relevance(float("nan")), "temperature"),
        (lambda: thurstone(-1.0), "noise"),
        (lambda: ordinal(torch.tensor([])), "non-empty"),
    ],
)
def test_bad_settings_are_one_line_errors(make: object, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        make()  # type: ignore[operator]


def test_svi_recovers_a_utility_gap_from_thurstone_preferences() -> None:
    # 400 comparisons with P(first preferred) = Phi(1 / sqrt(2)): the MAP gap of a flat model
    # is the probit of the observed win rate, in closed form.
    pyro.set_rng_seed(0)
    pyro.clear_param_store()
    wins = torch.cat([torch.ones(304), torch.zeros(96)]).double()
    likelihood = thurstone(noise=1.0)

    def model() -> None:
        gap = pyro.param("gap", torch.tensor(0.0, dtype=torch.float64))
        with pyro.plate("pairs", wins.numel()):
            pyro.sample("prefer", likelihood(gap.expand(wins.numel())), obs=wins)

    svi = pyro.infer.SVI(
        model, lambda: None, pyro.optim.Adam({"lr": 0.05}), pyro.infer.Trace_ELBO()
    )
    for _ in range(600):
        svi.step()
    expected = math.sqrt(2.0) * norm.ppf(304 / 400)
    assert pyro.param("gap").item() == pytest.approx(expected, abs=1e-3)
    assert isinstance(likelihood(torch.zeros(1)), dist.Bernoulli)


@pytest.mark.parametrize(
    "cut", [[0.5, 0.5, 2.0], [1.0, -1.0, 2.0], [0.0, float("nan"), 1.0]], ids=str
)
def test_ordinal_outside_the_parameter_space_has_minus_inf_log_prob(cut: list[float]) -> None:
    # collapsed, out of order or NaN cutpoints: not an exception (samplers meet such points)
    cutpoints = torch.tensor(cut, dtype=torch.float64, requires_grad=True)
    u = torch.tensor([-0.5, 0.3, 1.2], dtype=torch.float64, requires_grad=True)
    d = ordinal(cutpoints)(u)
    assert d.batch_shape == u.shape
    grades = torch.arange(4, dtype=torch.float64).view(4, 1).expand(4, 3)
    lp = d.log_prob(grades)
    assert lp.shape == (4, 3) and bool((lp == float("-inf")).all())
    draws = d.sample((500,))
    assert bool(((draws >= 0) & (draws <= 3)).all())
    if cut == [0.5, 0.5, 2.0]:  # the collapsed limit: grade 1 is squeezed to probability 0
        assert not bool((draws == 1).any())
        assert bool((draws == 2).any())


def test_ordinal_at_valid_cutpoints_is_unchanged_by_the_guard() -> None:
    cut = torch.tensor([-1.0, -1.0 + 1e-12, 2.0], dtype=torch.float64)  # close, still ordered
    u = torch.tensor([0.0, 3.0], dtype=torch.float64)
    d = ordinal(cut)(u)
    assert isinstance(d, dist.OrderedLogistic)
    lp = d.log_prob(torch.tensor([0.0, 3.0], dtype=torch.float64))
    expected = torch.log(torch.sigmoid(cut[0] - u[0])), torch.log(1 - torch.sigmoid(cut[2] - u[1]))
    torch.testing.assert_close(lp, torch.stack(expected), rtol=1e-12, atol=0)


def test_nuts_survives_cutpoints_that_collapse_in_floating_point() -> None:
    # No grade-1 label: the data pull the two cutpoints together, and the wide prior on the
    # log gap lets NUTS propose gaps below the spacing of float64 around the lower cutpoint,
    # where low + exp(log_gap) == low. Those points must be rejected (-inf), not raise.
    grades = torch.tensor([0.0] * 6 + [2.0] * 6, dtype=torch.float64)
    collapsed: list[bool] = []

    def model() -> None:
        low = pyro.sample("low", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0))
        log_gap = pyro.sample(
            "log_gap", dist.Normal(torch.tensor(-30.0, dtype=torch.float64), 15.0)
        )
        cut = torch.stack([low, low + log_gap.exp()])
        collapsed.append(bool((cut.diff() <= 0).any()))
        with pyro.plate("items", grades.numel()):
            pyro.sample("grade", ordinal(cut)(torch.zeros_like(grades)), obs=grades)

    mcmc = MCMC(NUTS(model), num_samples=40, warmup_steps=40, disable_progbar=True)
    mcmc.run()
    assert any(collapsed), "the run never met a collapsed point: the test does not test"
    samples = mcmc.get_samples()
    assert samples["log_gap"].shape == (40,) and bool(torch.isfinite(samples["log_gap"]).all())
    # every kept draw is inside the parameter space
    assert bool((samples["low"] + samples["log_gap"].exp() > samples["low"]).all())
