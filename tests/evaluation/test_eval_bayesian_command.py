"""``probrank eval --compare --bayesian``: the JSON beside the frequentist records, the text
report, the plot, and one-line errors for bad option combinations (before any file is read)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from probrank.cli import main

SMALL = ["--chains", "2", "--draws", "60", "--warmup", "60"]


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(11)
    qrels, runs = [], {name: [] for name in ("a.run", "b.run", "c.run")}
    for t in range(12):
        for d in range(10):
            qrels.append(f"q{t} 0 d{d} {int(rng.random() < 0.4)}")
            for shift, name in enumerate(runs):
                score = rng.normal() + (0.8 * shift if d < 4 else 0.0)
                runs[name].append(f"q{t} Q0 d{d} 0 {score:.6f} {name}")
    (tmp_path / "qrels").write_text("\n".join(qrels) + "\n")
    for name, lines in runs.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    return tmp_path


def _eval(files, *options):
    names = [str(files / n) for n in ("qrels", "a.run", "b.run", "c.run")]
    return main(["eval", *names, *options])


def test_json_keeps_the_frequentist_records_beside_the_bayesian_ones(files, capsys):
    measures = ["-m", "AP", "P@5", "NumRet"]
    assert _eval(files, *measures, "--compare", "--json") == 0
    frequentist = json.loads(capsys.readouterr().out)
    plot = files / "posterior.png"
    options = ["--compare", "--bayesian", "--json", "--plot", str(plot), *SMALL]
    assert _eval(files, *measures, *options) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["frequentist"] == frequentist
    assert list(out["bayesian"]) == ["AP", "P@5"]  # NumRet is a count: not modelled
    for measure in ("AP", "P@5"):
        assert list(out["bayesian"][measure]) == ["b.run", "c.run"]
        for entry in out["bayesian"][measure].values():
            assert set(entry) == {"mean_difference", "interval", "p_better", "p_equivalent"}
            low, high = entry["interval"]
            assert low <= entry["mean_difference"] <= high
            assert 0.0 <= entry["p_better"] <= 1.0 and 0.0 <= entry["p_equivalent"] <= 1.0
        ranking = out["bayesian_ranking"][measure]
        assert sum(ranking["p_best"].values()) == pytest.approx(1.0, abs=1e-9)
    assert out["bayesian_model"]["rope"] == pytest.approx(0.01, abs=1e-15)
    assert out["bayesian_model"]["chains"] == 2
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # no progress bar with --json; a failed convergence check is one warning line
    assert all(line.startswith("probrank: warning: ") for line in captured.err.splitlines())


def test_text_report(files, capsys):
    options = ["--compare", "--bayesian", "-m", "AP", "--rope", "0.05", "--seed", "3"]
    assert _eval(files, *options, "--chains", "1", "--draws", "30", "--warmup", "30") == 0
    out = capsys.readouterr().out
    assert "p_adjusted" in out  # the frequentist table first
    assert "Bayesian comparison: paired model, 12 topics" in out
    assert "P(|B-A|<0.05)" in out and "P(row better than column), P(best)" in out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--bayesian"], "--bayesian needs --compare"),
        (["--rope", "0.02"], "--rope: only with --compare --bayesian"),
        (["--compare", "--plot", "x.png"], "--plot: only with --compare --bayesian"),
        (["--compare", "--bayesian", "--rope", "-1"], "argument --rope: must be a finite number"),
        (["--compare", "--bayesian", "--rope", "0"], "argument --rope: must be a finite number"),
        (["--compare", "--bayesian", "--rope", "nan"], "argument --rope: must be a finite"),
        (["--compare", "--bayesian", "--chains", "0"], "argument --chains: must be a positive"),
        (["--compare", "--bayesian", "--plot", "{d}/no/p.png"], "{d}/no"),
    ],
)
def test_bad_options_are_one_line_errors_before_reading(tmp_path, capsys, options, message):
    # the files do not exist: the options must be rejected before they are read
    paths = [str(tmp_path / n) for n in ("no-qrels", "no-a", "no-b")]
    options = [o.replace("{d}", str(tmp_path)) for o in options]
    assert main(["eval", *paths, *options]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("probrank: error: ")
    assert message.replace("{d}", str(tmp_path)) in captured.err


def test_one_run_and_counts_only_are_one_line_errors(files, capsys):
    one = ["eval", str(files / "qrels"), str(files / "a.run"), "--compare", "--bayesian"]
    assert main(one) == 2
    assert "--compare needs a baseline run and at least one other run" in capsys.readouterr().err
    assert _eval(files, "--compare", "--bayesian", "-m", "num_ret", "num_rel") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bayesian models measures in [0, 1]" in err


def test_the_likelihood_option_picks_the_model_and_needs_bayesian(files, capsys):
    # the paired default is the paired t-test's posterior: centred on the observed difference
    assert _eval(files, "-m", "AP", "--compare", "--bayesian", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bayesian_model"]["likelihood"] == "paired"
    assert out["bayesian_model"]["method"] == "exact"
    observed = {r["run"]: r["delta"] for r in out["frequentist"]}
    for run, entry in out["bayesian"]["AP"].items():
        assert entry["mean_difference"] == pytest.approx(observed[run], abs=1e-9)
    options = ["-m", "AP", "--compare", "--bayesian", "--json", "--likelihood", "bootstrap"]
    assert _eval(files, *options) == 0
    assert json.loads(capsys.readouterr().out)["bayesian_model"]["likelihood"] == "bootstrap"
    assert _eval(files, "-m", "AP", "--compare", "--likelihood", "paired") == 2
    err = capsys.readouterr().err.strip()
    assert err == "probrank: error: --likelihood: only with --compare --bayesian"
