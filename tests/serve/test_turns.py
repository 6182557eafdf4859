"""Turns at the CPU: granted in the order asked, at most ``width`` at once, always handed on."""

from __future__ import annotations

import threading
import time

import pytest

from probrank.serve.turns import Turns


def _wait_until(condition, seconds: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.001)


def _queue(turns: Turns, count: int, order: list[int]) -> list[threading.Thread]:
    """``count`` threads asking for a turn one after the other (each queued before the next
    starts); each notes its number when it gets its turn."""
    threads = []
    for number in range(count):

        def work(number: int = number) -> None:
            with turns:
                order.append(number)

        waiting = turns.waiting
        thread = threading.Thread(target=work)
        thread.start()
        threads.append(thread)
        _wait_until(lambda waiting=waiting: turns.waiting == waiting + 1)
    return threads


def test_turns_are_granted_in_the_order_asked() -> None:
    turns = Turns()
    order: list[int] = []
    turns.acquire()  # held: everyone after this waits
    threads = _queue(turns, 12, order)
    assert order == [] and turns.waiting == 12
    turns.release()
    for thread in threads:
        thread.join(timeout=10)
    assert order == list(range(12))  # first come, first served: nobody overtakes
    assert turns.waiting == 0
    with turns:  # free again: taken at once
        pass


def test_at_most_width_threads_hold_a_turn() -> None:
    turns = Turns(width=2)
    inside, most = [0], [0]
    lock = threading.Lock()

    def work() -> None:
        with turns:
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.005)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert most[0] == 2 and inside[0] == 0
    turns.acquire()
    turns.acquire()  # both turns, without waiting
    assert turns.waiting == 0
    turns.release()
    turns.release()


def test_an_exception_hands_the_turn_on() -> None:
    turns = Turns()
    with pytest.raises(KeyError):
        with turns:
            raise KeyError("boom")
    done = threading.Event()
    thread = threading.Thread(target=lambda: (turns.acquire(), done.set(), turns.release()))
    thread.start()
    assert done.wait(timeout=10)
    thread.join(timeout=10)


def test_bad_width_and_a_release_without_a_turn() -> None:
    for width in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            Turns(width)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="without a turn"):
        Turns().release()
