"""The Bayesian comparison's intervals and probabilities against reference methods, on real runs.

Pairs: Robust03 pircRBa1 against aplrob03a, uwmtCR0 and VTcdhgp1 (100 topics), CLEF TAR 2018
BM25 against LR and COMBINE (30 topics, content qrels); measures AP, nDCG@10, P@10. For each
pair and measure:

* 95% intervals of ``mean(B - A)``: the paired t-test's confidence interval (scipy), probrank's
  default posterior (``likelihood="paired"``, 4 x 2,500 exact draws), the Bayesian bootstrap
  (``likelihood="bootstrap"``) and baycomp's correlated t-test (``CorrelatedTTest``, one run:
  its Nadeau-Bengio correction for cross-validation folds inflates the variance by
  ``1 + n / (n - 1)``, which does not apply to independent topics, so it is shown as baycomp
  computes it); the largest distance of an endpoint from the t-test's;
* probabilities with a ROPE of 0.01: probrank's P(B - A < -rope), P(|B - A| < rope),
  P(B - A > rope) against baycomp's Bayesian signed-rank test (Benavoli et al. 2014), which is
  about the pseudo-median of the differences rather than their mean.

With ``--hierarchical``, also the three models (paired, and the hierarchical normal and
truncated normal with NUTS, 4 x (300 + 500)) on CLEF TAR LR against BM25, nDCG@10 and P@10
(about 2 minutes).

    .venv/bin/python benchmarks/bayesian_compare_refs.py [--json out.json] [--hierarchical]

Needs ``baycomp`` (``pip install baycomp``) for its two columns; without it they are null.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings

import numpy as np
from scipy import stats

from probrank.data import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.evaluation import Evaluator
from probrank.evaluation.bayesian import bayesian_compare, bayesian_compare_scores

MEASURES = ("AP", "nDCG@10", "P@10")
ROPE = 0.01
PAIRS = {
    "robust03": (
        "robust03",
        "qrels.txt",
        "input.pircRBa1.gz",
        ("input.aplrob03a.gz", "input.uwmtCR0.gz", "input.VTcdhgp1.gz"),
    ),
    "clef-tar": (
        "clef-tar-2018",
        "qrels.content.txt",
        "ECNU_TASK1_RUN1_BM25.task1.gz",
        ("ECNU_TASK1_RUN2_LR.task1.gz", "ECNU_TASK1_RUN3_COMBINE.task1.gz"),
    ),
}


def _interval(draws: np.ndarray) -> list[float]:
    return [float(v) for v in np.quantile(draws, [0.025, 0.975])]


def compare(a: np.ndarray, b: np.ndarray) -> dict:
    d = b - a
    n = len(d)
    t_ci = stats.ttest_rel(b, a).confidence_interval(0.95)
    row: dict = {"observed": float(d.mean()), "t_test": [float(t_ci.low), float(t_ci.high)]}
    scores = np.stack([a, b])[None]
    for kind in ("paired", "bootstrap"):
        result = bayesian_compare_scores(
            scores, systems=["A", "B"], measures=["m"], likelihood=kind, num_samples=2500
        )
        diff = result.expected("m")[:, 1] - result.expected("m")[:, 0]
        row[kind] = _interval(diff)
        if kind == "paired":
            row["probrank_probs"] = [
                float(np.mean(diff < -ROPE)),
                float(np.mean(np.abs(diff) <= ROPE)),
                float(np.mean(diff > ROPE)),
            ]
    try:
        import baycomp
    except ImportError:
        row["baycomp_ctt"] = row["baycomp_signed_rank"] = None
    else:
        mean, var, df = baycomp.CorrelatedTTest.compute_statistics(a, b, runs=1)
        half = stats.t.ppf(0.975, df) * math.sqrt(var)
        row["baycomp_ctt"] = [float(mean - half), float(mean + half)]
        probs = baycomp.SignedRankTest.probs(a, b, rope=ROPE)
        row["baycomp_signed_rank"] = [float(p) for p in probs]
    for key in ("paired", "bootstrap", "baycomp_ctt"):
        if row.get(key) is not None:
            row[f"{key}_gap"] = float(np.max(np.abs(np.array(row[key]) - row["t_test"])))
    row["n"] = n
    return row


def hierarchical() -> None:
    """The paired model against the NUTS ones on CLEF TAR LR vs BM25 (P@10: many zeros)."""
    folder, qrels, base, others = PAIRS["clef-tar"]
    root = shared_data_dir("fusion", folder)
    runs = [root / "runs" / base, root / "runs" / others[0]]
    for likelihood in ("paired", "normal", "truncated-normal"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the convergence line says it
            result = bayesian_compare(
                root / qrels, runs, ["nDCG@10", "P@10"], likelihood=likelihood
            )
        print(result.describe())
        print(result.table().split("\n\n")[0], flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--hierarchical", action="store_true", help="add the NUTS models")
    args = parser.parse_args()
    rows = []
    for source, (folder, qrels, base, others) in PAIRS.items():
        root = shared_data_dir("fusion", folder)
        evaluator = Evaluator(Qrels.read(root / qrels), list(MEASURES))
        tables = {n: evaluator.per_query(Run.read(root / "runs" / n)) for n in (base, *others)}
        for other in others:
            common = [q for q in tables[base] if q in tables[other]]
            for m in MEASURES:
                a = np.array([tables[base][q][m] for q in common])
                b = np.array([tables[other][q][m] for q in common])
                row = {"pair": f"{source}: {other.split('.')[1 if source == 'robust03' else 0]}"}
                row.update({"measure": m, **compare(a, b)})
                rows.append(row)

    def span(v: list[float] | None) -> str:
        return "-" if v is None else f"[{v[0]:+.4f}, {v[1]:+.4f}]"

    print(
        f"{'B against A':<34} {'measure':<8} {'obs':>7}  {'t-test 95% CI':<19} "
        f"{'paired posterior':<19} {'Bayesian bootstrap':<19} {'baycomp CTT':<19} "
        f"{'gap':>6} {'gapBB':>6} {'gapCTT':>6}"
    )
    for r in rows:
        print(
            f"{r['pair']:<34} {r['measure']:<8} {r['observed']:>+7.4f}  {span(r['t_test']):<19} "
            f"{span(r['paired']):<19} {span(r['bootstrap']):<19} {span(r['baycomp_ctt']):<19} "
            f"{r['paired_gap']:>6.4f} {r['bootstrap_gap']:>6.4f} "
            f"{r.get('baycomp_ctt_gap', math.nan):>6.4f}"
        )
    print(f"\nROPE {ROPE}: P(B-A < -rope), P(|B-A| <= rope), P(B-A > rope)")
    print(
        f"{'B against A':<34} {'measure':<8} {'probrank (paired)':<22} {'baycomp signed-rank':<22}"
    )
    for r in rows:
        ours = "/".join(f"{p:.3f}" for p in r["probrank_probs"])
        sr = r["baycomp_signed_rank"]
        theirs = "-" if sr is None else "/".join(f"{p:.3f}" for p in sr)
        print(f"{r['pair']:<34} {r['measure']:<8} {ours:<22} {theirs:<22}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, allow_nan=False)
    summary = {
        "max_gap_paired": max(r["paired_gap"] for r in rows),
        "max_gap_bootstrap": max(r["bootstrap_gap"] for r in rows),
        "max_gap_baycomp_ctt": max(r.get("baycomp_ctt_gap", 0.0) for r in rows),
    }
    print(json.dumps(summary, allow_nan=False))
    if args.hierarchical:
        print()
        hierarchical()


if __name__ == "__main__":
    main()
