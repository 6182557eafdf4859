"""Simulated users, utilities from grades, and the terminal user (also through a real pty)."""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from rouge_score.rouge_scorer import RougeScorer

from probrank.exceptions import InputDataError
from probrank.interactive.users import Response, SimulatedUser, TerminalUser, utilities_from_grades


def test_simulated_user_probability_is_the_logistic_of_the_scaled_difference() -> None:
    user = SimulatedUser([0.0, 1.0, 3.0], temperature=0.5, seed=0)
    assert user.probability(1, 0) == pytest.approx(1 / (1 + math.exp(-2.0)), rel=1e-12)
    assert user.probability(0, 2) == pytest.approx(1 / (1 + math.exp(6.0)), rel=1e-12)
    assert user.probability(2, 2) == pytest.approx(0.5)
    extreme = SimulatedUser([0.0, 1e6], temperature=1e-3, seed=0)
    assert extreme.probability(1, 0) == 1.0 and extreme.probability(0, 1) == 0.0


def test_simulated_user_choices_follow_the_probability() -> None:
    user = SimulatedUser([0.0, 0.6], temperature=1.0, seed=3)
    draws = 20_000
    firsts = sum(user.judge(1, 0) is Response.FIRST for _ in range(draws))
    p = 1 / (1 + math.exp(-0.6))
    assert abs(firsts / draws - p) <= 5 * math.sqrt(p * (1 - p) / draws)


def test_simulated_user_is_seeded() -> None:
    runs = [
        [SimulatedUser([0.0, 0.1, 0.2], 1.0, seed=s).judge(0, 2) for _ in range(1)] for s in (5, 5)
    ]
    assert runs[0] == runs[1]
    a = SimulatedUser([0.0, 0.1], 1.0, seed=7)
    b = SimulatedUser([0.0, 0.1], 1.0, seed=7)
    assert [a.judge(0, 1) for _ in range(50)] == [b.judge(0, 1) for _ in range(50)]
    with pytest.raises(InputDataError, match="temperature"):
        SimulatedUser([0.0, 1.0], temperature=0.0, seed=0)


def test_utilities_never_overturn_a_grade_and_break_ties_by_rouge_l() -> None:
    texts = [
        "the cat sat on the mat",  # grade 4: the best answer
        "the cat on the mat",  # grade 2, close to the best
        "dogs bark loudly",  # grade 2, far from the best
        "a mat",  # grade 1
    ]
    grades = [4, 2, 2, 1]
    utilities = utilities_from_grades(grades, texts)
    # ROUGE-L by hand: LCS("the cat on the mat", "the cat sat on the mat") = 5 tokens,
    # precision 5/5, recall 5/6, F = 10/11; "dogs bark loudly" shares nothing
    assert float(utilities[1]) == pytest.approx(2 + 0.5 * 10 / 11, rel=1e-12)
    assert float(utilities[2]) == pytest.approx(2.0, abs=1e-12)
    assert float(utilities[0]) == pytest.approx(4.5, rel=1e-12)  # the only best answer: r = 1
    assert torch.all(utilities[:-1] > utilities[1:])


def test_utilities_respect_grades_on_random_inputs() -> None:
    words = "pain fever dose tablet doctor heart blood sugar insulin rash".split()
    generator = torch.Generator().manual_seed(0)
    scorer = RougeScorer(["rougeL"], use_stemmer=True)
    for _ in range(10):
        n = int(torch.randint(2, 9, (1,), generator=generator))
        grades = torch.randint(1, 5, (n,), generator=generator).tolist()
        texts = [
            " ".join(words[int(i)] for i in torch.randint(0, 10, (6,), generator=generator))
            for _ in range(n)
        ]
        utilities = utilities_from_grades(grades, texts)
        for i in range(n):
            for j in range(n):
                if grades[i] > grades[j]:
                    assert utilities[i] > utilities[j]
        best = [i for i in range(n) if grades[i] == max(grades)]
        i = next((k for k in range(n) if k not in best), None)
        if i is not None:
            r = sum(scorer.score(texts[b], texts[i])["rougeL"].fmeasure for b in best) / len(best)
            levels = sorted(set(grades))
            delta = min(b - a for a, b in itertools.pairwise(levels))
            assert float(utilities[i]) == pytest.approx(grades[i] + 0.5 * delta * r, rel=1e-12)


