"""The beta-binomial with a learned concentration (``likelihood = "latent_beta_binomial"``):
its prior enters the ELBO once, its likelihood uses each member's own ``c``, and SVI recovers
the over-dispersion of simulated counts (and a large ``c`` for binomial counts)."""

from __future__ import annotations

import math

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro import poutine

from probrank.exceptions import InputDataError
from probrank.models.qlfusion import QLFusionSettings
from probrank.models.qlfusion.likelihoods import LatentConcentration
from probrank.models.qlfusion.network import QLFusionNet, train_quantifier
from probrank.models.qlfusion.quantifiers import model_parts

LATENT = {"likelihood": "latent_beta_binomial"}


def test_the_trace_has_the_prior_once_and_each_members_concentration() -> None:
    torch.manual_seed(0)
    pyro.clear_param_store()
    settings = QLFusionSettings(**LATENT, likelihood_args={"prior_median": 4.0, "prior_sd": 0.5})
    net = QLFusionNet(8, 4, num_models=2, total_count=8, seed=0, **model_parts(settings))
    with torch.no_grad():
        net.concentration_layer.log_value.copy_(torch.tensor([[math.log(2.0)], [math.log(30.0)]]))
    x, counts = torch.randn(2, 5, 8), torch.randint(0, 9, (2, 5)).float()
    trace = poutine.trace(net.model).get_trace(x, counts)
    prior = trace.nodes["concentration_prior"]
    expected = dist.LogNormal(math.log(4.0), 0.5).log_prob(torch.tensor([2.0, 30.0])).sum()
    torch.testing.assert_close(prior["fn"].log_prob(prior["value"]).sum(), expected)
    site = trace.nodes["k_rel"]["fn"].base_dist
    assert isinstance(site, dist.BetaBinomial)
    total = site.concentration1 + site.concentration0
    torch.testing.assert_close(total[:, 0], torch.tensor([2.0, 30.0]))
    assert net.concentration is not None
    torch.testing.assert_close(net.concentration.reshape(-1), torch.tensor([2.0, 30.0]))


def _simulated(concentration: float | None, lists: int, seed: int) -> dict[str, torch.Tensor]:
    """Lists of 100 whose score curves carry no signal: every list's mean share is 0.3 and
    its count is beta-binomial with ``concentration`` (None: binomial)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(1, lists, 100, generator=g).sort(-1, descending=True).values
    p = torch.full((1, lists), 0.3)
    if concentration is not None:
        p = torch.distributions.Beta(concentration * p, concentration * (1 - p)).sample()
    torch.manual_seed(seed)
    counts = torch.distributions.Binomial(100, p).sample()
    return {"x": x, "counts": counts, "mask": torch.ones(1, lists, dtype=torch.bool)}


def _fitted_concentration(concentration: float | None) -> float:
    train, val = _simulated(concentration, 600, 1), _simulated(concentration, 100, 2)
    trained = train_quantifier(
        train, val, batch_sizes=[200], lr=0.02, max_epochs=150, patience=150, hidden=4,
        likelihood=QLFusionSettings(**LATENT).likelihood_factory(), seed=0, progress=False,
    )  # fmt: skip
    assert trained.net.concentration is not None
    return float(trained.net.concentration.reshape(-1)[trained.chosen_members()][0])


def test_svi_recovers_the_over_dispersion_of_simulated_lists() -> None:
    # c = 5 gives each list's share a sd of sqrt(0.21 / 6) = 0.19 around 0.3
    assert 3.0 < _fitted_concentration(5.0) < 8.0
    # binomial counts: the data push c far above the prior median of 10
    assert _fitted_concentration(None) > 40.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"prior_median": 0.0}, "prior_median must be a positive number"),
        ({"prior_sd": -1.0}, "prior_sd must be a positive number"),
        ({"concentration": 3.0}, "do not fit the 'latent_beta_binomial' likelihood"),
    ],
)
def test_a_bad_prior_is_refused(args: dict, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        QLFusionSettings(**LATENT, likelihood_args=args)


def test_without_a_fitted_concentration_the_prior_median_is_used() -> None:
    likelihood = LatentConcentration(100, prior_median=7.0)
    logits = torch.tensor([0.0, 1.0])
    d = likelihood(logits)
    torch.testing.assert_close(d.concentration1 + d.concentration0, torch.full((2,), 7.0))
