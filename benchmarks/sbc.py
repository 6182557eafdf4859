"""Simulation-based calibration (Talts et al. 2018) of every inference path probrank ships.

Each row draws parameters from the prior, data from the likelihood, fits with the library's own
inference (``fit_nuts``, ``fit_svi``, the Laplace heads, MC dropout, ensembles, SWAG, the
Bayesian comparison, the pooling relevance model's Laplace) and ranks the true values among
``L`` thinned posterior draws (:mod:`probrank.diagnostics.sbc`). Exact inference (closed form,
NUTS, Laplace on a linear-Gaussian model, the conjugate comparison model) must give uniform
ranks; approximate inference reports its direction (under-/over-dispersed, biased) and
50%/90% coverage.

Simulations of the Pyro models are fitted together: one model with a plate (or a
``batch_shape``) over the `N` simulations, whose posterior factorises, so each simulation's
marginal draws are its own posterior's; NUTS then runs once per row instead of `N` times.

    .venv/bin/python benchmarks/sbc.py --quick          # a subset, about a minute
    .venv/bin/python benchmarks/sbc.py [--out DIR] [--rows NAME ...]

Prints a table, then one JSON line; writes ``DIR/<row>.png`` rank histograms,
``DIR/<row>_pit_ecdf.png`` (the installed ArviZ's PIT-ECDF plots of the same ranks) and
``DIR/sbc.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.infer.autoguide import AutoNormal

from probrank.diagnostics.plots import plot_sbc
from probrank.diagnostics.sbc import SBCResult, run_sbc, sbc_from_draws
from probrank.evaluation.bayesian import fit_comparison
from probrank.exceptions import ConvergenceWarning
from probrank.inference import NutsSamples, fit_nuts, fit_svi
from probrank.inference.swag import SWAGCollector
from probrank.likelihoods import (
    bernoulli_relevance,
    binomial_proportion,
    bradley_terry,
    ordinal,
    thurstone,
)
from probrank.models.pooling import PoolingModelSettings, PoolingRelevanceModel
from probrank.models.qlfusion.network import QLFusionNet
from probrank.nn.bayesian_linear import BayesianLinear
from probrank.nn.heads import DeepEnsembleHead, FitSettings, MCDropoutHead
from probrank.nn.rff_gp import RFFGaussianProcess
from probrank.posteriors.bradley_terry import BradleyTerryLaplace


@dataclass(frozen=True)
class Size:
    """Simulations `N`, ranks `L` and the sampler's draws of one row."""

    sims: int
    ranks: int
    draws: int = 400
    warmup: int = 300


def _seeded(generator: torch.Generator) -> int:
    return int(torch.randint(0, 2**31 - 1, (), generator=generator))


def _prior_trace(model: Callable[..., Any], seed: int, *args: Any) -> Any:
    """One prior-predictive trace of ``model(*args)``: true parameters and simulated data."""
    with pyro.get_param_store().scope(), torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        return poutine.trace(model).get_trace(*args)


# -- the Bayesian output layer with each likelihood (NUTS; vectorised over simulations) -------

LIKELIHOODS: dict[str, tuple[Callable[[], Any], bool]] = {
    "binomial": (lambda: binomial_proportion(10), False),
    "bernoulli": (lambda: bernoulli_relevance(), False),
    "bradley-terry": (lambda: bradley_terry(), True),
    "thurstone": (lambda: thurstone(), True),
    "ordinal": (lambda: ordinal(torch.tensor([-1.0, 1.0])), False),
}


