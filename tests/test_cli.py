"""The ``probrank`` command: output formats, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from probrank.cli import main
from tests.data.test_trec import MALFORMED_QRELS, MALFORMED_RUNS

GOOD_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n"
GOOD_RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d4 1 1.0 t\nq2 Q0 d3 2 0.5 t\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels").write_text(GOOD_QRELS)
    (tmp_path / "a.run").write_text(GOOD_RUN)
    return tmp_path


def test_json_output(files, capsys):
    assert (
        main(["eval", str(files / "qrels"), str(files / "a.run"), "-m", "AP", "P@1", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out == {"a.run": {"AP": pytest.approx(0.75), "P@1": pytest.approx(0.5)}}


def test_trec_eval_like_table_with_per_query(files, capsys):
    assert (
        main(["eval", str(files / "qrels"), str(files / "a.run"), "-m", "NumRet", "RR", "-q"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == ["runid                 ", "all", "t"]
    assert [line.split("\t")[1:] for line in lines[1:]] == [
        ["q1", "2"],
        ["q1", "1.0000"],
        ["q2", "2"],
        ["q2", "0.5000"],
        ["all", "4"],
        ["all", "0.7500"],
    ]


def test_compare_mode(files, capsys):
    (files / "b.run").write_text(GOOD_RUN.replace("2.0", "0.1"))
    code = main(
        [
            "eval",
            str(files / "qrels"),
            str(files / "a.run"),
            str(files / "b.run"),
            "-m",
            "AP",
            "--compare",
            "--json",
        ]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["run"] == "b.run" and rows[0]["measure"] == "AP"


@pytest.mark.parametrize(
    ("kind", "content", "message"), MALFORMED_RUNS, ids=[m[0] for m in MALFORMED_RUNS]
)
def test_malformed_run_one_line_exit_2(files, capsys, kind, content, message):
    bad = files / "bad.run"
    bad.write_bytes(content.encode() if isinstance(content, str) else content)
    assert main(["eval", str(files / "qrels"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("probrank: error: ")


@pytest.mark.parametrize(
    ("kind", "content", "message"), MALFORMED_QRELS, ids=[m[0] for m in MALFORMED_QRELS]
)
def test_malformed_qrels_one_line_exit_2(files, capsys, kind, content, message):
    bad = files / "bad.qrels"
    bad.write_bytes(content.encode() if isinstance(content, str) else content)
    assert main(["eval", str(bad), str(files / "a.run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-m", "NoSuchMeasure"], "unknown measure"),
        (["-M", "0"], "depth"),
    ],
)
def test_bad_options_exit_2(files, capsys, argv, message):
    assert main(["eval", str(files / "qrels"), str(files / "a.run"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_disjoint_queries_exit_2(files, capsys):
    (files / "other.qrels").write_text("zz 0 d1 1\n")
    assert main(["eval", str(files / "other.qrels"), str(files / "a.run")]) == 2
    assert "share no query" in capsys.readouterr().err


def test_console_script_has_no_traceback(files):
    bad = files / "bad.run"
    bad.write_text("q1 Q0 d1 1 nan t\n")
    proc = subprocess.run(
        [sys.executable, "-m", "probrank.cli", "eval", str(files / "qrels"), str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.integration
def test_robust03_json_figures(shared_data, capsys):
    folder = shared_data / "fusion" / "robust03"
    argv = ["eval", str(folder / "qrels.txt"), str(folder / "runs" / "input.pircRBa1.gz")]
    assert main([*argv, "-m", "AP", "P@10", "nDCG@10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["input.pircRBa1"]
    assert {k: round(v, 4) for k, v in out.items()} == {
        "AP": 0.3101,
        "P@10": 0.454,
        "nDCG@10": 0.4572,
    }


def test_demo_writes_report(tmp_path, capsys):
    assert main(["demo", "-o", str(tmp_path / "demo"), "--quick"]) == 0
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "## Evaluation" in report and "synth1" in report
    results = json.loads((tmp_path / "demo" / "results.json").read_text())
    ap = {name: row["AP"] for name, row in results["evaluation"].items()}
    assert ap["synth1"] > ap["synth4"]  # generated run quality shows in AP
    for section in ("fusion", "calibration", "multitask", "interactive"):
        assert section in results and "![" in report
    for figure in (
        "evaluation.png",
        "qlfusion.png",
        "gpf_reliability.png",
        "multitask.png",
        "interactive_accuracy.png",
    ):
        png = tmp_path / "demo" / figure
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", figure
        assert f"({figure})" in report  # linked from the report
    assert "Report written to" in capsys.readouterr().out
