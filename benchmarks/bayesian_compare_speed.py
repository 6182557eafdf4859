"""Time the Bayesian comparison of Robust03 runs (``probrank eval --compare --bayesian``).

Two things are timed, one thread, on three Robust03 runs (pircRBa1, aplrob03a, uwmtCR0, 100
topics):

* one gradient of the comparison model's potential, Pyro's (the model traced and JIT-compiled,
  as ``NUTS(model, jit_compile=True)`` would use it) against the NumPy one the sampler uses
  (:mod:`probrank.evaluation.bayesian_potential`), on 3 measures x 3 runs; best of 5 rounds;
* ``bayesian_compare`` with its default sampler (4 chains of 300 warm-up and 500 kept draws)
  on 2 runs x AP and on 3 runs x AP, nDCG@10, P@10, with the convergence summary.

Prints a table and a JSON line.

    .venv/bin/python benchmarks/bayesian_compare_speed.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import torch
from pyro.infer.mcmc.util import initialize_model
from pyro.ops.integrator import potential_grad

from probrank.data import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.evaluation import Evaluator, bayesian_compare
from probrank.evaluation.bayesian_model import ComparisonPriors, comparison_model
from probrank.evaluation.bayesian_potential import ComparisonPotential

RUNS = ("pircRBa1", "aplrob03a", "uwmtCR0")
MEASURES = ("AP", "nDCG@10", "P@10")


def _best_ms(call, repeats: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            call()
        best = min(best, (time.perf_counter() - start) / repeats)
    return 1000 * best


def gradient_costs(scores: np.ndarray, rounds: int) -> dict[str, float]:
    """Milliseconds per potential-and-gradient evaluation, Pyro's (JIT) and NumPy's."""
    priors = ComparisonPriors()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        init, pyro_potential, _, _ = initialize_model(
            comparison_model,
            model_args=(torch.tensor(scores), "truncated-normal", priors),
            jit_compile=True,
            skip_jit_warnings=True,
        )
        potential_grad(pyro_potential, init)  # compile
    potential = ComparisonPotential(scores, "truncated-normal", priors)
    # Pyro's initial values are already unconstrained: concatenate them in the same order
    flat = np.concatenate([init[name].numpy().ravel() for name in potential.slices])
    theta = {"theta": torch.from_numpy(flat)}
    return {
        "pyro_jit_ms": _best_ms(lambda: potential_grad(pyro_potential, init), 100, rounds),
        "numpy_ms": _best_ms(lambda: potential_grad(potential, theta), 100, rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds (best of)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    folder = shared_data_dir() / "fusion" / "robust03"
    qrels = Qrels.read(folder / "qrels.txt")
    runs = [Run.read(folder / "runs" / f"input.{name}.gz") for name in RUNS]
    evaluator = Evaluator(qrels, list(MEASURES))
    tables = [evaluator.per_query(run) for run in runs]
    topics = [q for q in tables[0] if all(q in t for t in tables[1:])]
    scores = np.array([[[t[q][m] for q in topics] for t in tables] for m in evaluator.names])
    costs = gradient_costs(scores, args.rounds)
    fits = {}
    for label, count, measures in (("2 runs x AP", 2, ["AP"]), ("3 runs x 3", 3, MEASURES)):
        start = time.perf_counter()
        result = bayesian_compare(qrels, runs[:count], list(measures))
        seconds = time.perf_counter() - start
        check = result.convergence
        fits[label] = {
            "seconds": seconds,
            "converged": check.converged,
            "max_rhat": check.max_rhat,
            "min_ess": check.min_ess,
        }
    print(f"{'gradient of the potential (3 measures x 3 runs x 100 topics)':<62} ms")
    print(f"{'  Pyro, traced and JIT-compiled':<62} {costs['pyro_jit_ms']:.3f}")
    print(f"{'  NumPy (probrank.evaluation.bayesian_potential)':<62} {costs['numpy_ms']:.3f}")
    print(f"\n{'bayesian_compare, default sampler':<24} {'seconds':>8} {'R-hat':>7} {'ESS':>6}")
    for label, row in fits.items():
        print(f"{label:<24} {row['seconds']:>8.1f} {row['max_rhat']:>7.3f} {row['min_ess']:>6.0f}")
    print(json.dumps({"gradient": costs, "fits": fits}))


if __name__ == "__main__":
    main()
