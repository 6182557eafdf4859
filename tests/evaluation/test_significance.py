"""Paired tests and multiple-test corrections."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from probrank.evaluation import compare, paired_test
from probrank.evaluation.significance import adjust_pvalues
from probrank.exceptions import InputDataError


def test_t_test_matches_closed_form():
    rng = np.random.default_rng(0)
    a = rng.normal(size=30)
    b = a + 0.3 + rng.normal(scale=0.5, size=30)
    d = b - a
    t = d.mean() / (d.std(ddof=1) / np.sqrt(d.size))
    want = 2 * stats.t.sf(abs(t), df=d.size - 1)
    assert paired_test(a, b, "t") == pytest.approx(want, rel=1e-10)


def test_randomization_agrees_with_t_on_normal_differences():
    rng = np.random.default_rng(1)
    a = rng.normal(size=40)
    b = a + 0.25 + rng.normal(scale=0.6, size=40)
    p_t = paired_test(a, b, "t")
    p_r = paired_test(a, b, "randomization", seed=3)
    assert abs(p_t - p_r) < 0.02
    assert paired_test(a, b, "randomization", seed=3) == p_r  # seeded


def test_wilcoxon_and_identical_systems():
    rng = np.random.default_rng(2)
    a = rng.uniform(size=25)
    b = a + rng.normal(0.1, 0.05, size=25)
    assert paired_test(a, b, "wilcoxon") == pytest.approx(stats.wilcoxon(b, a).pvalue)
    for kind in ("t", "wilcoxon", "randomization"):
        assert paired_test(a, a.copy(), kind) == 1.0
    with pytest.raises(InputDataError, match="test must be one of"):
        paired_test(a, b, "anova")


def test_holm_and_bonferroni_by_hand():
    p = [0.01, 0.04, 0.03, 0.5]
    np.testing.assert_allclose(adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 1.0])
    # Holm: sorted 0.01*4=0.04, 0.03*3=0.09, 0.04*2=0.08->max 0.09, 0.5*1=0.5
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), [0.04, 0.09, 0.09, 0.5])
    np.testing.assert_allclose(adjust_pvalues(p, "none"), p)


@pytest.mark.integration
def test_compare_table_on_robust03(shared_data):
    runs = shared_data / "fusion" / "robust03" / "runs"
    table = compare(
        shared_data / "fusion" / "robust03" / "qrels.txt",
        [runs / "input.pircRBa1.gz", runs / "input.aplrob03a.gz", runs / "input.uwmtCR0.gz"],
        ["AP", "P@10"],
        test="t",
        correction="holm",
    )
    assert list(table["run"]) == ["input.aplrob03a", "input.uwmtCR0"] * 2
    ap = table[table.measure == "AP"].iloc[0]
    assert ap.baseline == pytest.approx(0.3101, abs=5e-5)
    assert ap.delta == pytest.approx(0.2998 - 0.3101, abs=1e-4)
    assert (table.p_adjusted >= table.p_value).all()
    assert table.num_queries.iloc[0] == 100
    with pytest.raises(InputDataError, match="baseline"):
        compare(shared_data / "fusion" / "robust03" / "qrels.txt", [runs / "input.pircRBa1.gz"])