def test_utilities_inputs_are_checked() -> None:
    with pytest.raises(InputDataError, match="2 grades but 1 texts"):
        utilities_from_grades([1, 2], ["a"])
    with pytest.raises(InputDataError, match="tie_break"):
        utilities_from_grades([1, 2], ["a", "b"], tie_break=1.0)
    equal = utilities_from_grades([3.0, 3.0], ["x y", "x z"])
    assert torch.all(equal >= 3.0) and torch.all(equal <= 3.5)


def test_terminal_user_with_injected_streams() -> None:
    answers = ["Take two tablets daily.", "See a doctor.", "Drink water."]
    replies = io.StringIO("maybe\n 2 \nS\nquit\n")
    out = io.StringIO()
    user = TerminalUser("How do I treat a headache?", answers, stdin=replies, stdout=out, width=40)
    assert user.judge(2, 0) is Response.SECOND
    shown = out.getvalue()
    assert "How do I treat a headache?" in shown
    assert shown.index("Drink water.") < shown.index("Take two tablets daily.")
    assert "Please type 1, 2, s or q (got 'maybe')" in shown
    assert shown.count(TerminalUser.PROMPT) == 2
    assert user.judge(0, 1) is Response.SKIP
    assert user.judge(0, 1) is Response.QUIT
    assert user.judge(0, 1) is Response.QUIT  # end of input counts as quit
    with pytest.raises(InputDataError, match="out of range"):
        user.judge(0, 3)


_PTY_SCRIPT = r"""
import sys
import torch
torch.set_num_threads(1)
from probrank.posteriors.bradley_terry import BradleyTerryLaplace
from probrank.interactive.session import InteractiveSession
from probrank.interactive.users import TerminalUser
print("TTY", sys.stdin.isatty(), sys.stdout.isatty(), flush=True)
names = ["Alpha", "Bravo", "Charlie", "Delta"]
user = TerminalUser("Which drug helps?", [n + " answer text" for n in names], width=60)
model = BradleyTerryLaplace(torch.tensor([0.0, 0.5, 1.0, 0.2]), torch.eye(4))
with InteractiveSession(model, strategy="eubo", seed=0, log_path=sys.argv[1]) as session:
    done = session.run(user)
    print("DONE", done, session.round, flush=True)
"""

_SHOWN = re.compile(r"\[1\]\r?\n\s+(\w+) answer text\r?\n\[2\]\r?\n\s+(\w+) answer text")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_terminal_user_through_a_pseudo_terminal(tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", _PTY_SCRIPT, str(log)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    buffer = ""

    def read_until(text: str, count: int = 1, timeout: float = 180.0) -> str:
        """Read until ``text`` occurs ``count`` times (a regex when ``text`` starts with ^)."""
        nonlocal buffer
        deadline = time.monotonic() + timeout

        def seen() -> bool:
            if text.startswith("^"):
                return re.search(text[1:], buffer) is not None
            return buffer.count(text) >= count

        while not seen():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {text!r}; got {buffer!r}")
            ready, _, _ = select.select([master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"terminal closed waiting for {text!r}; got {buffer!r}")
                buffer += chunk.decode("utf-8", errors="replace")
        return buffer

    prompt = TerminalUser.PROMPT
    try:
        assert "TTY True True" in read_until(r"^TTY[^\n]*\n")
        read_until(prompt, 1)
        os.write(master, b"1\n")
        read_until(prompt, 2)
        os.write(master, b"maybe\n")
        read_until(prompt, 3)
        os.write(master, b"2\n")
        read_until(prompt, 4)
        os.write(master, b"s\n")
        read_until(prompt, 5)
        os.write(master, b"q\n")
        read_until(r"^DONE[^\n]*\n")
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    assert re.search(r"DONE 2 3", buffer), buffer
    assert "Please type 1, 2, s or q (got 'maybe')" in buffer
    names = ["Alpha", "Bravo", "Charlie", "Delta"]
    shown = [(names.index(a), names.index(b)) for a, b in _SHOWN.findall(buffer)]
    assert len(shown) == 4  # the re-prompt does not show the pair again
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[0]["type"] == "header" and records[0]["strategy"] == "eubo"
    events = records[1:]
    assert [e["type"] for e in events] == ["judgement", "judgement", "skip"]
    assert (events[0]["winner"], events[0]["loser"]) == shown[0]  # typed 1
    assert (events[1]["loser"], events[1]["winner"]) == shown[1]  # typed 2
    assert tuple(events[2]["pair"]) == shown[2]  # typed s; then q on the fourth pair
