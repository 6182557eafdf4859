"""InteractiveSession: the loop, the durable log, resume, torn lines and SIGKILL."""

from __future__ import annotations

import itertools
import json
import os
import random
import select
import signal
import time
import warnings
from pathlib import Path

import pytest
import torch

from probrank.acquisition.pairs import ExhaustedPairsError
from probrank.acquisition.select import Strategy
from probrank.exceptions import InputDataError
from probrank.interactive.log import TornLogWarning, read_log
from probrank.interactive.session import InteractiveSession
from probrank.interactive.users import SimulatedUser
from probrank.posteriors.bradley_terry import BradleyTerryLaplace

N = 8
TRUE_UTILITIES = [0.3, 1.2, -0.5, 2.0, 0.9, -1.1, 1.6, 0.1]


def factory(prior_shift: float = 0.0) -> BradleyTerryLaplace:
    generator = torch.Generator().manual_seed(123)
    features = torch.randn(N, 5, generator=generator, dtype=torch.float64)
    prior_mean = 0.3 * torch.randn(N, generator=generator, dtype=torch.float64) + prior_shift
    return BradleyTerryLaplace.from_features(features, prior_mean, jitter=1e-4)


def truthful(first: int, second: int) -> tuple[int, int]:
    """A noiseless user: the candidate with the higher true utility wins."""
    if TRUE_UTILITIES[first] >= TRUE_UTILITIES[second]:
        return first, second
    return second, first


def _play(session: InteractiveSession, rounds: int) -> list[tuple[int, int]]:
    pairs = []
    while session.round < rounds:
        pair = session.next_pair()
        pairs.append(pair)
        session.record(*truthful(*pair))
    return pairs


def test_the_loop_in_memory() -> None:
    session = InteractiveSession(factory(), strategy="ei", seed=0)
    pair = session.next_pair()
    assert session.next_pair() == pair  # idempotent until answered
    session.record(*truthful(*pair))
    assert session.judgements == [truthful(*pair)]
    assert (min(pair), max(pair)) in session.asked
    offered = session.next_pair()
    session.skip()
    assert session.round == 2 and session.events[1]["pair"] == list(offered)
    with pytest.raises(InputDataError, match="no pair is being offered"):
        session.skip()
    mean = session.posterior().mean
    assert session.best() == int(torch.argmax(mean))
    ranking = session.ranking()
    assert sorted(ranking) == list(range(N))
    assert all(mean[a] >= mean[b] for a, b in itertools.pairwise(ranking))
    with pytest.raises(InputDataError, match="two different candidates"):
        session.record(3, 3)
    with pytest.raises(InputDataError, match="out of range"):
        session.record(0, N)


def test_run_asks_until_every_pair_is_answered() -> None:
    # an exchangeable prior, so that the order can only come from the judgements
    model = BradleyTerryLaplace(torch.zeros(N), torch.eye(N))
    session = InteractiveSession(model, strategy="eubo", seed=0)
    user = SimulatedUser(TRUE_UTILITIES, temperature=0.01, seed=0)
    assert session.run(user, rounds=5) == 5
    assert session.run(user) == N * (N - 1) // 2 - 5
    with pytest.raises(ExhaustedPairsError):
        session.next_pair()
    # a near-noiseless user over all pairs recovers the true order
    assert session.ranking() == sorted(range(N), key=lambda i: -TRUE_UTILITIES[i])