def _layer_model(name: str, sims: int, width: int) -> Callable[..., Any]:
    factory, pairwise = LIKELIHOODS[name]
    likelihood = factory()
    layer = BayesianLinear(width, 1, bias=not pairwise, batch_shape=(sims,))

    def model(x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        # x: N x n x d (pairwise: N x n x 2 x d, first minus second)
        rows = x.reshape(sims, -1, width)
        utility = layer(rows).squeeze(-1)
        if pairwise:
            pair = utility.reshape(sims, -1, 2)
            utility = pair[..., 0] - pair[..., 1]
        with pyro.plate("sims", sims, dim=-2), pyro.plate("obs", utility.shape[-1], dim=-1):
            return pyro.sample("y", likelihood(utility), obs=y)

    return model


def _with_divergences(result: SBCResult, samples: NutsSamples) -> SBCResult:
    """Record the NUTS run's divergent transitions (all simulations share the run)."""
    result.info["divergences"] = samples.num_divergences
    return result


def _stack_draws(samples: dict[str, torch.Tensor], sites: list[str], sims: int) -> torch.Tensor:
    """``{site: chains x S x N x ...}`` -> `chains x S x N x P`."""
    parts = [samples[s].reshape(*samples[s].shape[:2], sims, -1) for s in sites]
    return torch.cat(parts, -1)


def output_layer_nuts(name: str, size: Size, seed: int) -> SBCResult:
    """``BayesianLinear(2, 1)`` with N(0, 1) priors, 24 observations, NUTS."""
    width, n = 2, 24
    model = _layer_model(name, size.sims, width)
    pairwise = LIKELIHOODS[name][1]
    generator = torch.Generator().manual_seed(seed)
    shape = (size.sims, n, 2, width) if pairwise else (size.sims, n, width)
    x = torch.randn(shape, generator=generator)
    trace = _prior_trace(model, seed, x)
    sites = ["weight"] + ([] if pairwise else ["bias"])
    truth = torch.cat([trace.nodes[s]["value"].reshape(size.sims, -1) for s in sites], -1)
    y = trace.nodes["y"]["value"]
    samples = fit_nuts(
        model, x, y, num_samples=size.draws, warmup_steps=size.warmup, num_chains=1, seed=seed
    )
    names = [f"w{j}" for j in range(width)] + ([] if pairwise else ["bias"])
    draws = _stack_draws(samples, sites, size.sims)
    return _with_divergences(
        sbc_from_draws(truth, draws, num_ranks=size.ranks, names=names), samples
    )


def conjugate_nuts(size: Size, seed: int) -> SBCResult:
    """``mu ~ N(0, 1)``, five ``y ~ N(mu, 1)``: NUTS on an exactly known posterior."""

    def model(y: torch.Tensor | None = None) -> None:
        with pyro.plate("sims", size.sims, dim=-2):
            mu = pyro.sample("mu", dist.Normal(0.0, 1.0))
            with pyro.plate("obs", 5, dim=-1):
                pyro.sample("y", dist.Normal(mu.expand(size.sims, 5), 1.0), obs=y)

    trace = _prior_trace(model, seed)
    truth = trace.nodes["mu"]["value"].reshape(size.sims, 1)
    samples = fit_nuts(
        model,
        trace.nodes["y"]["value"],
        num_samples=size.draws,
        warmup_steps=size.warmup,
        num_chains=1,
        seed=seed,
    )
    draws = _stack_draws(samples, ["mu"], size.sims)
    return _with_divergences(
        sbc_from_draws(truth, draws, num_ranks=size.ranks, names=["mu"]), samples
    )


def conjugate_exact(size: Size, seed: int) -> SBCResult:
    """The same model with exact conjugate posterior draws: the check of the SBC machinery."""

    def simulate(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        mu = torch.randn(1, generator=generator, dtype=torch.float64)
        return mu, mu + torch.randn(5, generator=generator, dtype=torch.float64)

    def fit(y: torch.Tensor, fit_seed: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(fit_seed)
        mean, sd = y.sum() / 6.0, 6.0**-0.5
        return mean + sd * torch.randn(size.draws, 1, generator=generator, dtype=torch.float64)

    return run_sbc(
        simulate, fit, num_simulations=size.sims, num_ranks=size.ranks, seed=seed, names=["mu"]
    )


# -- the QLFusion quantifier: NUTS, SVI with its own mean-field guide, SVI AutoNormal ---------


def _qlfusion(size: Size, seed: int) -> tuple[QLFusionNet, torch.Tensor, torch.Tensor, Any]:
    """A QLFusion net over `N` members (one per simulation) with its hidden layer fixed."""
    depth, hidden, lists = 8, 3, 20
    net = QLFusionNet(depth, hidden, num_models=size.sims, seed=seed)
    for parameter in (net.norm_gain, net.norm_bias, net.hidden_weight, net.hidden_bias):
        parameter.requires_grad_(False)
    generator = torch.Generator().manual_seed(seed)
    scores = torch.rand(size.sims, lists, depth, generator=generator)
    scores = scores * torch.rand(size.sims, lists, 1, generator=generator).mul(4).exp()
    x = scores.sort(-1, descending=True).values
    trace = _prior_trace(net.model, seed, x)
    truth = torch.cat(
        [
            trace.nodes["output.weight"]["value"].reshape(size.sims, -1),
            trace.nodes["output.bias"]["value"].reshape(size.sims, -1),
        ],
        -1,
    )
    return net, x, trace.nodes["k_rel"]["value"], truth


QL_NAMES = ["w0", "w1", "w2", "bias"]


def qlfusion_nuts(size: Size, seed: int) -> SBCResult:
    """QLFusion's Bayesian output layer (3 hidden units, 20 lists of depth 8), NUTS."""
    net, x, counts, truth = _qlfusion(size, seed)
    samples = fit_nuts(
        net.model,
        x,
        counts,
        num_samples=size.draws,
        warmup_steps=size.warmup,
        num_chains=1,
        seed=seed,
    )
    draws = _stack_draws(samples, ["output.weight", "output.bias"], size.sims)
    result = sbc_from_draws(truth, draws, num_ranks=size.ranks, names=QL_NAMES)
    return _with_divergences(result, samples)


def _svi(model: Any, guide: Any, x: torch.Tensor, counts: torch.Tensor, seed: int) -> None:
    fit_svi(
        model,
        guide,
        [x, counts],
        optimizer=pyro.optim.Adam({"lr": 0.05}),
        max_epochs=1000,
        patience=None,
        seed=seed,
        data_dim=1,
        progress=False,
    )


def qlfusion_svi_flipout(size: Size, seed: int) -> SBCResult:
    """The same, fitted by ``fit_svi`` with the layer's own mean-field guide (flipout)."""
    net, x, counts, truth = _qlfusion(size, seed)
    _svi(net.model, net.guide, x, counts, seed)
    weight, bias = net.output.sample(size.draws, seed=seed)
    if bias is None:
        raise RuntimeError("QLFusion's output layer has a bias")
    draws = torch.cat([weight.reshape(size.draws, size.sims, -1), bias], -1)
    return sbc_from_draws(truth, draws.detach(), num_ranks=size.ranks, names=QL_NAMES)


def qlfusion_svi_autonormal(size: Size, seed: int) -> SBCResult:
    """The same, fitted by ``fit_svi`` with Pyro's ``AutoNormal``."""
    net, x, counts, truth = _qlfusion(size, seed)
    guide = AutoNormal(net.model)
    _svi(net.model, guide, x, counts, seed)
    # AutoNormal is a Normal per site: its median is the location and its 84.13% quantile
    # the location plus one scale; draw from that Normal
    with pyro.get_param_store().scope(), torch.no_grad():
        loc = guide.median(x)
        upper = guide.quantiles([float(dist.Normal(0.0, 1.0).cdf(torch.tensor(1.0)))], x)
    generator = torch.Generator().manual_seed(seed)
    parts = []
    for site in ["output.weight", "output.bias"]:
        mean = loc[site].reshape(size.sims, -1)
        scale = upper[site][0].reshape(size.sims, -1) - mean
        eps = torch.randn(size.draws, *mean.shape, generator=generator, dtype=mean.dtype)
        parts.append(mean + scale * eps)
    draws = torch.cat(parts, -1)
    return sbc_from_draws(truth, draws, num_ranks=size.ranks, names=QL_NAMES)


# -- Laplace posteriors ------------------------------------------------------------------------


def _map(gp: RFFGaussianProcess, h: torch.Tensor, loss: Callable[[torch.Tensor], Any]) -> None:
    """MAP of ``beta`` (the head's training objective: loss + prior penalty) by L-BFGS."""
    beta = gp.output.beta
    optimizer = torch.optim.LBFGS([beta], max_iter=200, tolerance_grad=1e-10, history_size=20)

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        value = loss(gp(h)) + gp.output.prior_penalty()
        value.backward()
        return value

    optimizer.step(closure)


def rff_laplace(likelihood: str, size: Size, seed: int) -> SBCResult:
    """RFF GP head (2 inputs, 8 features, no bias) with its Laplace posterior of ``beta``;
    ranks of the latent function at three test inputs."""
    n = 20 if likelihood == "gaussian" else 60
    noise = 0.25

    def build(generator: torch.Generator) -> tuple[RFFGaussianProcess, torch.Tensor]:
        gp = RFFGaussianProcess(2, 8, likelihood=likelihood, noise=noise, seed=7).double()
        if gp.output.bias is not None:
            gp.output.bias.requires_grad_(False)  # the simulated model has no bias
        return gp, torch.randn(n + 3, 2, generator=generator, dtype=torch.float64)

    def simulate(generator: torch.Generator) -> tuple[torch.Tensor, Any]:
        gp, h = build(generator)
        beta = torch.randn(8, generator=generator, dtype=torch.float64)
        f = gp.phi(h) @ beta
        if likelihood == "gaussian":
            y = f[:n] + noise**0.5 * torch.randn(n, generator=generator, dtype=torch.float64)
        else:
            y = torch.bernoulli(torch.sigmoid(f[:n]), generator=generator)
        return f[n:], (gp, h, y)

    def fit(data: Any, fit_seed: int) -> torch.Tensor:
        gp, h, y = data
        if likelihood == "gaussian":
            _map(gp, h[:n], lambda f: 0.5 * (f - y).square().sum() / noise)
        else:
            bce = torch.nn.functional.binary_cross_entropy_with_logits
            _map(gp, h[:n], lambda f: bce(f, y, reduction="sum"))
        gp.output.reset_precision()
        gp.output.accumulate_precision(gp.phi(h[:n]))
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(fit_seed)
            return gp.posterior(h[n:]).sample(torch.Size([size.draws]))

    names = ["f(x0)", "f(x1)", "f(x2)"]
    return run_sbc(
        simulate, fit, num_simulations=size.sims, num_ranks=size.ranks, seed=seed, names=names
    )


def bt_laplace(link: str, size: Size, seed: int) -> SBCResult:
    """``BradleyTerryLaplace``: 5 candidates, RBF-kernel prior, 12 random judgements."""
    count, judgements = 5, 12

    def simulate(generator: torch.Generator) -> tuple[torch.Tensor, Any]:
        features = torch.randn(count, 2, generator=generator, dtype=torch.float64)
        model = BradleyTerryLaplace.from_features(features, lengthscale=1.0, link=link)
        chol = torch.linalg.cholesky(model.prior_covariance)
        f = chol @ torch.randn(count, generator=generator, dtype=torch.float64)
        pairs = []
        for _ in range(judgements):
            a, b = torch.randperm(count, generator=generator)[:2].tolist()
            z = f[a] - f[b]
            p = torch.sigmoid(z) if link == "logistic" else torch.special.ndtr(z)
            won = bool(torch.rand((), generator=generator, dtype=torch.float64) < p)
            pairs.append((a, b) if won else (b, a))
        return f, (model, pairs)

    def fit(data: Any, fit_seed: int) -> torch.Tensor:
        model, pairs = data
        model.update_many(pairs)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(fit_seed)
            return model.posterior().sample(torch.Size([size.draws]))

    names = [f"f{j}" for j in range(count)]
    return run_sbc(
        simulate, fit, num_simulations=size.sims, num_ranks=size.ranks, seed=seed, names=names
    )


# -- MC dropout, deep ensembles, SWAG: a logistic-linear truth, ranks of the test logits -------

WIDTH, TRAIN = 3, 100


def _logistic_simulate(generator: torch.Generator) -> tuple[torch.Tensor, Any]:
    w = torch.randn(WIDTH, generator=generator)
    x = torch.randn(TRAIN + 3, WIDTH, generator=generator)
    y = torch.bernoulli(torch.sigmoid(x[:TRAIN] @ w), generator=generator)
    return x[TRAIN:] @ w, (x, y)


def mc_dropout(size: Size, seed: int) -> SBCResult:
    """``MCDropoutHead`` (16 hidden units, dropout 0.1): logits of ``size.draws`` passes."""

    def fit(data: Any, fit_seed: int) -> torch.Tensor:
        x, y = data
        head = MCDropoutHead(
            WIDTH, hidden=16, num_samples=size.draws, prediction_seed=fit_seed, seed=fit_seed
        )
        head.fit(x[:TRAIN], y, FitSettings(epochs=20, batch_size=50, lr=2e-2, seed=fit_seed))
        return head.sample_logits(x[TRAIN:])

    names = ["f(x0)", "f(x1)", "f(x2)"]
    return run_sbc(
        _logistic_simulate,
        fit,
        num_simulations=size.sims,
        num_ranks=size.ranks,
        seed=seed,
        names=names,
    )


def ensemble(size: Size, seed: int) -> SBCResult:
    """``DeepEnsembleHead`` with 5 members (ranks among 5 draws)."""

    def fit(data: Any, fit_seed: int) -> torch.Tensor:
        x, y = data
        head = DeepEnsembleHead(WIDTH, num_members=5, hidden=16, seed=fit_seed)
        head.fit(x[:TRAIN], y, FitSettings(epochs=20, batch_size=50, lr=2e-2, seed=fit_seed))
        return head.sample_logits(x[TRAIN:]).detach()

    names = ["f(x0)", "f(x1)", "f(x2)"]
    return run_sbc(
        _logistic_simulate, fit, num_simulations=size.sims, num_ranks=5, seed=seed, names=names
    )


def swag(size: Size, seed: int) -> SBCResult:
    """SWAG (``SWAGCollector``, scale 1/2, rank 20) of Bayesian logistic regression with a
    N(0, I) prior trained by constant-rate minibatch SGD; ranks of the weights."""
    generator = torch.Generator().manual_seed(seed)
    sims = size.sims
    truth = torch.randn(sims, WIDTH, generator=generator, dtype=torch.float64)
    x = torch.randn(sims, TRAIN, WIDTH, generator=generator, dtype=torch.float64)
    y = torch.bernoulli(torch.sigmoid((x @ truth.unsqueeze(-1)).squeeze(-1)), generator=generator)
    w = torch.zeros(sims, WIDTH, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.5)
    collectors = [SWAGCollector(max_rank=20, scale=0.5) for _ in range(sims)]
    batch, epochs, burn_in = 20, 120, 40
    for epoch in range(epochs):
        order = torch.randperm(TRAIN, generator=generator)
        for index in order.split(batch):
            optimizer.zero_grad()
            logits = (x[:, index] @ w.unsqueeze(-1)).squeeze(-1)
            nll = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, y[:, index], reduction="none"
            ).sum(-1) * (TRAIN / len(index))
            ((nll + 0.5 * w.square().sum(-1)) / TRAIN).sum().backward()
            optimizer.step()
        if epoch >= burn_in:
            for i, collector in enumerate(collectors):
                collector.collect(w[i].detach())
    draws = torch.stack([c.posterior().sample(size.draws, generator) for c in collectors], 1)
    names = [f"w{j}" for j in range(WIDTH)]
    return sbc_from_draws(truth, draws, num_ranks=size.ranks, names=names)


# -- the Bayesian comparison of runs ----------------------------------------------------------


def comparison(likelihood: str, size: Size, seed: int) -> SBCResult:
    """``fit_comparison``: 2 systems, 30 topics of normal per-topic values with a random mean,
    per-system scales and correlation; ranks of both means and their difference."""
    topics = 30

    def simulate(generator: torch.Generator) -> tuple[torch.Tensor, Any]:
        g = torch.Generator().manual_seed(_seeded(generator))
        mu = 0.2 + 0.4 * torch.rand(2, generator=g, dtype=torch.float64)
        sd = 0.1 + 0.2 * torch.rand(2, generator=g, dtype=torch.float64)
        rho = 0.9 * float(torch.rand((), generator=g))
        chol = torch.linalg.cholesky(
            torch.tensor([[1.0, rho], [rho, 1.0]], dtype=torch.float64) * sd.outer(sd)
        )
        values = mu + torch.randn(topics, 2, generator=g, dtype=torch.float64) @ chol.T
        return torch.cat([mu, mu[1:] - mu[:1]]), values.numpy()

    def fit(values: np.ndarray, fit_seed: int) -> torch.Tensor:
        draws = fit_comparison(values, likelihood=likelihood, seed=fit_seed, num_draws=size.draws)
        return torch.as_tensor(np.concatenate([draws, draws[:, 1:] - draws[:, :1]], 1))

    return run_sbc(
        simulate,
        fit,
        num_simulations=size.sims,
        num_ranks=size.ranks,
        seed=seed,
        names=["mu_a", "mu_b", "mu_b - mu_a"],
    )


# -- the pooling relevance model (the ``bayesian`` pooling strategy): MAP + Laplace ----------

POOL_RUNS, POOL_TOPICS, POOL_DEPTH, POOL_DOCS = 4, 6, 20, 40
POOL_PROBES = np.array([[1, 1, 1, 1], [5, 8, 0, 12], [0, 0, 0, 20], [10, 10, 10, 10]]).T
"""Rank profiles (`runs x 4`, 0: unranked) whose relevance logit in topic 0 is ranked too."""
POOL_NAMES = [
    "w_0", "c_0", "a_0", "b1_topic_0", "b_fused", "b_share", "mu_w", "mu_c", "mu_a",
    "f(1,1,1,1)", "f(5,8,-,12)", "f(-,-,-,20)", "f(10,10,10,10)",
]  # fmt: skip


def _pool_ranks(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A pool: per topic, each run ranks the top ``POOL_DEPTH`` of ``POOL_DOCS`` documents by
    a shared latent score plus its own noise; ranks `runs x n` and topics `n` of the pooled."""
    ranks, topics = [], []
    for t in range(POOL_TOPICS):
        shared = rng.normal(size=POOL_DOCS)
        topic = np.zeros((POOL_RUNS, POOL_DOCS), dtype=np.int64)
        for r in range(POOL_RUNS):
            order = np.argsort(-(shared + rng.normal(size=POOL_DOCS)))[:POOL_DEPTH]
            topic[r, order] = np.arange(1, POOL_DEPTH + 1)
        pooled = (topic > 0).any(axis=0)
        ranks.append(topic[:, pooled])
        topics.append(np.full(int(pooled.sum()), t))
    return np.hstack(ranks), np.concatenate(topics)


def _pool_quantities(model: PoolingRelevanceModel, params: np.ndarray) -> torch.Tensor:
    """The ranked quantities of parameters `s x P` (or `P`): 9 parameters and the logits of
    the probe profiles, `s x 13` (or `13`)."""
    blocks = model.parameter_blocks()
    picked = np.concatenate([np.arange(len(params.T))[b][:1] for b in blocks.values()])
    probes = model.logits(POOL_PROBES, np.zeros(POOL_PROBES.shape[1], np.int64), params)
    return torch.as_tensor(np.concatenate([params[..., picked], probes], -1))


def pooling_laplace(
    hyper_scale: float | None, size: Size, seed: int, *, posterior: str = "laplace", **options: Any
) -> SBCResult:
    """``PoolingRelevanceModel`` (4 runs, 6 topics, depth 20, every pooled document judged,
    about 170): parameters from its own hierarchical prior (the settings' defaults, or
    ``hyper_scale`` on the population means and fused coefficients), relevance from the
    Bernoulli, the Newton MAP and its Laplace posterior (``posterior="laplace-is"``: corrected
    by Pareto-smoothed importance sampling; ``"nuts"``: NUTS draws instead); ranks of one
    run's, one topic's and the population parameters and of the relevance logits of four rank
    profiles."""
    options["posterior"] = posterior
    if hyper_scale is not None:
        options["hyper_scale"] = hyper_scale
    settings = PoolingModelSettings(**options)
    empty = np.zeros((POOL_RUNS, 0), dtype=np.int64)
    prior = PoolingRelevanceModel(settings).fit(
        empty, np.zeros(0), np.zeros(0), num_topics=POOL_TOPICS, depth=POOL_DEPTH
    )  # fitted on nothing: the posterior is the prior
    one_class = []
    khats: list[float] = []
    divergent: list[int] = []

    def simulate(generator: torch.Generator) -> tuple[torch.Tensor, Any]:
        rng = np.random.default_rng(_seeded(generator))
        ranks, topics = _pool_ranks(rng)
        theta = prior.sample_parameters(1, rng)[0]
        prob = 1.0 / (1.0 + np.exp(-prior.logits(ranks, topics, theta)))
        labels = (rng.random(len(prob)) < prob).astype(np.float64)
        one_class.append(labels.min() == labels.max())
        return _pool_quantities(prior, theta), (ranks, topics, labels)

    def fit(data: Any, fit_seed: int) -> torch.Tensor:
        ranks, topics, labels = data
        # k > 0.7 and divergent chains are expected here: recorded in the row's info
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = PoolingRelevanceModel(settings).fit(
                ranks, topics, labels, num_topics=POOL_TOPICS, depth=POOL_DEPTH
            )
            draws = model.sample_parameters(size.draws, np.random.default_rng(fit_seed))
        if model.pareto_k is not None:
            khats.append(model.pareto_k)
        if model.mcmc_divergences is not None:
            divergent.append(model.mcmc_divergences)
        return _pool_quantities(model, draws)

    result = run_sbc(
        simulate, fit, num_simulations=size.sims, num_ranks=size.ranks, seed=seed, names=POOL_NAMES
    )
    result.info["one_class_share"] = round(float(np.mean(one_class)), 3)
    if khats:
        k = np.asarray(khats)
        result.info["pareto_k_median"] = round(float(np.median(k)), 3)
        result.info["pareto_k_max"] = round(float(k.max()), 3)
        result.info["pareto_k_above_0.7"] = round(float(np.mean(k > 0.7)), 3)
    if divergent:
        result.info["chains_with_divergences"] = round(float(np.mean(np.asarray(divergent) > 0)), 3)
    return result


# -- the rows ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One SBC row: what it fits, how, whether the inference is exact, and its sizes."""

    name: str
    model: str
    inference: str
    exact: bool
    run: Callable[[Size, int], SBCResult]
    full: Size
    quick: Size | None = None


def _rows() -> list[Row]:
    nuts, nuts_quick = Size(100, 9, 150, 150), Size(30, 9, 100, 100)
    svi, laplace = Size(100, 9, 300), Size(300, 19, 200)
    # fmt: off
    layer = [
        (f"layer-{n}-nuts", f"BayesianLinear + {n}", "NUTS (fit_nuts)", True,
         partial(output_layer_nuts, n), nuts, nuts_quick if n == "binomial" else None)
        for n in LIKELIHOODS
    ]
    ql = "QLFusion quantifier (binomial)"
    mlp = "MLP head, logistic truth"
    table: list[tuple[Any, ...]] = [
        ("conjugate-exact", "normal mean (conjugate)", "closed form", True, conjugate_exact,
         Size(1000, 19, 100), Size(200, 9, 100)),
        ("conjugate-nuts", "normal mean (conjugate)", "NUTS (fit_nuts)", True, conjugate_nuts,
         Size(200, 9, 200, 200), nuts_quick),
        *layer,
        ("qlfusion-nuts", ql, "NUTS (fit_nuts)", True, qlfusion_nuts, Size(60, 9, 150, 150),
         None),
        ("qlfusion-svi-flipout", ql, "SVI, own mean-field guide (flipout)", False,
         qlfusion_svi_flipout, svi, None),
        ("qlfusion-svi-autonormal", ql, "SVI AutoNormal", False, qlfusion_svi_autonormal, svi,
         None),
        ("rff-gp-gaussian", "RFF GP head, Gaussian", "Laplace (exact here)", True,
         partial(rff_laplace, "gaussian"), laplace, Size(100, 9, 100)),
        ("rff-gp-bernoulli", "RFF GP head, Bernoulli", "Laplace", False,
         partial(rff_laplace, "bernoulli"), laplace, None),
        ("bt-laplace-logistic", "Bradley-Terry GP prior", "Laplace", False,
         partial(bt_laplace, "logistic"), laplace, Size(100, 9, 100)),
        ("bt-laplace-probit", "Thurstone GP prior", "Laplace", False,
         partial(bt_laplace, "probit"), laplace, None),
        ("mc-dropout", mlp, "MC dropout", False, mc_dropout, Size(100, 19, 40), Size(30, 9, 20)),
        ("ensemble", mlp, "deep ensemble (5 members)", False, ensemble, Size(60, 5, 5), None),
        ("swag", "logistic regression", "SWAG (SGD lr 0.5, scale 1/2)", False, swag,
         Size(200, 19, 200), Size(60, 9, 100)),
        ("comparison-paired", "comparison of 2 runs (paired)", "exact draws", True,
         partial(comparison, "paired"), Size(300, 19, 400), Size(100, 9, 200)),
        ("pooling-laplace", "pooling relevance (default prior)", "Laplace (Newton MAP)", False,
         partial(pooling_laplace, None), Size(1000, 19, 200), Size(200, 19, 200)),
        ("pooling-laplace-hyper1", "pooling relevance (hyper_scale 1)", "Laplace (Newton MAP)",
         False, partial(pooling_laplace, 1.0), Size(1000, 19, 200), Size(200, 19, 200)),
        ("pooling-laplace-is", "pooling relevance (default prior)", "Laplace + PSIS (t4, 2000)",
         False, partial(pooling_laplace, None, posterior="laplace-is"), Size(1000, 19, 200),
         Size(200, 19, 200)),
        ("pooling-nuts", "pooling relevance (default prior)", "NUTS (Laplace-whitened)", True,
         partial(pooling_laplace, None, posterior="nuts"), Size(100, 9, 200), None),
    ]
    # fmt: on
    return [Row(*entry) for entry in table]


def _plot(row: Row, result: SBCResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    count = len(result.names)
    fig, axes = plt.subplots(1, count, figsize=(2.6 * count, 2.4), squeeze=False)
    summary = result.parameters()
    values = result.num_ranks + 1
    for j, ax in enumerate(axes[0]):
        bins = summary[j].bins
        counts = np.bincount(result.ranks[:, j] * bins // values, minlength=bins)
        ax.bar(np.arange(bins), counts, width=0.9, color="tab:blue")
        expected = result.ranks.shape[0] / bins
        band = 1.96 * math.sqrt(expected * (1 - 1 / bins))
        ax.axhspan(expected - band, expected + band, color="grey", alpha=0.25)
        ax.axhline(expected, color="grey", lw=1)
        ax.set_title(f"{result.names[j]}  p={summary[j].p_value:.3f}", fontsize=8)
        ax.set_xticks([])
    fig.suptitle(f"{row.model} / {row.inference}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small subset (about a minute)")
    parser.add_argument("--out", type=Path, default=None, help="folder for PNGs and JSON")
    parser.add_argument("--rows", nargs="*", default=None, help="only these rows")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="probrank-sbc-"))
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    records: list[dict[str, Any]] = []
    start_all = time.perf_counter()
    for row in _rows():
        size = row.quick if args.quick else row.full
        if size is None or (args.rows and row.name not in args.rows):
            continue
        start = time.perf_counter()
        pyro.clear_param_store()
        result = row.run(size, args.seed)
        summary = result.summary()
        verdict = ("pass" if summary["p_value"] > 0.01 else "FAIL") if row.exact else "approx."
        record = {
            "row": row.name,
            "model": row.model,
            "inference": row.inference,
            "exact": row.exact,
            "verdict": verdict,
            "seconds": round(time.perf_counter() - start, 1),
            **summary,
        }
        records.append(record)
        _plot(row, result, out / f"{row.name}.png")
        plot_sbc(result, out / f"{row.name}_pit_ecdf.png", title=f"{row.model} / {row.inference}")
        print(
            f"{row.name}: {verdict} p={summary['p_value']:.3f} ({record['seconds']} s)", flush=True
        )
    wall = time.perf_counter() - start_all
    header = (
        f"{'model':34} {'inference':36} {'params':>6} {'N':>5} {'L':>3} {'p (unif.)':>9} "
        f"{'chi2 max':>8} {'cov50':>6} {'cov90':>6} {'direction':17} {'div':>4} verdict"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for r in records:
        print(
            f"{r['model'][:34]:34} {r['inference'][:36]:36} {len(r['parameters']):>6} "
            f"{r['simulations']:>5} {r['num_ranks']:>3} {r['p_value']:>9.3f} {r['chi2_max']:>8.1f} "
            f"{r['coverage_50']:>6.2f} {r['coverage_90']:>6.2f} {r['dispersion']:17} "
            f"{r.get('divergences', '-'):>4} {r['verdict']}"
        )
    payload = {
        "quick": args.quick,
        "seed": args.seed,
        "wall_seconds": round(wall, 1),
        "out": str(out),
        "rows": records,
    }
    (out / "sbc.json").write_text(json.dumps(payload, indent=2))
    print(f"\nwall {wall:.0f} s; rank histograms and sbc.json in {out}")
    print(json.dumps(payload))


if __name__ == "__main__":
    main()
