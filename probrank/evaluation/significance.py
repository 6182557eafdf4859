"""Paired significance tests between runs over per-query values, with multiple-test correction.

The tests are scipy's (``ttest_rel``, ``wilcoxon``, ``permutation_test``). Holm's step-down
correction is four lines written here because scipy ships only Benjamini-Hochberg
(``false_discovery_control``) and statsmodels would be a heavy dependency for it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from probrank._options import parse_enum
from probrank.data.trec import Qrels, Run
from probrank.evaluation.measures import DEFAULT_MEASURES, Evaluator
from probrank.evaluation.significance_kinds import Correction, SignificanceTest
from probrank.exceptions import InputDataError

__all__ = ["Correction", "SignificanceTest", "adjust_pvalues", "compare", "paired_test"]


def paired_test(
    a: np.ndarray,
    b: np.ndarray,
    test: SignificanceTest | str = SignificanceTest.T,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> float:
    """Two-sided p-value of a paired test between per-query values ``a`` and ``b``.

    Args:
        a: `n` values of the baseline.
        b: `n` values of the other system, same queries in the same order.
        test: Which test.
        n_resamples: Sign-flip draws for the randomisation test.
        seed: Seed of the randomisation test.

    Returns:
        The p-value; 1.0 when every difference is zero (no evidence of a difference).
    """
    kind = parse_enum(SignificanceTest, test, "test")
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise InputDataError(
            f"paired values must be two equal 1-D arrays, got {a.shape}, {b.shape}"
        )
    diff = b - a
    if a.size < 2 or np.allclose(diff, 0.0, rtol=0.0, atol=1e-15):
        return 1.0
    if kind is SignificanceTest.T:
        return float(stats.ttest_rel(b, a).pvalue)
    if kind is SignificanceTest.WILCOXON:
        return float(stats.wilcoxon(b, a, zero_method="wilcox").pvalue)
    result = stats.permutation_test(
        (diff,),
        np.mean,
        permutation_type="samples",
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return float(result.pvalue)


def adjust_pvalues(pvalues: Sequence[float], correction: Correction | str) -> np.ndarray:
    """Family-wise adjusted p-values (capped at 1).

    Args:
        pvalues: `m` raw p-values of one family.
        correction: ``none``, ``holm`` or ``bonferroni``.

    Returns:
        `m` adjusted p-values in the input order.
    """
    kind = parse_enum(Correction, correction, "correction")
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    if kind is Correction.NONE or m == 0:
        return p.copy()
    if kind is Correction.BONFERRONI:
        return np.minimum(p * m, 1.0)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def compare(
    qrels: Qrels | str | os.PathLike[str],
    runs: Sequence[Run | str | os.PathLike[str]],
    measures: Sequence[str] | str = DEFAULT_MEASURES[3:],
    *,
    test: SignificanceTest | str = SignificanceTest.T,
    correction: Correction | str = Correction.HOLM,
    alpha: float = 0.05,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Compare runs with the first (the baseline) by paired tests over queries.

    Queries are those every run shares with the qrels (or all qrels queries with
    ``all_queries``). Each measure is one family for the correction.

    Returns:
        One row per (run, measure) other than the baseline: ``run``, ``measure``,
        ``baseline`` (mean), ``mean``, ``delta``, ``p_value``, ``p_adjusted``,
        ``significant`` (``p_adjusted < alpha``), ``num_queries``.
    """
    if len(runs) < 2:
        raise InputDataError("compare needs a baseline run and at least one other run")
    kind = parse_enum(SignificanceTest, test, "test")
    qrels = qrels if isinstance(qrels, Qrels) else Qrels.read(qrels)
    loaded = [r if isinstance(r, Run) else Run.read(r) for r in runs]
    names = [r.name for r in loaded]
    if len(set(names)) != len(names):
        raise InputDataError(f"runs must have distinct names, got {names}")
    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    tables = [evaluator.per_query(run) for run in loaded]
    parsed_names = evaluator.names
    common = [q for q in tables[0] if all(q in t for t in tables[1:])]
    if not common:
        raise InputDataError("the runs share no evaluated query")
    rows = []
    for measure in parsed_names:
        base = np.array([tables[0][q][measure] for q in common])
        family: list[dict[str, object]] = []
        pvalues: list[float] = []
        for run, values in zip(loaded[1:], tables[1:], strict=True):
            other = np.array([values[q][measure] for q in common])
            p = paired_test(base, other, kind, seed=seed)
            pvalues.append(p)
            family.append(
                {
                    "run": run.name,
                    "measure": measure,
                    "baseline": float(base.mean()),
                    "mean": float(other.mean()),
                    "delta": float(other.mean() - base.mean()),
                    "p_value": p,
                    "num_queries": len(common),
                }
            )
        adjusted = adjust_pvalues(pvalues, correction)
        for row, p_adj in zip(family, adjusted, strict=True):
            row["p_adjusted"] = float(p_adj)
            row["significant"] = bool(p_adj < alpha)
        rows.extend(family)
    columns = ["run", "measure", "baseline", "mean", "delta", "p_value", "p_adjusted"]
    return pd.DataFrame(rows, columns=[*columns, "significant", "num_queries"])
