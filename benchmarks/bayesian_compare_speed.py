"""Time the Bayesian comparison of runs (``probrank eval --compare --bayesian``).

Three things are timed on Robust03, one thread:

* the whole command, in a fresh process as a user runs it, best of ``--rounds``: the frequentist
  ``--compare`` and ``--compare --bayesian`` (the default, paired model) for 2 runs (pircRBa1,
  aplrob03a) x nDCG@10 on 50 topics (the first 50 of the qrels), and ``--compare --bayesian``
  for 10 runs x AP, nDCG@10, P@10 on all 100 topics;
* the posterior alone for 2 runs x 1 measure x 50 topics: the paired model's exact draws
  (4 x 500) and, for the hierarchical normal model (the closest model that needs MCMC), NUTS
  three ways: probrank's sampler (Pyro NUTS on the NumPy potential, chains one after
  another), Pyro NUTS on the Pyro model with ``jit_compile=True``, and NumPyro NUTS with
  4 vectorised chains (only with the ``numpyro`` extra; its compilation timed apart). The NUTS
  runs are short (``--nuts-iters`` warm-up and as many draws per chain); the table gives
  seconds per 1,000 iterations of one chain, and the seconds the default 4 x (300 + 500) would
  take;
* ``--no-nuts`` skips the NUTS part (minutes on a loaded 2-core machine).

Prints a table and a JSON line.

    .venv/bin/python benchmarks/bayesian_compare_speed.py [--rounds 3] [--nuts-iters 100]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from probrank.data import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.evaluation import Evaluator
from probrank.evaluation.bayesian_exact import paired_draws
from probrank.evaluation.bayesian_model import ComparisonPriors, comparison_model
from probrank.evaluation.bayesian_potential import ComparisonPotential
from probrank.evaluation.bayesian_sampler import sample_posterior

TWO = ("pircRBa1", "aplrob03a")
TEN = (
    "pircRBa1",
    "aplrob03a",
    "uwmtCR0",
    "VTcdhgp1",
    "THUIRr0301",
    "fub03IeOLKe3",
    "InexpC2",
    "Sel50",
    "UIUC03Rd1",
    "NLPR03vb10",
)
DEFAULT_ITERS = 4 * (300 + 500)
ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _command(args: list[str], rounds: int) -> dict[str, float]:
    """Best wall and CPU (user + system) seconds of ``python -m probrank.cli ARGS`` in a fresh
    process (CPU time: what the command costs on an idle machine, whatever the load)."""
    best = {"wall": float("inf"), "cpu": float("inf")}
    env = {**os.environ, **ENV}
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "probrank.cli", *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        best = {"wall": min(best["wall"], wall), "cpu": min(best["cpu"], cpu)}
    return best


def commands(rounds: int, folder: Path, tmp: Path) -> dict[str, dict[str, float]]:
    qrels = Qrels.read(folder / "qrels.txt")
    first = sorted(qrels.as_dict())[:50]
    small = tmp / "qrels50.txt"
    with open(small, "w") as f:
        for q in first:
            for doc, grade in qrels.as_dict()[q].items():
                f.write(f"{q} 0 {doc} {grade}\n")
    two = [str(folder / "runs" / f"input.{n}.gz") for n in TWO]
    ten = [str(folder / "runs" / f"input.{n}.gz") for n in TEN]
    one = ["-m", "nDCG@10", "--compare"]
    both = ["--compare", "--bayesian"]
    return {
        "2 runs x nDCG@10, 50 topics: --compare": _command(
            ["eval", str(small), *two, *one], rounds
        ),
        "2 runs x nDCG@10, 50 topics: --compare --bayesian": _command(
            ["eval", str(small), *two, *one, "--bayesian"], rounds
        ),
        "10 runs x AP, nDCG@10, P@10, 100 topics: --compare --bayesian": _command(
            ["eval", str(folder / "qrels.txt"), *ten, "-m", "AP", "nDCG@10", "P@10", *both],
            rounds,
        ),
    }


def nuts_costs(values: np.ndarray, iters: int) -> dict[str, dict[str, float]]:
    """Seconds per 1,000 single-chain iterations of NUTS on the normal hierarchical model."""
    out: dict[str, dict[str, float]] = {}
    potential = ComparisonPotential(values, "normal", ComparisonPriors())
    start = time.perf_counter()
    sample_posterior(
        potential, num_chains=1, warmup_steps=iters, num_samples=iters, seed=0, progress=False
    )
    out["probrank NUTS (NumPy potential)"] = {"seconds": time.perf_counter() - start, "chains": 1}
    from pyro.infer import MCMC, NUTS

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = NUTS(
            comparison_model, jit_compile=True, ignore_jit_warnings=True, max_tree_depth=8
        )
        mcmc = MCMC(kernel, num_samples=iters, warmup_steps=iters, disable_progbar=True)
        start = time.perf_counter()
        mcmc.run(torch.from_numpy(values), "normal", ComparisonPriors())
    out["Pyro NUTS, jit_compile=True"] = {"seconds": time.perf_counter() - start, "chains": 1}
    try:
        sys.path.insert(0, str(Path(__file__).parent))
        from bayesian_compare_sim import numpyro_candidates
    except ImportError:
        return out
    fit = numpyro_candidates().get("normal")
    if fit is None:
        return out
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    fit(values[0].T, rng)  # 4 chains x (300 + 500), the first call compiles
    first = time.perf_counter() - start
    start = time.perf_counter()
    fit(values[0].T, rng)
    again = time.perf_counter() - start
    out["NumPyro NUTS, 4 vectorised chains (compiled)"] = {
        "seconds": again,
        "chains": 4,
        "iters": 800,
        "compile_seconds": first - again,
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="command timing rounds (best of)")
    parser.add_argument("--nuts-iters", type=int, default=100, help="NUTS warm-up = draws")
    parser.add_argument("--no-nuts", action="store_true", help="skip the NUTS timings")
    args = parser.parse_args()
    torch.set_num_threads(1)
    folder = shared_data_dir("fusion", "robust03")
    with tempfile.TemporaryDirectory() as tmp:
        wall = commands(args.rounds, folder, Path(tmp))
    evaluator = Evaluator(Qrels.read(folder / "qrels.txt"), ["nDCG@10"])
    tables = [evaluator.per_query(Run.read(folder / "runs" / f"input.{n}.gz")) for n in TWO]
    topics = sorted(tables[0])[:50]
    values = np.array([[[t[q]["nDCG@10"] for q in topics] for t in tables]])  # 1 x 2 x 50
    start = time.perf_counter()
    for _ in range(100):
        paired_draws(values, 2000, np.random.default_rng(0))
    exact_ms = 1000 * (time.perf_counter() - start) / 100
    head = f"whole command (fresh process, best of {args.rounds})"
    print(f"{head:<66} {'wall s':>8} {'CPU s':>8}")
    for label, seconds in wall.items():
        print(f"{label:<66} {seconds['wall']:>8.2f} {seconds['cpu']:>8.2f}")
    base = wall["2 runs x nDCG@10, 50 topics: --compare"]
    bayes = wall["2 runs x nDCG@10, 50 topics: --compare --bayesian"]
    ratio = {key: bayes[key] / base[key] for key in ("wall", "cpu")}
    label = "ratio --bayesian / --compare (2 runs, 50 topics)"
    print(f"{label:<66} {ratio['wall']:>8.2f} {ratio['cpu']:>8.2f}")
    print("\nposterior alone, 2 runs x 1 measure x 50 topics")
    print(f"{'paired model, 2000 exact draws (ms)':<66} {exact_ms:>8.2f}")
    costs: dict[str, dict[str, float]] = {}
    if not args.no_nuts:
        costs = nuts_costs(values, args.nuts_iters)
        print(f"{'NUTS, normal hierarchical model':<50} {'s/1k it':>8} {'4x800 s':>8}")
        for label, row in costs.items():
            iters = row.get("iters", 2 * args.nuts_iters)
            per_k = 1000 * row["seconds"] / (iters * row["chains"])
            row["seconds_per_1000_iterations"] = per_k
            row["default_run_seconds"] = per_k * DEFAULT_ITERS / 1000
            extra = (
                f"  (+{row['compile_seconds']:.1f} s compile)" if "compile_seconds" in row else ""
            )
            print(f"{label:<50} {per_k:>8.2f} {row['default_run_seconds']:>8.1f}{extra}")
    print(
        json.dumps(
            {"commands": wall, "ratio": ratio, "paired_exact_ms": exact_ms, "nuts": costs},
            allow_nan=False,
        )
    )


if __name__ == "__main__":
    main()