def test_log_holds_header_and_every_event_before_the_next_pair(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = InteractiveSession(
        factory(), strategy="thompson", seed=7, log_path=path, metadata={"qid": "TQ5"}
    )
    header = json.loads(path.read_text().splitlines()[0])
    assert header["type"] == "header" and header["seed"] == 7 and header["strategy"] == "thompson"
    assert header["num_candidates"] == N and header["metadata"] == {"qid": "TQ5"}
    for expected in range(1, 4):
        pair = session.next_pair()
        session.record(*truthful(*pair))
        # the file (not closed, not flushed by us) already holds the judgement
        lines = path.read_text().splitlines()
        assert len(lines) == 1 + expected
        event = json.loads(lines[-1])
        assert (event["winner"], event["loser"]) == truthful(*pair) and event["offered"] == list(
            pair
        )
    session.close()
    with pytest.raises(InputDataError, match="exists already"):
        InteractiveSession(factory(), log_path=path)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "s.jsonl"]
    assert leftovers == []  # the temporary header file is gone
    with pytest.raises(InputDataError, match="not JSON-serialisable"):
        InteractiveSession(factory(), log_path=tmp_path / "t.jsonl", metadata={"x": object()})
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize("strategy", list(Strategy))
def test_resume_rebuilds_the_same_state_and_next_pair(tmp_path: Path, strategy: Strategy) -> None:
    path = tmp_path / "s.jsonl"
    original = InteractiveSession(factory(), strategy=strategy, seed=3, log_path=path)
    _play(original, 4)
    original.next_pair()
    original.skip()
    _play(original, 7)
    expected_pair = original.next_pair()
    original.close()
    resumed = InteractiveSession.resume(path, factory)
    assert resumed.round == original.round and resumed.judgements == original.judgements
    assert resumed.asked == original.asked
    assert torch.equal(resumed.posterior().mean, original.posterior().mean)
    assert torch.equal(
        resumed.posterior().covariance_matrix, original.posterior().covariance_matrix
    )
    assert resumed.next_pair() == expected_pair
    # both continue identically; the resumed log keeps growing
    reference = InteractiveSession(factory(), strategy=strategy, seed=3)
    for event in original.events:
        if event["type"] == "judgement":
            reference.record(event["winner"], event["loser"])
        else:
            reference.next_pair()
            reference.skip()
    assert _play(resumed, 12) == _play(reference, 12)
    resumed.close()
    assert len(read_log(path).events) == 12


def test_resume_refuses_a_different_prior_or_a_missing_custom_strategy(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with InteractiveSession(factory(), seed=0, log_path=path) as session:
        _play(session, 2)
    with pytest.raises(InputDataError, match="different prior"):
        InteractiveSession.resume(path, lambda: factory(prior_shift=0.5))

    def first_open(
        posterior: object, asked: object = (), generator: object = None
    ) -> tuple[int, int]:
        taken = set(asked)  # type: ignore[call-overload]
        return next((i, j) for i in range(N) for j in range(i + 1, N) if (i, j) not in taken)

    custom = tmp_path / "c.jsonl"
    with InteractiveSession(factory(), strategy=first_open, log_path=custom) as session:
        _play(session, 2)
    with pytest.raises(InputDataError, match="custom strategy"):
        InteractiveSession.resume(custom, factory)
    resumed = InteractiveSession.resume(custom, factory, strategy=first_open)
    assert resumed.next_pair() == (0, 3)
    with pytest.raises(InputDataError, match="do not pass another"):
        InteractiveSession.resume(path, factory, strategy=first_open)


def test_a_torn_last_line_is_dropped_and_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with InteractiveSession(factory(), strategy="ei", seed=1, log_path=path) as session:
        _play(session, 3)
        expected_pair = session.next_pair()
    intact = path.read_bytes()
    with open(path, "ab") as handle:  # a crash in the middle of the fourth append
        handle.write(b'{"loser": 2, "offered": [1, 2], "round": 3, "ti')
    with pytest.warns(TornLogWarning, match="partially written last line"):
        resumed = InteractiveSession.resume(path, factory)
    assert resumed.round == 3 and resumed.next_pair() == expected_pair
    assert path.read_bytes() == intact  # cut back to the last complete line
    resumed.record(*truthful(*expected_pair))
    resumed.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        contents = read_log(path)
    assert len(contents.events) == 4 and not contents.torn


def test_a_corrupt_complete_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with InteractiveSession(factory(), seed=1, log_path=path) as session:
        _play(session, 2)
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:-5]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputDataError, match=r"s\.jsonl:2: malformed log line"):
        InteractiveSession.resume(path, factory)
    lines[1] = json.dumps({"type": "judgement", "round": 0, "winner": 1, "loser": 99})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputDataError, match=r"s\.jsonl:2: bad candidate pair"):
        InteractiveSession.resume(path, factory)
    path.write_text('{"type": "header"')
    with warnings.catch_warnings():  # one error, no TornLogWarning before it
        warnings.simplefilter("error")
        with pytest.raises(InputDataError, match="no complete header"):
            InteractiveSession.resume(path, factory)


