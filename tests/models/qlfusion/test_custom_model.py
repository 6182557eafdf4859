"""Your own prior and likelihood reach QLFusion's network (``QLFusionSettings.prior`` /
``likelihood``), and the paper's defaults keep the paper's code path."""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro import poutine

from probrank.exceptions import InputDataError
from probrank.likelihoods import beta_binomial_proportion
from probrank.models.qlfusion import QLFusionSettings
from probrank.models.qlfusion.network import QLFusionNet
from probrank.models.qlfusion.quantifiers import model_parts


def _trace(settings: QLFusionSettings) -> poutine.Trace:
    torch.manual_seed(0)
    pyro.clear_param_store()
    net = QLFusionNet(8, 4, num_models=2, total_count=8, seed=0, **model_parts(settings))
    x = torch.randn(2, 5, 8)
    counts = torch.randint(0, 9, (2, 5)).float()
    return poutine.trace(net.model).get_trace(x, counts)


def test_the_papers_model_adds_nothing() -> None:
    papers = QLFusionSettings(likelihood="binomial")
    assert papers.papers_model and model_parts(papers) == {}
    site = _trace(papers).nodes["k_rel"]
    assert isinstance(site["fn"].base_dist, dist.Binomial)


def test_the_default_likelihood_is_the_latent_beta_binomial() -> None:
    settings = QLFusionSettings()
    assert settings.likelihood == "latent_beta_binomial" and not settings.papers_model
    site = _trace(settings).nodes["k_rel"]
    assert isinstance(site["fn"].base_dist, dist.BetaBinomial)


def test_a_beta_binomial_likelihood_and_a_laplace_prior_reach_the_model() -> None:
    settings = QLFusionSettings(
        likelihood="beta_binomial",
        likelihood_args={"concentration": 3.0},
        prior="pyro.distributions:Laplace",
        prior_args={"loc": 0.0, "scale": 0.5},
    )
    trace = _trace(settings)
    site = trace.nodes["k_rel"]
    assert isinstance(site["fn"].base_dist, dist.BetaBinomial)
    logits = torch.logit(trace.nodes["p_hat"]["value"])
    expected = beta_binomial_proportion(8, 3.0)(logits).log_prob(site["value"])
    torch.testing.assert_close(site["fn"].base_dist.log_prob(site["value"]), expected)
    priors = [
        node["fn"]
        for name, node in trace.nodes.items()
        if node["type"] == "sample" and name.startswith("output.")
    ]
    assert priors and all(isinstance(p.base_dist, dist.Laplace) for p in priors)
    assert all(float(p.base_dist.scale.max()) == pytest.approx(0.5) for p in priors)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"likelihood": "poisson"}, "likelihood must be one of 'binomial', 'beta_binomial'"),
        ({"prior": 3}, "prior must be one of 'normal'"),
        ({"likelihood_args": [1.0]}, "likelihood_args must be a table"),
    ],
)
def test_bad_names_are_refused(changes: dict, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        QLFusionSettings(**changes)
