"""``probrank eval``: trec_eval's output format, ``-m`` given either way, one-line errors for
every bad parameter before anything is read, and no heavy import on the way."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from probrank.cli import main
from probrank.evaluation.trec_eval.reference import run_reference

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq2 0 d5 1\n"
RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d4 1 1.0 t\nq2 Q0 d3 2 0.5 t\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "a.run").write_text(RUN)
    return tmp_path


def test_measures_repeated_or_listed(files, capsys):
    base = ["eval", str(files / "qrels"), str(files / "a.run"), "--json"]
    assert main([*base, "-m", "AP", "-m", "nDCG@10", "-m", "P@10"]) == 0
    repeated = json.loads(capsys.readouterr().out)
    assert main([*base, "-m", "AP", "nDCG@10", "-m", "P@10"]) == 0
    assert json.loads(capsys.readouterr().out) == repeated
    assert list(repeated["a.run"]) == ["AP", "nDCG@10", "P@10"]


def test_json_per_query(files, capsys):
    argv = ["eval", str(files / "qrels"), str(files / "a.run"), "-m", "P@1", "-q", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)["a.run"]
    assert out == {"q1": {"P@1": 1.0}, "q2": {"P@1": 0.0}, "all": {"P@1": 0.5}}


def test_output_lines_are_trec_eval_lines(shared_data, trec_eval, capsys):
    folder = shared_data / "trec_eval"
    measures = ["num_ret", "num_rel_ret", "map", "P.5,10", "ndcg_cut.10", "iprec_at_recall"]
    args = [str(folder / "qrels.test"), str(folder / "results.test")]
    assert main(["eval", *args, "-q", "-c", "-l", "2", "-m", *measures]) == 0
    ours = capsys.readouterr().out.splitlines()
    options = ["-q", "-c", "-l", "2", *(x for m in measures for x in ("-m", m))]
    done = run_reference(trec_eval, *args, *options)
    theirs = done.stdout.splitlines()
    assert done.returncode == 0 and len(theirs) > 50
    assert ours[0] == "runid                 \tall\tSTANDARD"
    assert sorted(ours[1:]) == sorted(theirs)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-m", "RBP(p=2)"], "must be in (0, 1)"),
        (["-m", "P@0"], "positive integer"),
        (["-m", "nDCG@0"], "positive integer"),
        (["-m", "P@-1"], "positive integer"),
        (["-m", "P_0"], "positive integer"),
        (["-m", ""], "empty measure name"),
        (["-m"], "expected at least one argument"),
        (["-m", "NoSuchMeasure"], "unknown measure"),
        (["-M", "0"], "-M/--depth: must be a positive integer"),
        (["-M", "-5"], "-M/--depth: must be a positive integer"),
        (["-M", "x"], "-M/--depth: must be a positive integer"),
        (["-l", "-1"], "-l/--level: must be an integer >= 0"),
        (["-l", "1.5"], "-l/--level: must be an integer >= 0"),
    ],
)
def test_bad_parameters_are_one_line_errors_before_reading(tmp_path, capsys, argv, message):
    # the files do not exist: the parameters must be rejected before they are read
    code = main(["eval", str(tmp_path / "no-qrels"), str(tmp_path / "no-run"), *argv])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.startswith("probrank: error: ") and captured.err.count("\n") == 1
    assert message in captured.err


def test_eval_imports_no_heavy_library(files):
    """The eval path loads neither torch, pyro, transformers nor pandas."""
    code = (
        "import sys\n"
        "from probrank.cli import main\n"
        f"assert main(['eval', {str(files / 'qrels')!r}, {str(files / 'a.run')!r},"
        " '-m', 'AP', '-m', 'nDCG@10', '-q']) == 0\n"
        "heavy = {'torch', 'pyro', 'transformers', 'pandas', 'scipy', 'sklearn', 'gpytorch'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
    timed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "probrank.cli", "eval",
         str(files / "qrels"), str(files / "a.run")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert timed.returncode == 0, timed.stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in timed.stderr.splitlines()}
    assert not imported & {"torch", "pyro", "transformers", "pandas"}


def test_eval_process_imports_nothing_it_does_not_use(files):
    """``python -m probrank.cli eval`` loads none of the modules that evaluating does not
    need and that cost time at start-up: numpy.ma (np.unique loads it: 20 ms), json, difflib
    (only to word errors), and no other command's module; and it still prints everything and
    ends with the command's exit code (it leaves without the interpreter's clean-up)."""
    code = (
        "import runpy, sys\n"
        "sys.argv = ['probrank', 'eval', sys.argv[1], sys.argv[2], '-m', 'AP', '-m', 'P.1']\n"
        "import atexit\n"
        "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
        "runpy.run_module('probrank.cli', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, str(files / "qrels"),
         str(files / "a.run")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert {"probrank.cli", "probrank.data.trec_columns", "pyarrow"} <= imported
    unwanted = {"numpy.ma", "json", "difflib", "pandas", "scipy", "probrank.cli.serve"}
    assert not imported & unwanted
    assert done.stdout.splitlines()[-1].startswith("P_1 ")
    assert "atexit ran" not in done.stderr  # the process ended at once
    bad = subprocess.run(
        [sys.executable, "-m", "probrank.cli", "eval", str(files / "qrels"),
         str(files / "missing.run")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("probrank: error: ") and bad.stderr.count("\n") == 1
