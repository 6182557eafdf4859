"""``probrank pool`` end to end on a tiny pool."""

from __future__ import annotations

import json

import pytest

from probrank.cli import main
from probrank.pooling.simulate import resolve_budgets
from tests.pooling.conftest import synthetic_collection


@pytest.fixture
def files(tmp_path):
    qrels, runs = synthetic_collection()
    qrels.write(tmp_path / "qrels")
    paths = []
    for run in runs:
        path = tmp_path / f"{run.name}.run"
        run.write(path)
        paths.append(str(path))
    return tmp_path, str(tmp_path / "qrels"), paths


def test_simulate_writes_its_outputs(files, capsys) -> None:
    tmp, qrels, runs = files
    out = tmp / "out"
    code = main(
        [
            "pool",
            "simulate",
            qrels,
            *runs,
            "--strategy",
            "bayesian",
            "--budget",
            "10%",
            "20",
            "--seed",
            "3",
            "--level",
            "2",
            "--pool-depth",
            "20",
            "-o",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((out / "estimates.json").read_text())
    assert printed == written
    expected = resolve_budgets(["10%", "20"], written["pool_size"])
    assert [b["judgements"] for b in written["budgets"]] == expected
    entry = written["budgets"][0]["runs"]["run0.run"]
    assert set(entry) == {"map", "ndcg_cut_10"}
    assert entry["map"]["lower"] <= entry["map"]["mean"] <= entry["map"]["upper"]
    lines = (out / "judged.qrels").read_text().splitlines()
    assert len(lines) == expected[-1] and all(len(line.split()) == 4 for line in lines)
    assert (out / "simulation.png").read_bytes()[:4] == b"\x89PNG"


def test_next_prints_documents(files, capsys) -> None:
    _tmp, _qrels, runs = files
    code = main(["pool", "next", *runs, "--strategy", "mm-ns", "-k", "3", "--pool-depth", "20"])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(line.split()[1] == "0" for line in lines)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--budget", "999"], "over the pool"),
        (["--budget", "5%", "--strategy", "oracle"], "invalid choice"),
        (["--budget", "lots"], "budget must be"),
    ],
)
def test_bad_input_is_one_line(files, capsys, extra, message) -> None:
    tmp, qrels, runs = files
    code = main(["pool", "simulate", qrels, *runs, "-o", str(tmp / "o"), *extra])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("probrank: error:") and message in err


def test_a_run_that_is_not_a_run_and_empty_qrels(files, capsys) -> None:
    tmp, qrels, runs = files
    assert main(["pool", "simulate", qrels, qrels, "--budget", "5%", "-o", str(tmp / "o")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    empty = tmp / "empty"
    empty.write_text("")
    assert (
        main(["pool", "simulate", str(empty), *runs, "--budget", "5%", "-o", str(tmp / "o")]) == 2
    )
    assert capsys.readouterr().err.count("\n") == 1
