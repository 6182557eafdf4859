"""``probrank pool`` end to end on a tiny pool."""

from __future__ import annotations

import importlib
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
    # the first 5 documents per topic are the warm-up (depth-k order): nothing explored
    # (test_simulate.py checks the entry once documents are)
    assert [b["explored"] for b in written["budgets"]] == [None, None]


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
        (["--budget", "5%", "--strategy", "mm-ns", "--cell-effects"], "of the bayesian strategy"),
        (["--budget", "5%", "--cell-smooth-scale", "0.3"], "needs --cell-effects"),
        (["--budget", "5%", "--cell-rank-only"], "--cell-rank-only needs --cell-effects"),
        (["--budget", "5%", "--strategy", "depth-k", "--posterior", "nuts"], "bayesian strategy"),
        (["--budget", "5%", "--posterior", "exact"], "invalid choice"),
        (["--budget", "5%", "--cell-effects", "--cell-smooth-scale", "-1"], "cell-smooth-scale"),
        (["--budget", "5%", "--strategy", "mtf", "--unpooled-window", "2"], "bayesian strategy"),
        (["--budget", "5%", "--unpooled-window", "0"], "unpooled-window"),
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


def test_cell_effects_reach_the_relevance_model(files, capsys, monkeypatch) -> None:
    """``--cell-effects`` / ``--cell-smooth-scale`` become the bayesian strategy's model
    settings, and the simulation and ``next`` run with them."""
    simulation = importlib.import_module("probrank.pooling.simulate")  # the module
    seen = []
    original = simulation.simulate

    def spy(qrels, runs, strategy, *args, **kwargs):
        seen.append(strategy)
        return original(qrels, runs, strategy, *args, **kwargs)

    monkeypatch.setattr(simulation, "simulate", spy)
    tmp, qrels, runs = files
    argv = ["pool", "simulate", qrels, *runs, "--budget", "20%", "--pool-depth", "20"]
    assert main([*argv, "--cell-effects", "--cell-smooth-scale", "0.3", "-o", str(tmp / "c")]) == 0
    settings = seen[0].model
    assert settings.cell_effects and settings.cell_smooth_scale == 0.3
    assert settings.posterior.value == "laplace" and settings.cell_counts
    estimates = json.loads((tmp / "c" / "estimates.json").read_text())
    entry = estimates["budgets"][0]["runs"]["run0.run"]["map"]
    assert entry["lower"] <= entry["mean"] <= entry["upper"]
    capsys.readouterr()
    code = main(["pool", "next", *runs, "--cell-effects", "-k", "4", "--pool-depth", "20"])
    assert code == 0 and len(capsys.readouterr().out.splitlines()) == 4
    rank_only = ["--cell-effects", "--cell-smooth-scale", "0.3", "--cell-rank-only"]
    assert main([*argv, *rank_only, "-o", str(tmp / "r")]) == 0
    assert seen[-1].model.cell_effects and not seen[-1].model.cell_counts
    assert seen[0].unpooled_window == 1
    assert main([*argv, "--posterior", "nuts", "-o", str(tmp / "n")]) == 0
    assert seen[-1].model.posterior.value == "nuts" and not seen[-1].model.cell_effects
    assert main([*argv, "--unpooled-window", "2", "-o", str(tmp / "w")]) == 0
    assert seen[-1].unpooled_window == 2 and seen[-1].model.posterior.value == "laplace"


def test_next_keeps_predictions_and_check_reads_them(files, capsys) -> None:
    # a judging loop: pool next --predictions F proposes, the qrels answer, the partial qrels
    # grow; the file gains a batch of the documents drawn uniformly at each call that explored,
    # each predicted while still unjudged; pool check counts the relevant found among them
    tmp, qrels_path, runs = files
    from probrank.data.trec import Qrels
    from probrank.pooling.predictions import read_predictions

    truth = Qrels.read(qrels_path).as_dict()
    predictions, partial = tmp / "predictions.jsonl", tmp / "judged.qrels"
    judged: dict[str, dict[str, int]] = {}
    batches = 0
    for _ in range(10):  # 2 per topic per call: 10, 15 and 20 judged are crossed
        args = ["pool", "next", *runs, "-k", "8", "--pool-depth", "20", "--level", "2"]
        args += ["--predictions", str(predictions)]
        if judged:
            Qrels(judged).write(partial)
            args += ["--judged", str(partial)]
        assert main(args) == 0
        chosen = [line.split() for line in capsys.readouterr().out.splitlines()]
        before = read_predictions(predictions)
        new = [p for p in before if p.batch > batches]
        if new:
            batches += 1
            assert {p.batch for p in new} == {batches}
            assert {(p.topic, p.doc) for p in new} <= {(t, d) for t, _, d in chosen}
            assert not any(p.doc in judged.get(p.topic, {}) for p in new)
            assert all(len(p.draws) == len(new[0].draws) > 1 for p in new)
        for topic, _, doc in chosen:
            judged.setdefault(topic, {})[doc] = truth.get(topic, {}).get(doc, 0)
    Qrels(judged).write(partial)
    explored = {(p.topic, p.doc): p for p in read_predictions(predictions)}
    assert batches == 3 and len(explored) == 12
    assert main(["pool", "check", str(predictions), "--judged", str(partial), "--level", "2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"explored documents judged: {len(explored)}; relevant: ")
    assert main(["pool", "check", str(predictions), "--judged", str(partial), "--json"]) == 0
    check = json.loads(capsys.readouterr().out)
    assert check["documents"] == len(explored)
    assert check["found"] == sum(judged[t][d] >= 1 for t, d in explored)
    assert check["expected"] == pytest.approx(sum(p.draws.mean() for p in explored.values()))
    assert check["lower"] <= check["upper"] and 0 < check["p_value"] <= 1
    Qrels({"1": {"nowhere": 1}}).write(partial)  # judges none of them
    assert main(["pool", "check", str(predictions), "--judged", str(partial)]) == 0
    assert capsys.readouterr().out.startswith(f"none of the {len(explored)} explored documents")


def test_bad_predictions_are_one_line_and_left_alone(files, capsys) -> None:
    tmp, qrels, runs = files
    bad = tmp / "bad.jsonl"
    bad.write_text('{"batch": 1, "topic": "1", "doc": "d1", "draws": [1.5]}\n')
    cases = [
        (["pool", "next", *runs, "--pool-depth", "20", "--predictions", str(bad)], "probabilities"),
        (["pool", "next", *runs, "--strategy", "mtf", "--predictions", "p"], "bayesian strategy"),
        (["pool", "check", str(tmp / "missing"), "--judged", qrels], "holds no prediction"),
        (["pool", "check", str(bad), "--judged", qrels], "bad.jsonl:1: draws"),
    ]
    for args, message in cases:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("probrank: error:") and message in err
    assert bad.read_text() == '{"batch": 1, "topic": "1", "doc": "d1", "draws": [1.5]}\n'
