"""The proportion QLFusion reports and fuses by is the likelihood's own mean share given the
logits (built-ins and your own ``"module:callable"``), not ``sigmoid(logits)`` whatever the
likelihood says; and mistakes in your likelihood are named (issue 31)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from probrank.data.datasets.synthetic import score_distribution_runs
from probrank.data.trec import Qrels
from probrank.exceptions import InputDataError
from probrank.likelihoods import binomial_proportion, mean_proportion
from probrank.models import QLFusion, QLFusionSettings
from probrank.models.qlfusion.network import QLFusionNet

MODULE = '''
import pyro.distributions as dist
import torch


def probit(total_count, slope=1.0):
    """Binomial counts with a probit link: p = Phi(slope * logit)."""

    def likelihood(logits):
        p = dist.Normal(0.0, 1.0).cdf(slope * logits)
        return dist.Binomial(total_count=torch.full_like(logits, float(total_count)), probs=p)

    return likelihood


def zero_inflated(total_count, gate=0.3):
    """A list shows no relevant document with probability gate, else binomial counts."""

    def likelihood(logits):
        count = torch.full_like(logits, float(total_count))
        return dist.ZeroInflatedDistribution(
            dist.Binomial(total_count=count, logits=logits), gate=torch.full_like(logits, gate)
        )

    return likelihood


def distribution_not_factory(total_count):
    return dist.Binomial(total_count, probs=torch.tensor(0.5))


def hard_coded_ten(total_count):
    """A bug: n fixed at 10, fine on the probe (lists of 10), NaN on longer real lists."""

    def likelihood(logits):
        return dist.Binomial(total_count=torch.full_like(logits, 10.0), logits=logits)

    return likelihood
'''

SMALL = dict(depth=30, batch_sizes=(2, 8), max_steps=120, posterior_samples=64, progress=False)


@pytest.fixture(scope="module")
def module_name(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("likelihoods")
    name = f"mylik_mean_{folder.name.replace('-', '_')}"
    (folder / f"{name}.py").write_text(MODULE, encoding="utf-8")
    sys.path.insert(0, str(folder))
    yield name
    sys.path.remove(str(folder))
    sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def collection():
    c = score_distribution_runs(num_queries=24, num_runs=3, num_docs=120, depth=30, seed=3)
    topics = sorted(c.qrels, key=int)
    train = [r.restrict(topics[:16]) for r in c.runs]
    test = [r.restrict(topics[16:]) for r in c.runs]
    return train, Qrels({q: c.qrels[q] for q in topics[:16]}), test


def _fit(collection, likelihood: str, args: dict | None = None) -> QLFusion:
    train, qrels, _ = collection
    settings = QLFusionSettings(**SMALL, likelihood=likelihood, likelihood_args=args or {})
    return QLFusion(settings).fit(train, qrels)


LIKELIHOODS = [
    ("binomial", None),
    ("beta_binomial", {"concentration": 5.0}),
    ("logit_normal", {"scale": 1.0}),
    ("latent_beta_binomial", None),
    (":probit", {"slope": 1.0}),
    (":probit", {"slope": 50.0}),
    (":zero_inflated", {"gate": 0.5}),
]


@pytest.mark.parametrize(("likelihood", "args"), LIKELIHOODS)
def test_every_point_proportion_lies_inside_its_own_predictive_intervals(
    collection, module_name: str, likelihood: str, args: dict | None
) -> None:
    name = module_name + likelihood if likelihood.startswith(":") else likelihood
    model = _fit(collection, name, args)
    _, _, test = collection
    post = model.posterior(test)
    for level in (0.5, 0.9):
        table = model.proportions(test, level=level, predictive=True)
        inside = (table["lower"] - 1e-9 <= table["mean"]) & (table["mean"] <= table["upper"] + 1e-9)
        assert bool(inside.all()), (name, args, level, table[~inside].head())
    # the point is the posterior mean of the likelihood's mean share given the logits
    net = model._require_fitted()
    logits = torch.logit(post.latent.double()).to(post.latent.dtype)
    expected = mean_proportion(net.likelihoods()[0], logits, 30).mean(0)
    torch.testing.assert_close(post.mean, expected, rtol=1e-5, atol=1e-6)
    weights = model.weights(test)
    for r, run in enumerate(post.run_names):
        for t, qid in enumerate(post.query_ids):
            assert weights[run][qid] == pytest.approx(float(post.mean[r, t]), abs=1e-6)


def test_a_probit_proportion_is_not_the_logistic_one(collection, module_name: str) -> None:
    model = _fit(collection, f"{module_name}:probit", {"slope": 50.0})
    post = model.posterior(collection[2])
    probit = torch.distributions.Normal(0.0, 1.0).cdf(50 * torch.logit(post.latent.double()))
    torch.testing.assert_close(post.draws.double(), probit, rtol=1e-4, atol=1e-5)
    assert float((post.draws - post.latent).abs().max()) > 0.05  # sigmoid would be wrong


def test_fusion_changes_when_the_likelihoods_mean_changes(collection, module_name: str) -> None:
    _, _, test = collection
    low = _fit(collection, f"{module_name}:zero_inflated", {"gate": 0.1})
    high = _fit(collection, f"{module_name}:zero_inflated", {"gate": 0.5})
    fused_low, fused_high = low.fuse(test).as_dict(), high.fuse(test).as_dict()
    qid = next(iter(fused_low))
    doc = next(iter(fused_low[qid]))
    assert fused_low[qid][doc] != pytest.approx(fused_high[qid][doc], rel=1e-3)
    w_low, w_high = low.weights(test), high.weights(test)
    run = next(iter(w_low))
    # every list of the synthetic runs has relevant documents: training is the same up to
    # the zero-inflation of empty lists, and the mean share scales by (1 - gate)
    ratio = w_high[run][qid] / w_low[run][qid]
    assert ratio == pytest.approx(0.5 / 0.9, rel=0.15)


def test_a_built_in_likelihood_declares_sigmoid() -> None:
    torch.manual_seed(0)
    logits = torch.randn(4, 3, dtype=torch.float64)
    torch.testing.assert_close(
        mean_proportion(binomial_proportion(20), logits, 20), torch.sigmoid(logits)
    )


def test_a_factory_returning_a_distribution_is_named(module_name: str) -> None:
    target = f"{module_name}:distribution_not_factory"
    with pytest.raises(InputDataError, match=r"callable of logits .*got a Binomial: wrap it"):
        QLFusionSettings(likelihood=target).likelihood_factory()

    def factory(total_count: int):
        return binomial_proportion(total_count)(torch.zeros(3))

    with pytest.raises(InputDataError, match=r"test_mean_proportion:.*factory.*got a Binomial"):
        QLFusionNet(8, 4, likelihood=factory)


def test_a_likelihood_nan_on_real_data_names_the_callable_and_the_list(
    collection, module_name: str
) -> None:
    target = f"{module_name}:hard_coded_ten"
    with pytest.raises(InputDataError) as info:
        _fit(collection, target)
    text = str(info.value)
    assert f"'{target}'" in text and "not finite" in text and "of 30" in text, text
    assert "\n" not in text


@pytest.mark.integration
def test_the_config_line_of_a_nan_likelihood_is_named(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from probrank.cli import main

    (tmp_path / "badlik.py").write_text(MODULE, encoding="utf-8")
    config = tmp_path / "bad.toml"
    config.write_text(
        '[experiment]\nprotocol = "qlfusion_cv"\nthreads = 1\n\n'
        '[data]\nshared = "fusion/robust03"\nruns = "runs/input.[apuV]*.gz"\n\n'
        '[protocol]\nvariants = ["qlfusion"]\nmeasures = ["P@5"]\n\n'
        '[quantifier]\nlikelihood = "badlik:hard_coded_ten"\n\n'
        "[smoke.protocol]\ntopics = 20\nfolds = 4\n\n"
        "[smoke.quantifier]\nbatch_sizes = [4]\nmax_epochs = 2\nmax_steps = 4\n"
        "posterior_samples = 5\n",
        encoding="utf-8",
    )
    try:
        code = main(["experiment", str(config), "--smoke", "--seeds", "1"])
    finally:
        sys.modules.pop("badlik", None)
    assert code == 2
    err = capsys.readouterr().err.splitlines()[-1]  # after the progress bar
    assert err.startswith(f"probrank: error: {config}:14: quantifier.likelihood: "), err
    assert "'badlik:hard_coded_ten'" in err and "not finite" in err and "of 100" in err
