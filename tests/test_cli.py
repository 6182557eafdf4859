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


# --- one-line errors, signals, threads and parameters of every command (real processes) ---

QUIET_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}

PATCHED = """
import sys, time
import probrank.cli as cli
def handler(args):
{body}
cli.command_module("demo").run = cli.command_module("eval").run = handler
sys.exit(cli.main(sys.argv[1:]))
"""


def _env(**extra: str) -> dict[str, str]:
    import os

    return {**os.environ, **QUIET_ENV, **extra}


def _probrank(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "probrank.cli", *argv],
        capture_output=True,
        text=True,
        env=env or _env(),
        check=False,
        timeout=300,
    )


EVAL = ("eval", "q", "r")  # a command that loads no torch: the fastest process


def _patched(body: str, *argv: str) -> subprocess.CompletedProcess:
    """``probrank eval q r`` (or ``argv``) in a fresh process whose eval and demo handlers run
    ``body``."""
    script = PATCHED.format(body="\n".join("    " + line for line in body.splitlines()))
    return subprocess.run(
        [sys.executable, "-c", script, *(argv or EVAL)],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
        timeout=300,
    )


def _one_line(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "usage:" not in proc.stderr
    return proc.stderr.strip()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: command"),
        (["bogus"], "argument command: invalid choice: 'bogus'"),
        (["demo", "--bogus"], "unrecognized arguments: --bogus"),
        (["fuse"], "fuse: the following arguments are required: qrels, runs, -o/--output"),
        (["demo", "--seed", "x"], "demo: argument --seed: must be an integer from 0 to"),
        (["interactive", "--posterior", "nope"], "argument --posterior: invalid choice: 'nope'"),
        (["--threads", "0", "demo"], "argument --threads: must be a positive integer, got '0'"),
        (["demo", "--threads", "two"], "demo: argument --threads: must be a positive integer"),
    ],
)
def test_command_line_errors_are_one_line(argv: list[str], message: str) -> None:
    line = _one_line(_probrank(*argv))
    assert line.startswith("probrank: error: ") and message in line, line


def test_console_script_one_line_and_help(tmp_path) -> None:
    from pathlib import Path

    script = Path(sys.executable).with_name("probrank")
    proc = subprocess.run(
        [str(script), "experiment", str(tmp_path / "none.toml")],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    assert _one_line(proc) == f"probrank: error: {tmp_path / 'none.toml'}: no such config file"
    helped = _probrank("demo", "--help")
    assert helped.returncode == 0 and "--threads" in helped.stdout and "--debug" in helped.stdout


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("raise RuntimeError('boom\\n  second line')", "RuntimeError: boom second line"),
        ("import numpy; numpy.linalg.cholesky(-numpy.eye(2))", "LinAlgError: Matrix is not"),
        ("raise MemoryError()", "out of memory (MemoryError)"),
        ("open('/nonexistent/dir/file.txt')", "/nonexistent/dir/file.txt: No such file"),
        ("{}['key']", "KeyError: 'key'"),
        ("raise ValueError()", "ValueError"),
    ],
)
def test_any_error_is_one_line(body: str, expected: str) -> None:
    line = _one_line(_patched(body))
    assert line.startswith(f"probrank: error: {expected}"), line


def test_debug_prints_the_traceback_before_or_after_the_command() -> None:
    for argv in (("--debug", *EVAL), (*EVAL, "--debug")):
        proc = _patched("raise RuntimeError('boom')", *argv)
        assert proc.returncode == 2
        assert "Traceback" in proc.stderr and 'raise RuntimeError("boom")' not in proc.stdout
        assert proc.stderr.strip().splitlines()[-1] == "probrank: error: RuntimeError: boom"


def test_demo_output_is_not_a_folder(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    line = _one_line(_probrank("demo", "--quick", "-o", str(tmp_path / "file")))
    assert line.endswith("file: the report folder exists and is not a folder")


def _interrupted(signal_number: int) -> subprocess.CompletedProcess:
    import signal

    body = "print('ready', flush=True)\ntime.sleep(60)"
    script = PATCHED.format(body="\n".join("    " + line for line in body.splitlines()))
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *EVAL],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.Signals(signal_number))
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_ctrl_c_and_sigterm_end_with_one_line_not_a_signal() -> None:
    import signal

    assert _one_line(_interrupted(signal.SIGINT), 130) == "probrank: interrupted"
    line = _one_line(_interrupted(signal.SIGTERM), 143)
    assert line == "probrank: error: terminated (SIGTERM)"


def test_closed_pipe_ends_quietly() -> None:
    from pathlib import Path

    script = PATCHED.format(body="    for i in range(200000):\n        print('line', i)")
    proc = subprocess.run(
        [
            "bash",
            "-c",
            'python -c "$0" eval q r | head -1; echo "status ${PIPESTATUS[0]}" >&2',
            script,
        ],
        capture_output=True,
        text=True,
        env=_env(PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin"),
        check=False,
    )
    assert proc.stdout == "line 0\n"
    assert proc.stderr == "status 0\n"  # nothing else on stderr, and exit code 0


@pytest.mark.integration
def test_eval_into_head_ends_quietly(shared_data) -> None:
    folder = shared_data / "fusion" / "robust03"
    command = (
        f'"{sys.executable}" -m probrank.cli eval -q "{folder / "qrels.txt"}" '
        f'"{folder / "runs" / "input.pircRBa1.gz"}" | head -1; echo "status ${{PIPESTATUS[0]}}" >&2'
    )
    proc = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=_env(), check=False
    )
    assert proc.stdout.count("\n") == 1 and proc.stderr == "status 0\n"


