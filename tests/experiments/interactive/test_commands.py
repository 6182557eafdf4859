"""``probrank interactive --human``: the count shown at the end is the log's, and a log that
another process holds is a one-line error."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from probrank.cli import main
from probrank.interactive.log import read_log

TINY = """
[experiment]
protocol = "interactive"
title = "tiny"

[data]
dataset = "synthetic"
max_questions = 3

[warm_start]
max_epochs = 3
swag_epochs = 3
ensemble_size = 2
"""


@pytest.fixture
def human(tmp_path: Path) -> list[str]:
    config = tmp_path / "tiny.toml"
    config.write_text(TINY, encoding="utf-8")
    return ["interactive", "--human", "--data", "synthetic", "--config", str(config)]


def _session(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str,
    *argv: str,
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _summary(out: str) -> str:
    (line,) = [line for line in out.splitlines() if "Best answers now" in line]
    return line


def test_the_count_at_the_end_is_the_number_of_judgements_in_the_log(
    human: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "t1.jsonl"
    # judge, skip (not a judgement), judge, quit
    code, out, _ = _session(
        capsys, monkeypatch, "1\ns\n2\nq\n", *human, "--question", "T1", "--log", str(log)
    )
    assert code == 0
    assert [e["type"] for e in read_log(log).events] == ["judgement", "skip", "judgement"]
    assert _summary(out) == f"2 judgements in {log}. Best answers now:"
    code, out, _ = _session(
        capsys, monkeypatch, "2\nq\n", *human, "--question", "T1", "--resume", str(log)
    )
    assert code == 0
    assert read_log(log).num_judgements == 3
    assert _summary(out) == f"3 judgements in {log}, 2 of them before this run. Best answers now:"
    # a resumed run that judges nothing still reports what the log holds
    code, out, _ = _session(
        capsys, monkeypatch, "q\n", *human, "--question", "T1", "--resume", str(log)
    )
    assert _summary(out) == f"3 judgements in {log}, 3 of them before this run. Best answers now:"


_HOLDER = """
import sys, time
from probrank.interactive.log import SessionLog
log = SessionLog.reopen(sys.argv[1])
print("holding", flush=True)
time.sleep(120)
"""


def test_resuming_a_log_that_another_process_holds_is_a_one_line_error(
    human: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "t1.jsonl"
    code, _, _ = _session(
        capsys, monkeypatch, "1\nq\n", *human, "--question", "T1", "--log", str(log)
    )
    assert code == 0
    before = log.read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(log)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        code, out, err = _session(
            capsys, monkeypatch, "1\n2\nq\n", *human, "--question", "T1", "--resume", str(log)
        )
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    assert code == 2 and "Which answer" not in out
    assert err == (
        f"probrank: error: session log {log} is in use by another probrank process "
        f"(pid {holder.pid})\n"
    )
    assert log.read_bytes() == before


def test_resume_needs_no_question_the_log_names_it(
    human: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "t2.jsonl"
    code, _, _ = _session(
        capsys, monkeypatch, "1\nq\n", *human, "--question", "T2", "--log", str(log)
    )
    assert code == 0
    metadata = read_log(log).header["metadata"]
    assert metadata["question"] == "T2" and metadata["model"] == "InteractiveRanker"
    code, out, err = _session(capsys, monkeypatch, "2\nq\n", *human, "--resume", str(log))
    assert (code, err) == (0, "")
    assert _summary(out) == f"2 judgements in {log}, 1 of them before this run. Best answers now:"
    code, _, err = _session(capsys, monkeypatch, "q\n", *human)  # a new session still needs it
    assert code == 2 and "--human needs --question" in err
