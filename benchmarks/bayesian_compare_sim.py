"""Choose the Bayesian comparison's likelihood by simulation from real per-topic values.

Populations of topics come from real runs: Robust03 (pircRBa1 vs aplrob03a, 100 topics; AP,
nDCG@10, RR, which is 1 on 57-60% of topics) and CLEF TAR 2018 (BM25 vs LR, 30 topics; AP
and P@10, which is 0 on 16-21 topics). A known mean difference ``delta`` (0, 0.01, 0.03, 0.1)
is injected by shifting run B's per-topic values and clipping them to [0, 1]
(``b' = clip(b + c, 0, 1)``, ``c`` solved so that the population mean of ``b' - a`` is exactly
``delta``; clipping adds values at 0 and 1), plus two cells of identical runs (B = A). Each
replication draws ``T`` topics with replacement (50 for Robust03, 30 for CLEF), fits every
candidate to the two runs' values and records:

* coverage: how often the 95% equal-tailed interval of ``mu_B - mu_A`` holds ``delta``, with its
  Monte Carlo standard error ``sqrt(c (1 - c) / reps)``;
* bias: mean of (posterior mean - ``delta``), with its MCSE;
* calibration: the KS p-value of the uniformity of ``PIT = P(mu_B - mu_A < delta | data)``
  (a calibrated P(B > A) gives uniform PITs; not defined for identical runs);
* convergence (NUTS candidates): fits with divergences, largest R-hat, fits failing
  R-hat <= 1.01 / bulk and tail ESS >= 400 / no divergences.

Candidates: ``paired`` (multivariate normal, reference prior: exact multivariate t, probrank's
default), ``bootstrap`` (Bayesian bootstrap), ``t-diff`` (Student-t, 4 degrees of freedom, on
the per-topic differences, flat prior on the location and log scale, exact on a grid), and,
with NUTS in NumPyro (vectorised chains, 4 x (300 + 500), the priors of
:class:`probrank.evaluation.bayesian_model.ComparisonPriors`): ``normal`` and
``truncated-normal`` (probrank's hierarchical model: topic effects, one noise scale),
``tn-per-run`` (truncated normal, one noise scale per run), ``student-t`` (hierarchical, degrees
of freedom ~ Gamma(2, 0.1)) and ``zoib`` (zero-one-inflated beta on the logit scale, per-run
inflation). NUTS fits are slow on a loaded 2-core machine, so they get fewer replications
(``--nuts-reps``); the MCSE column says what that buys.

    .venv/bin/python benchmarks/bayesian_compare_sim.py [--reps 1000] [--json out.json]
        [--nuts normal,truncated-normal,... --nuts-reps 2 --nuts-cells "robust03 AP identical"]

The exact candidates with 1,000 replications per cell take about 2 minutes on 2 cores.

Needs the ``numpyro`` extra for the NUTS candidates (without it they are skipped).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from probrank.data import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.evaluation import Evaluator
from probrank.evaluation.bayesian_exact import bootstrap_draws, paired_draws
from probrank.evaluation.bayesian_sampler import check_draws

DELTAS = (0.0, 0.01, 0.03, 0.1)
NUM_DRAWS = 4000
SOURCES = {
    # name: (folder, qrels, run A, run B, measures, topics per replication)
    "robust03": (
        "robust03",
        "qrels.txt",
        "input.pircRBa1.gz",
        "input.aplrob03a.gz",
        ("AP", "nDCG@10", "RR"),
        50,
    ),
    "clef-tar": (
        "clef-tar-2018",
        "qrels.content.txt",
        "ECNU_TASK1_RUN1_BM25.task1.gz",
        "ECNU_TASK1_RUN2_LR.task1.gz",
        ("AP", "P@10"),
        30,
    ),
}
IDENTICAL = (("robust03", "AP"), ("clef-tar", "P@10"))


@dataclass
class Cell:
    """One simulated case: a population of topic pairs ``(a_t, b_t)`` and its true difference."""

    source: str
    measure: str
    delta: float
    identical: bool
    a: np.ndarray
    b: np.ndarray
    topics: int

    @property
    def name(self) -> str:
        what = "identical" if self.identical else f"delta={self.delta:g}"
        return f"{self.source} {self.measure} {what}"


def per_topic(source: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{measure: (a, b)}`` per-topic values of the source's two runs."""
    folder, qrels, run_a, run_b, measures, _ = SOURCES[source]
    root = shared_data_dir("fusion", folder)
    evaluator = Evaluator(Qrels.read(root / qrels), list(measures))
    tables = [evaluator.per_query(Run.read(root / "runs" / name)) for name in (run_a, run_b)]
    common = [q for q in tables[0] if q in tables[1]]
    return {
        m: (
            np.array([tables[0][q][m] for q in common]),
            np.array([tables[1][q][m] for q in common]),
        )
        for m in measures
    }


