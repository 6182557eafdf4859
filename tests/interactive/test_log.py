"""The session log: one writer at a time (two real processes), one judgement per pair, files
made like open() makes them, no temporary file left by a killed creation, a new log's path
checked before any work, and a log without a complete header refused without a warning."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.interactive.log import SessionLog, TornLogWarning, check_new_log, read_log
from probrank.interactive.session import InteractiveSession
from probrank.posteriors.bradley_terry import BradleyTerryLaplace

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="advisory locks are POSIX")

N = 6


def factory() -> BradleyTerryLaplace:
    generator = torch.Generator().manual_seed(7)
    features = torch.randn(N, 4, generator=generator, dtype=torch.float64)
    prior_mean = 0.3 * torch.randn(N, generator=generator, dtype=torch.float64)
    return BradleyTerryLaplace.from_features(features, prior_mean, jitter=1e-4)


def _new_log(path: Path, judgements: list[tuple[int, int]]) -> None:
    with InteractiveSession(factory(), strategy="ei", seed=0, log_path=path) as session:
        for winner, loser in judgements:
            session.record(winner, loser)


_HOLDER = """
import sys, time
from probrank.interactive.log import SessionLog
log = SessionLog.reopen(sys.argv[1])
print("holding", flush=True)
time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """Another process that has resumed (and so locked) a session log and keeps it open."""
    path = tmp_path / "s.jsonl"
    _new_log(path, [(0, 1), (2, 3)])
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
        yield child, path
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()


