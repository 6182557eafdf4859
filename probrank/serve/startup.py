"""The slow part of ``probrank serve``, in the background: the ranker and the features.

:class:`Preparation` is what the pages see while the server prepares (its stage, its progress,
its error); :func:`prepare` does the work in a thread after the server has bound its address
and printed its links: loading torch and the saved ranker (or warm-starting a new one on
MEDIQA, through the on-disk caches), checking the database's project identity, making the
:class:`~probrank.serve.judging.JudgingService`; then, with the pages already served, encoding
every question's features (a question opened earlier is encoded on its first request); then
the objects built so far are frozen out of the garbage collector's full collections
(:mod:`probrank.serve.heap`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from probrank.data.candidates import CandidateList
from probrank.serve.heap import freeze_startup_objects

if TYPE_CHECKING:
    from probrank.serve.judging import JudgingService
    from probrank.serve.settings import ServeSettings
    from probrank.serve.store import JudgementStore

__all__ = ["Preparation", "prepare"]

_log = logging.getLogger("probrank.serve")


@dataclass(frozen=True)
class Progress:
    """A snapshot of the preparation.

    Attributes:
        stage: What is being done ("" once ready).
        done: Steps done of the stage.
        total: Steps of the stage (0: not counted).
        seconds: Seconds since the preparation began.
        ready: Whether judging can start.
        error: Why the preparation failed ("" if it did not).
        encoded: Questions whose features are ready.
        questions: Questions in all.
    """

    stage: str
    done: int
    total: int
    seconds: float
    ready: bool
    error: str
    encoded: int
    questions: int


class Preparation:
    """The state of a server's preparation, shared by the worker thread and the pages.

    Args:
        questions: The questions served.
        service: A service that is ready already (then nothing is prepared).
    """

    def __init__(
        self, questions: Sequence[CandidateList] = (), service: JudgingService | None = None
    ) -> None:
        self.questions = tuple(questions)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self.service = service
        self.error: BaseException | None = None
        self._stage = "starting"
        self._done = 0
        self._total = 0
        self._questions = len(self.questions)
        self._stopped = False

    def stage(self, text: str, *, done: int = 0, total: int = 0) -> None:
        """Enter a stage (or count its steps)."""
        with self._lock:
            self._stage, self._done, self._total = text, done, total

    def ready(self, service: JudgingService) -> None:
        """Judging can start."""
        with self._lock:
            self.service = service

    def fail(self, error: BaseException) -> None:
        """The preparation failed: every page says why."""
        with self._lock:
            self.error = error

    def stop(self) -> None:
        """The server stopped: a preparation still running freezes nothing after this."""
        with self._lock:
            self._stopped = True

    def freeze(self) -> None:
        """Freeze the start-up's objects (:func:`~probrank.serve.heap.freeze_startup_objects`)
        unless the server stopped already (it thaws the heap as it stops: a freeze after that
        would outlive it)."""
        with self._lock:
            if not self._stopped:
                freeze_startup_objects()

    def progress(self) -> Progress:
        """A snapshot for the pages."""
        with self._lock:
            service = self.service
            encoded = service.project.encoded() if service is not None else 0
            return Progress(
                stage="" if service is not None else self._stage,
                done=self._done,
                total=self._total,
                seconds=time.monotonic() - self._started,
                ready=service is not None,
                error="" if self.error is None else str(self.error),
                encoded=encoded,
                questions=self._questions,
            )


def prepare(
    options: ServeSettings,
    questions: Sequence[CandidateList],
    source: str,
    store: JudgementStore,
    preparation: Preparation,
    *,
    on_error: Callable[[BaseException], None] | None = None,
) -> None:
    """Build the service, then encode every question (run in a thread).

    Args:
        options: What ``probrank serve`` was asked for (posterior, strategy, seed, rounds,
            model, max_sessions and threads are read here).
        questions: The questions (read and checked before the server bound its port).
        source: Their source's name.
        store: The open database.
        preparation: Where the progress, the service or the error go.
        on_error: Called with the error when the preparation fails (the server stops).
    """
    try:
        preparation.stage("loading torch and the model")
        import torch

        from probrank.serve.judging import JudgingService
        from probrank.serve.project import Project
        from probrank.serve.sources import build_ranker, cached_encoder

        torch.set_num_threads(options.threads)
        if options.model is None:
            preparation.stage("warm-starting the ranker on MEDIQA (cached after the first time)")
        ranker = build_ranker(posterior=options.posterior, seed=options.seed, model=options.model)
        encoder = cached_encoder(ranker.encoder, progress=False) if options.model else None
        preparation.stage("checking the database")
        project = Project(
            questions, ranker, source=source, seed=options.seed,
            strategy=options.strategy, rounds=options.rounds, encoder=encoder,
        )  # fmt: skip
        service = JudgingService(project, store, max_sessions=options.max_sessions)
    except BaseException as exc:
        preparation.fail(exc)
        if on_error is not None:
            on_error(exc)
        return
    preparation.ready(service)
    for item in project.questions:  # the pages are served meanwhile
        try:
            project.features(item.qid)
        except Exception as exc:
            _log.warning("question %r could not be encoded: %s", item.qid, exc)
    preparation.freeze()  # what start-up built stays out of every collection
