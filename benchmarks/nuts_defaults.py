"""NUTS with ``fit_nuts``'s default settings on the Pyro models probrank ships.

Each model is fitted by :func:`probrank.inference.fit_nuts` with its defaults (2 chains, 500
warm-up steps, 500 draws per chain, the default mass matrix: dense up to
``DENSE_MASS_MAX_DIM`` latent values) on data generated from the model itself, and checked by
:func:`probrank.diagnostics.check_convergence` (R-hat <= 1.01, bulk and tail ESS >= 400, no
divergences):

- ``qlfusion``: QLFusion's output layer, ``BayesianLinear(h, 1)`` with N(0, 1) priors on ``h``
  (``--hidden``, 32 in the paper) correlated sigmoid hidden features of 200 generated lists,
  binomial likelihood of relevant counts in the top 100;
- ``layer/<likelihood>``: a ``BayesianLinear(4, 1)`` output layer with every likelihood in
  :mod:`probrank.likelihoods` (binomial, beta-binomial and Gaussian proportions, Bernoulli
  relevance, Bradley-Terry and Thurstone preferences between candidate pairs, ordinal grades).

    .venv/bin/python benchmarks/nuts_defaults.py [--models qlfusion layer/ordinal] [--seed 0]
        [--hidden 32]

Prints a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections.abc import Callable
from typing import Any

import pyro
import torch
from pyro.nn import PyroModule
from torch import Tensor

from probrank.diagnostics import check_convergence, to_inference_data
from probrank.inference import fit_nuts
from probrank.inference.mcmc import DENSE_MASS_MAX_DIM, latent_dimension
from probrank.likelihoods import (
    bernoulli_relevance,
    beta_binomial_proportion,
    binomial_proportion,
    bradley_terry,
    gaussian_proportion,
    ordinal,
    thurstone,
)
from probrank.nn.bayesian_linear import BayesianLinear

DEPTH = 100


class OutputLayer(PyroModule):
    """``obs ~ likelihood(layer(x))``; with ``pairs``, of utility differences of pairs."""

    def __init__(self, width: int, likelihood: Callable[[Tensor], Any], pairs: Tensor | None):
        super().__init__()
        self.output = BayesianLinear(width, 1, seed=0)
        self.likelihood = likelihood
        self.pairs = pairs

    def forward(self, x: Tensor, obs: Tensor | None = None) -> Tensor:
        latent = self.output(x).squeeze(-1)  # `n`
        if self.pairs is not None:
            latent = latent[self.pairs[:, 0]] - latent[self.pairs[:, 1]]
        with pyro.plate("data", latent.shape[0]):
            return pyro.sample("obs", self.likelihood(latent), obs=obs)


def _problem(name: str, seed: int, hidden: int) -> tuple[OutputLayer, Tensor]:
    """The model and its inputs: features `n x d` (correlated for QLFusion)."""
    generator = torch.Generator().manual_seed(seed)
    if name == "qlfusion":
        lists = torch.rand(200, DEPTH, generator=generator).sort(-1, descending=True).values
        mixing = torch.randn(DEPTH, hidden, generator=generator) / DEPTH**0.5
        x = torch.sigmoid(4 * (lists - lists.mean(0)) @ mixing)  # collinear hidden units
        return OutputLayer(hidden, binomial_proportion(DEPTH), None), x
    x = torch.randn(200, 4, generator=generator)
    pairs = None
    if name in ("layer/bradley_terry", "layer/thurstone"):
        pairs = torch.randint(0, 200, (300, 2), generator=generator)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    likelihood = LIKELIHOODS[name]()
    return OutputLayer(4, likelihood, pairs), x


LIKELIHOODS: dict[str, Callable[[], Callable[[Tensor], Any]]] = {
    "layer/binomial": lambda: binomial_proportion(DEPTH),
    "layer/beta_binomial": lambda: beta_binomial_proportion(DEPTH, 20.0),
    "layer/gaussian": lambda: gaussian_proportion(DEPTH),
    "layer/bernoulli": lambda: bernoulli_relevance(),
    "layer/bradley_terry": lambda: bradley_terry(),
    "layer/thurstone": lambda: thurstone(),
    "layer/ordinal": lambda: ordinal(torch.tensor([-1.0, 0.0, 1.5])),
}
MODELS = ["qlfusion", *LIKELIHOODS]


def run(name: str, seed: int, hidden: int = 32) -> dict[str, Any]:
    model, x = _problem(name, seed, hidden)
    generator = torch.Generator().manual_seed(seed + 1)
    width = x.shape[-1]
    truth = {  # true weights with logits of unit order (as a trained layer has)
        "output.weight": 2 * torch.randn(1, width, generator=generator) / width**0.5,
        "output.bias": torch.zeros(1),
    }
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed + 1)
        obs = pyro.poutine.condition(model, data=truth)(x).detach()
    dim = latent_dimension(model, x, obs)
    start = time.perf_counter()
    samples = fit_nuts(model, x, obs, seed=seed)
    seconds = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = check_convergence(to_inference_data(samples), warn=False)
    table = report.table
    return {
        "model": f"{name} (hidden {hidden})" if name == "qlfusion" else name,
        "latent dim": dim,
        "mass": "dense" if dim <= DENSE_MASS_MAX_DIM else "diagonal",
        "max R-hat": round(float(table["r_hat"].max()), 4),
        "min bulk ESS": round(float(table["ess_bulk"].min()), 1),
        "min tail ESS": round(float(table["ess_tail"].min()), 1),
        "divergences": samples.num_divergences,
        "converged": report.converged,
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=MODELS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--hidden", type=int, default=32, help="QLFusion's hidden units (32 in the paper)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.models:
        rows.append(run(name, args.seed, args.hidden))
        print(json.dumps(rows[-1]), flush=True)
    header = list(rows[0])
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(row[h]) for h in header) + " |")
    print(json.dumps({"benchmark": "nuts_defaults", "seed": args.seed, "rows": rows}))


if __name__ == "__main__":
    main()