# -- SIGKILL at random points -----------------------------------------------------------------

ROUNDS = 20


def _child(path: Path, strategy: str, seed: int, ack_fd: int) -> None:
    """Run (or resume) a session, acknowledging each judgement once record() has returned."""
    torch.set_num_threads(1)
    if path.exists():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornLogWarning)
            session = InteractiveSession.resume(path, factory)
    else:
        session = InteractiveSession(factory(), strategy=strategy, seed=seed, log_path=path)
    while session.round < ROUNDS:
        winner, loser = truthful(*session.next_pair())
        session.record(winner, loser)
        os.write(ack_fd, f"{winner} {loser}\n".encode())
    os.write(ack_fd, b"done\n")


def _run_child_and_kill(
    path: Path, strategy: str, seed: int, rng: random.Random, kill_after: int | None
) -> tuple[list[tuple[int, int]], bool]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 0
        try:
            os.close(read_fd)
            _child(path, strategy, seed, write_fd)
        except BaseException as error:  # report, never fall back into pytest
            os.write(write_fd, f"error {error!r}\n".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    data = b""
    killed = False
    deadline = time.monotonic() + 120
    try:
        while True:
            acks = [line for line in data.split(b"\n")[:-1] if line and line != b"done"]
            if kill_after is not None and len(acks) >= kill_after and not killed:
                time.sleep(rng.uniform(0.0, 0.01))  # land somewhere inside a later round
                os.kill(pid, signal.SIGKILL)
                killed = True
            ready, _, _ = select.select([read_fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise AssertionError(f"child stalled; got {data!r}")
            chunk = os.read(read_fd, 4096)
            if not chunk:  # the child is gone: everything it acknowledged has been read
                break
            data += chunk
    finally:
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
    lines = [line for line in data.decode().split("\n") if line]
    assert not any(line.startswith("error") for line in lines), lines
    finished = "done" in lines
    if killed and not finished:
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    acked = [tuple(int(v) for v in line.split()) for line in lines if line != "done"]
    return acked, finished  # type: ignore[return-value]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize(("seed", "strategy"), [(0, "ei"), (1, "thompson"), (2, "random")])
def test_sigkill_at_random_points_loses_no_judgement_and_resume_continues(
    tmp_path: Path, seed: int, strategy: str
) -> None:
    path = tmp_path / "killed.jsonl"
    rng = random.Random(seed)
    acknowledged: list[tuple[int, int]] = []
    finished, kills = False, 0
    while not finished:
        kill_after = None if kills >= 3 else rng.randint(0, 5)
        acked, finished = _run_child_and_kill(path, strategy, seed, rng, kill_after)
        kills += kill_after is not None
        acknowledged.extend(acked)
        if not path.exists():  # killed before the header was created: nothing was recorded
            assert acknowledged == []
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornLogWarning)
            # closed before the next child starts: an open session holds the log's lock
            with InteractiveSession.resume(path, factory) as resumed:
                logged = resumed.judgements
        # every acknowledged judgement is in the log, in order; at most one more was written
        # (durable, but killed before its acknowledgement reached us)
        assert logged[: len(acknowledged)] == acknowledged
        assert len(logged) - len(acknowledged) <= 1
        acknowledged = logged
    # the interrupted run ends exactly where an uninterrupted one does
    reference = InteractiveSession(factory(), strategy=strategy, seed=seed)
    _play(reference, ROUNDS)
    final = InteractiveSession.resume(path, factory)
    assert final.judgements == reference.judgements
    assert torch.equal(final.posterior().mean, reference.posterior().mean)
    assert final.next_pair() == reference.next_pair()
    assert kills >= 2