THREADS_BODY = """import os, torch
env = os.environ
print(env['OMP_NUM_THREADS'], torch.get_num_threads(), env['TOKENIZERS_PARALLELISM'])"""


def test_threads_option_before_or_after_the_command() -> None:
    # demo sizes torch's pools itself; eval only sets the environment, before torch loads
    for argv in (("--threads", "1", "demo"), ("demo", "--threads", "1"), ("--threads", "1", *EVAL)):
        assert _patched(THREADS_BODY, *argv).stdout.split() == ["1", "1", "false"], argv


def test_default_threads_are_the_usable_cpus() -> None:
    import os

    from probrank._threads import usable_cpus

    before = os.environ.get("OMP_NUM_THREADS")
    env = {k: v for k, v in _env().items() if k not in ("OMP_NUM_THREADS", "PROBRANK_THREADS")}
    script = PATCHED.format(body="    " + THREADS_BODY.replace("\n", "\n    "))
    proc = subprocess.run(
        [sys.executable, "-c", script, "demo"], capture_output=True, text=True, env=env, check=True
    )
    count = str(usable_cpus())
    assert proc.stdout.split() == [count, count, "false"]
    assert os.environ.get("OMP_NUM_THREADS") == before  # this process is left alone


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--seed", "-1"], "argument --seed: must be an integer from 0 to 4294967295"),
        (["demo", "--seed", "4294967296"], "argument --seed: must be an integer from 0"),
        (["demo", "--sections", "plots"], "argument --sections: invalid choice: 'plots'"),
        (["experiment", "c.toml", "--seeds", "0"], "argument --seeds: must be a positive"),
        (["experiment", "c.toml", "--seeds", "-2"], "argument --seeds: must be a positive"),
        (["fuse", "q", "r", "-o", "o", "--depth", "0"], "argument --depth: must be a positive"),
        (["fuse", "q", "r", "-o", "o", "--top-runs", "0"], "--top-runs: must be a positive"),
        (["fuse", "q", "r", "-o", "o", "--folds", "2"], "--folds: must be an integer >= 3"),
        (["fuse", "q", "r", "-o", "o", "--seed", "-5"], "--seed: must be an integer from 0"),
        (["interactive", "--max-questions", "0"], "--max-questions: must be a positive"),
        (["interactive", "--max-questions", "-1"], "--max-questions: must be a positive"),
        (["interactive", "--rounds", "0"], "--rounds: must be a positive integer, got '0'"),
        (["interactive", "--rounds", "-3"], "--rounds: must be a positive integer"),
        (["interactive", "--seeds", "0"], "--seeds: must be a positive integer"),
        (["interactive", "--seed", "-1"], "--seed: must be an integer from 0"),
        (["interactive", "--noise", "0"], "--noise: must be a finite number > 0, got '0'"),
        (["interactive", "--noise", "-0.3"], "--noise: must be a finite number > 0"),
        (["interactive", "--noise", "nan"], "--noise: must be a finite number > 0, got 'nan'"),
        (["interactive", "--noise", "inf"], "--noise: must be a finite number > 0, got 'inf'"),
        (["interactive", "--noise", "٣"], "--noise: must be a finite number > 0"),
        (["interactive", "--rounds", "３"], "--rounds: must be a positive integer"),
        (["--threads", "1.5", "demo"], "--threads: must be a positive integer, got '1.5'"),
    ],
)
def test_bad_parameters_are_one_line_exit_2(capsys, argv: list[str], message: str) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and message in captured.err, captured.err
    assert captured.out == ""


def test_fuse_more_folds_than_topics(files, capsys) -> None:
    argv = [str(files / "qrels"), str(files / "a.run"), "-o", str(files / "f.run")]
    code = main(["fuse", *argv, "--method", "qlfusion", "--folds", "5"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2 topics cannot fill 5 folds" in err
    assert not (files / "f.run").exists()


def test_demo_sections_match_and_run_alone(tmp_path, capsys) -> None:
    from probrank.demo.context import DemoSection
    from probrank.demo.sections import SECTIONS

    assert list(SECTIONS) == list(DemoSection)  # every section has a function, in order
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "-o", str(out), "--sections", "evaluation"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert set(results) == {"evaluation", "seconds"}
    assert sorted(p.name for p in out.glob("*.png")) == ["evaluation.png"]


def test_a_broken_data_file_through_the_cli(tmp_path) -> None:
    folder = tmp_path / "qa" / "mediqa2019-task3"
    folder.mkdir(parents=True)
    (folder / "validation.xml").write_bytes(b"")
    argv = ("interactive", "--data", "mediqa", "--split", "validation")
    proc = _probrank(*argv, env=_env(PROBRANK_DATA=str(tmp_path)))
    assert _one_line(proc) == f"probrank: error: {folder / 'validation.xml'}: empty file"


def test_a_config_typo_through_the_cli(tmp_path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[experiment]\nprotocol = "interactive"\n\n[laplace]\nscael = 1.0\n')
    line = _one_line(_probrank("experiment", str(config), "--smoke"))
    assert line.startswith(f"probrank: error: {config}:5: laplace.scael: unknown key ([laplace]")
    line = _one_line(_probrank("interactive", "--data", "synthetic", "--config", str(config)))
    assert line.startswith(f"probrank: error: {config}:5: laplace.scael: unknown key")