def test_a_second_process_cannot_resume_a_log_in_use(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    child, path = holder
    before = path.read_bytes()
    with pytest.raises(InputDataError) as error:
        InteractiveSession.resume(path, factory)
    message = str(error.value)
    assert message == f"session log {path} is in use by another probrank process (pid {child.pid})"
    with pytest.raises(InputDataError, match="in use by another probrank process"):
        InteractiveSession(factory(), log_path=path)  # creating it anew is refused too
    assert read_log(path).num_judgements == 2  # readers take no lock
    assert path.read_bytes() == before
    child.send_signal(signal.SIGKILL)  # the lock dies with its process
    child.wait(timeout=30)
    with InteractiveSession.resume(path, factory) as session:
        session.record(4, 5)
    assert read_log(path).num_judgements == 3


def test_the_second_session_in_the_same_process_is_refused_until_the_first_closes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    first = InteractiveSession(factory(), log_path=path)
    with pytest.raises(InputDataError, match=r"a session still open in this very process"):
        InteractiveSession.resume(path, factory)
    first.record(0, 1)
    first.close()
    with InteractiveSession.resume(path, factory) as second:
        assert second.judgements == [(0, 1)]


_CREATOR = """
import os, sys, time
from probrank.exceptions import InputDataError
from probrank.interactive.log import SessionLog
path, go = sys.argv[1], sys.argv[2]
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
try:
    log = SessionLog.create(path, {"num_candidates": 3, "who": os.getpid()})
except InputDataError as error:
    print("refused", error, flush=True)
    sys.exit(0)
print("created", flush=True)
time.sleep(1)
"""


def test_two_processes_creating_one_log_at_once_make_one_writer(tmp_path: Path) -> None:
    path, go = tmp_path / "race.jsonl", tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CREATOR, str(path), str(go)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    for child in children:  # both have imported probrank and wait for the start signal
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    go.touch()
    outputs = [child.communicate(timeout=60)[0].strip() for child in children]
    assert sorted(o.split()[0] for o in outputs) == ["created", "refused"], outputs
    refused = next(o for o in outputs if o.startswith("refused"))
    assert "exists already" in refused or "in use by another probrank process" in refused
    winner = next(c for c, o in zip(children, outputs, strict=True) if o == "created")
    header = read_log(path).header
    assert header["who"] == winner.pid and path.read_bytes().count(b"\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go", "race.jsonl"]


def test_a_pair_is_judged_once_and_a_repeat_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with InteractiveSession(factory(), seed=0, log_path=path) as session:
        session.record(0, 1)
        pair = session.next_pair()
        session.skip()
        before, mean = path.read_bytes(), session.posterior().mean.clone()
        for winner, loser in ((0, 1), (1, 0)):  # the same pair, in either order
            with pytest.raises(InputDataError, match="judged already in round 0"):
                session.record(winner, loser)
        assert path.read_bytes() == before and session.round == 2
        assert torch.equal(session.posterior().mean, mean)
        session.record(*pair)  # a skipped pair may still be judged
        assert session.num_judgements == 2
    events = read_log(path).events
    assert [e["type"] for e in events] == ["judgement", "skip", "judgement"]


def test_a_log_that_judges_a_pair_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _new_log(path, [(0, 1), (2, 3)])
    lines = path.read_text(encoding="utf-8").splitlines()
    repeat = {"type": "judgement", "round": 2, "winner": 1, "loser": 0, "offered": None}
    path.write_text("\n".join([*lines, json.dumps(repeat)]) + "\n", encoding="utf-8")
    for read in (read_log, lambda p: InteractiveSession.resume(p, factory)):
        with pytest.raises(InputDataError) as error:
            read(path)
        assert str(error.value) == (
            f"{path}:4: pair (0, 1) judged again (first judged on line 2); a session judges "
            "each pair once"
        )


def test_a_log_is_made_like_open_makes_files_and_needs_its_folder(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        _new_log(tmp_path / "s.jsonl", [])
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "s.jsonl").stat().st_mode) == 0o640
    with pytest.raises(InputDataError, match="folder of the session log does not exist"):
        SessionLog.create(tmp_path / "missing" / "s.jsonl", {"num_candidates": 2})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_a_temporary_file_of_a_killed_creation_is_removed_later(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stray = tmp_path / f".s.jsonl.probrank-{int(dead.stdout)}-00ff00ff.tmp"
    stray.write_bytes(b'{"type": "header", "format": "probrank-ses')
    _new_log(tmp_path / "s.jsonl", [(0, 1)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_a_new_log_path_is_checked_without_creating_anything(tmp_path: Path) -> None:
    """check_new_log makes SessionLog.create's checks (same errors) and writes nothing."""
    free = tmp_path / "free.jsonl"
    check_new_log(free)
    assert not free.exists()
    taken = tmp_path / "taken.jsonl"
    _new_log(taken, [(0, 1)])
    (tmp_path / "logs").mkdir()
    cases = {
        taken: "session log exists already",
        tmp_path / "logs": "session log is a folder; give a file name",
        tmp_path / "missing" / "s.jsonl": "folder of the session log does not exist",
        taken / "s.jsonl": "folder of the session log does not exist",  # under a file
    }
    before = sorted(p.name for p in tmp_path.iterdir())
    for path, reason in cases.items():
        for check in (check_new_log, lambda p: SessionLog.create(p, {"num_candidates": 2})):
            with pytest.raises(InputDataError) as error:
                check(path)
            assert str(error.value) == f"{path}: {reason}" + (
                "; resume it or pick a new name" if "exists" in reason else ""
            )
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_new_log_path_held_by_another_process_is_in_use(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    child, path = holder
    with pytest.raises(
        InputDataError, match=rf"in use by another probrank process \(pid {child.pid}\)"
    ):
        check_new_log(path)


@pytest.mark.parametrize("data", [b"", b'{"type": "header", "format": "probrank-ses'])
def test_a_log_without_a_complete_header_is_one_error_and_no_warning(
    tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    for read in (read_log, SessionLog.reopen):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a TornLogWarning would fail here first
            with pytest.raises(InputDataError) as error:
                read(path)
        assert str(error.value) == f"{path}: not a probrank session log: no complete header line"
    assert path.read_bytes() == data  # not cut: nothing of it is a log


def test_a_torn_event_after_a_complete_header_is_still_a_warning_and_a_cut(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    _new_log(path, [])
    header = path.read_bytes()
    path.write_bytes(header + b'{"type": "judgement", "rou')
    with pytest.warns(TornLogWarning, match="partially written last line"):
        log = SessionLog.reopen(path)
    log.close()
    assert log.contents.torn and log.contents.events == []
    assert path.read_bytes() == header