def inject(a: np.ndarray, b: np.ndarray, delta: float) -> np.ndarray:
    """``clip(b + c, 0, 1)`` with ``c`` such that ``mean(b' - a) = delta`` (bisection)."""
    low, high = -1.0, 1.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        if np.mean(np.clip(b + mid, 0.0, 1.0) - a) < delta:
            low = mid
        else:
            high = mid
    return np.clip(b + 0.5 * (low + high), 0.0, 1.0)


def cells() -> list[Cell]:
    out = []
    for source, spec in SOURCES.items():
        values = per_topic(source)
        for measure, (a, b) in values.items():
            for delta in DELTAS:
                out.append(Cell(source, measure, delta, False, a, inject(a, b, delta), spec[5]))
        for src, measure in IDENTICAL:
            if src == source:
                a = values[measure][0]
                out.append(Cell(source, measure, 0.0, True, a, a.copy(), spec[5]))
    return out


# -- candidates: values `T x 2` -> draws of mu_B - mu_A (and convergence for NUTS) -----------


def _exact(sampler: Callable[..., np.ndarray]) -> Callable[..., tuple[np.ndarray, dict]]:
    def fit(values: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        draws = sampler(values.T[None], NUM_DRAWS, rng)[:, 0, :]
        return draws[:, 1] - draws[:, 0], {}

    return fit


def t_diff(
    values: np.ndarray, rng: np.random.Generator, nu: float = 4.0
) -> tuple[np.ndarray, dict]:
    """Student-t (``nu`` fixed) on the differences, p(mu, log sigma) flat, on a grid."""
    d = values[:, 1] - values[:, 0]
    n = len(d)
    spread = max(float(np.std(d, ddof=1)), 1e-6)
    centre = float(np.median(d))
    half = 8 * spread / math.sqrt(n) + abs(float(np.mean(d)) - centre)
    mu = np.linspace(centre - half, centre + half, 121)
    log_s = np.linspace(math.log(spread) - 4, math.log(spread) + 1.5, 45)
    s = np.exp(log_s)
    z = (d[None, None, :] - mu[:, None, None]) / s[None, :, None]
    # the t density up to a constant: -(nu + 1) / 2 log(1 + z^2 / nu)
    loglik = -0.5 * (nu + 1) * np.log1p(z * z / nu).sum(-1) - n * log_s[None, :]
    post = np.exp(loglik - loglik.max())
    marginal = post.sum(1)
    marginal /= marginal.sum()
    step = mu[1] - mu[0]
    pick = rng.choice(len(mu), size=NUM_DRAWS, p=marginal)
    return mu[pick] + rng.uniform(-step / 2, step / 2, size=NUM_DRAWS), {}


EXACT: dict[str, Callable[..., tuple[np.ndarray, dict]]] = {
    "paired": _exact(paired_draws),
    "bootstrap": _exact(bootstrap_draws),
    "t-diff": t_diff,
}
EXACT_REPS = {"t-diff": 0.2}
"""Share of ``--reps`` for exact candidates that cost more than a millisecond per fit."""


def numpyro_candidates() -> dict[str, Callable[..., tuple[np.ndarray, dict]]]:
    """The hierarchical candidates, NUTS in NumPyro (``{}`` without the ``numpyro`` extra)."""
    try:
        import jax
        import jax.numpy as jnp
        import numpyro
        import numpyro.distributions as dist
        from numpyro.infer import MCMC, NUTS
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)
    numpyro.set_host_device_count(1)

    def model(y: jnp.ndarray, kind: str) -> None:
        """probrank's hierarchical comparison model (``y``: `S x T`), one likelihood."""
        num_systems, num_topics = y.shape
        basis = jnp.linalg.qr(jnp.eye(num_systems) - 1.0 / num_systems)[0][:, : num_systems - 1]
        level = numpyro.sample("level", dist.Normal(0.5, 0.5))
        topic_scale = numpyro.sample("topic_scale", dist.HalfNormal(0.5))
        per_run = kind in ("tn-per-run", "zoib")
        noise = numpyro.sample(
            "noise", dist.InverseGamma(2.0, 0.1).expand([num_systems if per_run else 1])
        )
        z = numpyro.sample("z", dist.Normal(0.0, 0.25).expand([num_systems - 1]))
        topic = numpyro.sample("topic", dist.Normal(level, topic_scale).expand([num_topics]))
        loc = (basis @ z)[:, None] + topic[None, :]
        scale = noise[:, None]
        if kind == "normal":
            numpyro.sample("y", dist.Normal(loc, scale), obs=y)
            expected = loc
        elif kind == "student-t":
            nu = numpyro.sample("nu", dist.Gamma(2.0, 0.1))
            numpyro.sample("y", dist.StudentT(nu + 1.0, loc, scale), obs=y)
            expected = loc
        elif kind == "zoib":  # loc on the logit scale; noise is 1 / precision
            logits = numpyro.sample("inflation", dist.Normal(-2.0, 1.5).expand([num_systems, 2]))
            probs = jax.nn.softmax(jnp.concatenate([logits, jnp.zeros((num_systems, 1))], 1))
            m = jax.nn.sigmoid(loc)
            phi = 1.0 / scale
            inner = jnp.clip(y, 1e-6, 1 - 1e-6)
            beta = dist.Beta(m * phi + 1e-9, (1 - m) * phi + 1e-9).log_prob(inner)
            logp = jnp.where(
                y <= 0.0,
                jnp.log(probs[:, :1]),
                jnp.where(y >= 1.0, jnp.log(probs[:, 1:2]), jnp.log(probs[:, 2:]) + beta),
            )
            numpyro.factor("y", logp.sum())
            expected = probs[:, 1:2] + probs[:, 2:] * m
        else:  # truncated normal on [0, 1], one or per-run noise scales
            base = dist.TruncatedNormal(loc, scale, low=0.0, high=1.0)
            numpyro.sample("y", base, obs=y)
            expected = base.mean
        numpyro.deterministic("expected", expected.mean(-1))

    kernels: dict[str, MCMC] = {}

    def make(kind: str) -> Callable[..., tuple[np.ndarray, dict]]:
        def fit(values: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
            if kind not in kernels:
                kernels[kind] = MCMC(
                    NUTS(lambda y: model(y, kind), max_tree_depth=8),
                    num_warmup=300,
                    num_samples=500,
                    num_chains=4,
                    chain_method="vectorized",
                    progress_bar=False,
                    jit_model_args=True,
                )
            mcmc = kernels[kind]
            key = jax.random.PRNGKey(int(rng.integers(2**31)))
            mcmc.run(key, jnp.asarray(values.T), extra_fields=("diverging",))
            expected = np.asarray(mcmc.get_samples(group_by_chain=True)["expected"])
            divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
            check = check_draws({"expected": expected}, divergences)
            diff = (expected[..., 1] - expected[..., 0]).reshape(-1)
            return diff, {
                "divergences": divergences,
                "rhat": check.max_rhat,
                "converged": check.converged,
            }

        return fit

    kinds = ("normal", "truncated-normal", "tn-per-run", "student-t", "zoib")
    return {kind: make(kind) for kind in kinds}


# -- the simulation -----------------------------------------------------------------------


@dataclass
class Record:
    covered: list[bool] = field(default_factory=list)
    errors: list[float] = field(default_factory=list)
    pit: list[float] = field(default_factory=list)
    divergent_fits: int = 0
    unconverged: int = 0
    max_rhat: float = float("nan")
    seconds: float = 0.0

    def add(self, diff: np.ndarray, delta: float, info: dict) -> None:
        low, high = np.quantile(diff, [0.025, 0.975])
        self.covered.append(bool(low <= delta <= high))
        self.errors.append(float(diff.mean() - delta))
        self.pit.append(float(np.mean(diff < delta) + 0.5 * np.mean(diff == delta)))
        if info:
            self.divergent_fits += int(info["divergences"] > 0)
            self.unconverged += int(not info["converged"])
            if np.isfinite(info["rhat"]):
                self.max_rhat = float(np.nanmax([self.max_rhat, info["rhat"]]))

    def summary(self, identical: bool, nuts: bool) -> dict:
        reps = len(self.covered)
        cover = float(np.mean(self.covered))
        errors = np.array(self.errors)
        out = {
            "reps": reps,
            "coverage": cover,
            "coverage_mcse": math.sqrt(max(cover * (1 - cover), 1e-12) / reps),
            "bias": float(errors.mean()),
            "bias_mcse": float(errors.std(ddof=1) / math.sqrt(reps)) if reps > 1 else None,
            "pit_ks_p": None if identical else float(stats.kstest(self.pit, "uniform").pvalue),
            "seconds_per_fit": self.seconds / max(reps, 1),
        }
        if nuts:
            out["divergent_fits"] = self.divergent_fits
            out["unconverged_fits"] = self.unconverged
            out["max_rhat"] = None if math.isnan(self.max_rhat) else self.max_rhat
        return out


def run(
    reps: int, nuts_reps: int, exact: list[str], nuts: list[str], nuts_cells: list[str], seed: int
) -> list[dict]:
    candidates = {k: EXACT[k] for k in exact}
    available = numpyro_candidates()
    missing = [k for k in nuts if k not in available]
    if missing:
        print(f"skipped (numpyro not installed or unknown): {missing}")
    candidates.update({k: available[k] for k in nuts if k in available})
    rows = []
    for c_index, cell in enumerate(cells()):
        for name, fit in candidates.items():
            is_nuts = name not in EXACT
            if is_nuts and nuts_cells and cell.name not in nuts_cells:
                continue
            count = nuts_reps if is_nuts else max(int(reps * EXACT_REPS.get(name, 1.0)), 2)
            record = Record()
            topics = np.random.default_rng([seed, c_index])  # the same samples per candidate
            rng = np.random.default_rng([seed, c_index, 1])
            for _ in range(count):
                pick = topics.integers(len(cell.a), size=cell.topics)
                values = np.stack([cell.a[pick], cell.b[pick]], axis=1)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    diff, info = fit(values, rng)
                record.seconds += time.perf_counter() - start
                record.add(diff, cell.delta, info)
            row = {"cell": cell.name, "likelihood": name}
            row.update(record.summary(cell.identical, is_nuts))
            rows.append(row)
            print(_line(row), flush=True)
    return rows


def _fmt(value: object, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _line(row: dict) -> str:
    return (
        f"{row['cell']:<30} {row['likelihood']:<17} {row['reps']:>5} "
        f"{100 * row['coverage']:>6.1f} ±{100 * row['coverage_mcse']:>4.1f} "
        f"{row['bias']:>+8.4f} ±{_fmt(row['bias_mcse'], '.4f'):>6} "
        f"{_fmt(row['pit_ks_p'], '.3f'):>6} {_fmt(row.get('divergent_fits'), 'd'):>5} "
        f"{_fmt(row.get('max_rhat'), '.3f'):>6} {_fmt(row.get('unconverged_fits'), 'd'):>5} "
        f"{row['seconds_per_fit']:>7.3f}"
    )


MIN_REPS = 100
"""Fewer replications per cell than this decide nothing but divergences."""


_PASS = {True: "yes", False: "no", None: f"open (< {MIN_REPS} reps)"}


def verdict(rows: list[dict]) -> list[dict]:
    """Per likelihood: worst coverage, worst |bias|, and whether 93-97% / |bias| < 0.005 held
    on every cell (identical cells included) and no fit diverged; ``None`` where fewer than
    :data:`MIN_REPS` replications and no divergence leave it open."""
    out = []
    for name in dict.fromkeys(r["likelihood"] for r in rows):
        mine = [r for r in rows if r["likelihood"] == name]
        cover = [r["coverage"] for r in mine if "identical" not in r["cell"]]
        bias = max(abs(r["bias"]) for r in mine)
        passed = all(0.93 <= c <= 0.97 for c in cover) and bias < 0.005
        passed = passed and all(r["coverage"] >= 0.93 for r in mine)
        diverged = any(r.get("divergent_fits") for r in mine)
        passed = passed and not diverged
        if min(r["reps"] for r in mine) < MIN_REPS and not diverged:
            passed = None  # too few replications to tell
        out.append(
            {
                "likelihood": name,
                "min_coverage": min(cover),
                "max_coverage": max(cover),
                "max_abs_bias": bias,
                "divergent_fits": sum(r.get("divergent_fits", 0) for r in mine),
                "passes": passed,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="replications, exact candidates")
    parser.add_argument("--nuts-reps", type=int, default=2, help="replications, NUTS ones")
    parser.add_argument(
        "--nuts",
        default="",
        help="NUTS candidates, comma-separated (normal, truncated-normal, tn-per-run, "
        "student-t, zoib); none by default: minutes per fit on 2 cores",
    )
    parser.add_argument("--exact", default="paired,bootstrap,t-diff", help="exact candidates")
    parser.add_argument(
        "--nuts-cells",
        default="robust03 RR delta=0.1,robust03 AP identical",
        help="cells the NUTS candidates run on (comma-separated names; empty for all)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the rows and the verdict here")
    args = parser.parse_args()
    start = time.perf_counter()
    print(
        f"{'cell':<30} {'likelihood':<17} {'reps':>5} {'cover%':>6} {'mcse':>5} "
        f"{'bias':>8} {'mcse':>7} {'PIT p':>6} {'div':>5} {'R-hat':>6} {'!conv':>5} {'s/fit':>7}"
    )
    nuts = [k for k in args.nuts.split(",") if k]
    exact = [k for k in args.exact.split(",") if k]
    cells_nuts = [k for k in args.nuts_cells.split(",") if k]
    rows = run(args.reps, args.nuts_reps, exact, nuts, cells_nuts, args.seed)
    summary = verdict(rows)
    print()
    print(f"{'likelihood':<17} {'coverage range':>16} {'max |bias|':>10} {'div. fits':>9}  passes")
    for v in summary:
        span = f"{100 * v['min_coverage']:.1f}-{100 * v['max_coverage']:.1f}%"
        print(
            f"{v['likelihood']:<17} {span:>16} {v['max_abs_bias']:>10.4f} "
            f"{v['divergent_fits']:>9d}  {_PASS[v['passes']]}"
        )
    wall = time.perf_counter() - start
    print(f"\nwall {wall:.0f} s")
    output = {"rows": rows, "verdict": summary, "wall_seconds": wall, "seed": args.seed}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(output, f, indent=1, allow_nan=False)
    print(json.dumps({"verdict": summary, "wall_seconds": round(wall, 1)}, allow_nan=False))


if __name__ == "__main__":
    main()
