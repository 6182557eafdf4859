"""The server's start-up objects are frozen out of the garbage collector's full collections
(:mod:`probrank.serve.heap`), and given back when the server stops."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from probrank.serve.heap import freeze_startup_objects, heap_thawed_on_exit


class _Node:
    """A container the cyclic collector tracks."""

    def __init__(self) -> None:
        self.me = self


def _tracked(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects())


def test_frozen_objects_leave_the_collections_and_come_back_on_exit() -> None:
    assert gc.get_freeze_count() == 0
    node = _Node()
    with heap_thawed_on_exit():
        freeze_startup_objects()
        assert gc.get_freeze_count() > 0
        assert not _tracked(node)  # in the permanent generation: no collection walks it
        later = _Node()
        assert _tracked(later)  # made after the freeze: collected as usual
    assert gc.get_freeze_count() == 0
    assert _tracked(node)


def test_a_process_that_froze_objects_itself_keeps_them_frozen() -> None:
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        with heap_thawed_on_exit():
            freeze_startup_objects()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


@contextmanager
def _preparation(
    tmp_path: Path, questions_file: Path, serve_model: Path
) -> Iterator[tuple[Any, Callable[[], None]]]:
    """A preparation of ``probrank serve`` over an open store, the heap thawed on exit, and
    the call that runs it (:func:`probrank.serve.startup.prepare`)."""
    from probrank.serve.server import _questions
    from probrank.serve.settings import ServeSettings
    from probrank.serve.startup import Preparation, prepare
    from probrank.serve.store import JudgementStore

    options = ServeSettings(
        data=str(questions_file), model=str(serve_model), db=str(tmp_path / "x.sqlite")
    )
    questions, source = _questions(options)
    with JudgementStore(tmp_path / "x.sqlite") as store, heap_thawed_on_exit():
        preparation = Preparation(questions)
        yield preparation, lambda: prepare(options, questions, source, store, preparation)


def test_the_preparation_freezes_what_it_built(
    tmp_path: Path, questions_file: Path, serve_model: Path
) -> None:
    assert gc.get_freeze_count() == 0
    with _preparation(tmp_path, questions_file, serve_model) as (preparation, run):
        run()
        assert preparation.service is not None
        assert gc.get_freeze_count() > 0
        assert not _tracked(preparation.service)
    assert gc.get_freeze_count() == 0


def test_a_preparation_that_ends_after_the_server_stopped_freezes_nothing(
    tmp_path: Path, questions_file: Path, serve_model: Path
) -> None:
    with _preparation(tmp_path, questions_file, serve_model) as (preparation, run):
        preparation.stop()  # the server is gone (its heap thawed) before the encoding ends
        run()
        assert preparation.service is not None
        assert gc.get_freeze_count() == 0
