"""The per-seed summaries of the pooling benchmarks: ``benchmarks/pooling_check.py``'s quarters
of the seeds by the relevant documents found among the explored ones and Spearman's
correlation of that share with the MAP error (against scipy), and ``benchmarks/pooling.py
--coverage-from``'s mean, standard error and seeds under half of the per-seed coverage."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[2]


def _load_benchmark(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` as a module (it imports ``benchmarks/pooling.py`` as ``pooling``,
    which is taken out of ``sys.modules`` again unless it was there)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    had_pooling = "pooling" in sys.modules
    try:
        spec = importlib.util.spec_from_file_location(
            f"probrank_benchmark_{name}", ROOT / f"benchmarks/{name}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
        if not had_pooling:
            sys.modules.pop("pooling", None)
    return module


@pytest.fixture(scope="module")
def check_script() -> ModuleType:
    return _load_benchmark("pooling_check")


def _rows(found: list[int], errors: list[float], coverage: list[float]) -> list[dict]:
    return [
        {
            "seed": seed,
            "explored": 100,
            "explored_found": f,
            "explored_expected": 20.0,
            "unjudged_expected": 1000.0 + 10 * f,
            "unjudged_map": 950.0 + 10 * f,
            "unjudged_low": 800.0 + 10 * f,
            "unjudged_high": 1200.0 + 10 * f,
            "unjudged_sd": 120.0,
            "divergences": -1,
            "unjudged_true": 900.0,
            "outside_estimated": 50.0,
            "outside_true": 40.0,
            "map_error": e,
            "coverage": c,
        }
        for seed, (f, e, c) in enumerate(zip(found, errors, coverage, strict=True))
    ]


def test_quarters_and_correlation(check_script: ModuleType, capsys) -> None:
    rng = np.random.default_rng(0)
    found = [2, 9, 4, 7, 3, 8, 5, 6]
    errors = list(-0.01 * np.array(found) + rng.normal(0, 0.004, len(found)))
    coverage = [1.0, 0.1, 0.9, 0.5, 0.8, 0.2, 0.7, 0.6]
    rho = check_script._print_seeds(_rows(found, errors, coverage))
    assert rho == pytest.approx(spearmanr(np.array(found) / 100, errors).statistic)
    assert rho < -0.8
    out = capsys.readouterr().out
    # 25% quantile of the found counts is 3.75: seeds that found 2 and 3 (coverage 1.0, 0.8)
    assert "fewest relevant (2 seeds, 2-3 found): coverage 0.90" in out
    # 75% quantile 7.25: seeds that found 8 and 9 (coverage 0.2, 0.1)
    assert "most relevant (2 seeds, 8-9 found): coverage 0.15" in out
    assert f"map_error: mean {np.mean(errors):+.4f}" in out
    assert (
        len([line for line in out.splitlines() if line.strip().startswith(tuple("01234567"))]) == 8
    )


def test_no_correlation_without_spread(check_script: ModuleType, capsys) -> None:
    assert check_script._print_seeds(_rows([3, 5], [0.01, -0.01], [1.0, 0.5])) is None
    assert check_script._print_seeds(_rows([4, 4, 4], [0.01, 0.0, -0.01], [1.0, 0.5, 0.2])) is None


def test_unjudged_count_check(check_script: ModuleType, capsys) -> None:
    """The seeds whose true unjudged count is outside the draws' 90% interval, counted by side,
    and the spread of the count at the MAP against the draws' sd."""
    draws = np.random.default_rng(1).normal(1000.0, 50.0, 4000)
    row = check_script._count_check(980.0, draws, None)
    assert row["unjudged_low"] == pytest.approx(np.quantile(draws, 0.05))
    assert row["unjudged_high"] == pytest.approx(np.quantile(draws, 0.95))
    assert row["unjudged_sd"] == pytest.approx(np.std(draws, ddof=1))
    assert row["divergences"] == -1
    assert check_script._count_check(980.0, draws, 3)["divergences"] == 3
    rows = _rows([2, 9, 4, 7], [0.0] * 4, [1.0] * 4)
    # intervals [800 + 10 f, 1200 + 10 f] all hold the true 900; move two seeds' truth off,
    # one to either side
    rows[0]["unjudged_true"] = 700.0  # below the interval: the interval lies above the truth
    rows[1]["unjudged_true"] = 1400.0  # above it
    for r, d in zip(rows, [0, 2, -1, 0], strict=True):
        r["divergences"] = d
    check_script._print_counts(rows)
    out = capsys.readouterr().out
    at_map = np.std([950.0 + 10 * f for f in (2, 9, 4, 7)], ddof=1)
    assert (
        "outside the draws' 90% interval in 2 of 4 seeds (1 with the interval above it, 1 below)"
        in out
    )
    assert f"varies over the seeds with sd {at_map:.0f}, the draws' own sd is 120" in out
    assert "2 in all, 1 of 3 chains with any" in out


def test_coverage_summary_of_earlier_runs(capsys) -> None:
    """``benchmarks/pooling.py --coverage-from``: mean, standard error and seeds under half of
    each row's per-seed coverage; rows without intervals are left out."""
    pooling = _load_benchmark("pooling")
    coverage = [1.0, 0.4, 0.9, 0.3]
    rows = [
        {
            "collection": "dl2021",
            "strategy": "bayesian",
            "budget": "2%",
            "tau_map": 0.9,
            "rmse_map": 0.01,
            "per_seed": {"coverage_map": coverage},
        },
        {
            "collection": "dl2021",
            "strategy": "mm-ns",
            "budget": "2%",
            "tau_map": 0.8,
            "rmse_map": 0.1,
            "per_seed": {"coverage_map": [None, None]},
        },
    ]
    pooling.print_coverage(rows)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2  # header and the bayesian row
    se = np.std(coverage, ddof=1) / 2
    assert lines[1].split() == [
        "dl2021", "bayesian", "2%", "4", f"{np.mean(coverage):.2f}", f"{se:.2f}", "2", "0.900",
        "0.0100",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--coverage-from", "missing.json"], "cannot read the rows of missing.json"),
        (["--coverage-from", "bad.json"], "cannot read the rows of bad.json"),
        (["--coverage-from", "norows.json"], "cannot read the rows of norows.json"),
        (["--figure", "f.png", "--figure-from", "bad.json"], "cannot read the rows of bad.json"),
        (["--cell-rank-only"], "--cell-rank-only needs --cell-effects"),
        (["--cell-smooth-scale", "0.3"], "--cell-smooth-scale needs --cell-effects"),
    ],
)
def test_benchmark_bad_input_is_one_line(tmp_path, monkeypatch, capsys, argv, message) -> None:
    """``benchmarks/pooling.py``: unreadable earlier outputs and cell options without
    ``--cell-effects`` end in argparse's usage and one error line, exit 2, before anything runs
    or is written."""
    pooling = _load_benchmark("pooling")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "norows.json").write_text('{"benchmark": "pooling"}')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pooling.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        pooling.main()
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("pooling.py: error:") and message in err[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "norows.json"]
