"""The settings of ``probrank serve`` (:class:`ServeSettings`), in a module of their own so
that the server and its background preparation (:mod:`probrank.serve.startup`) both read them
without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

from probrank.serve.limits import DEFAULT_MAX_SESSIONS

__all__ = ["DEFAULT_DB", "DEFAULT_PORT", "ServeSettings"]

DEFAULT_DB = "probrank-judgements.sqlite"
"""The database file when none is named."""

DEFAULT_PORT = 8765
"""The port when none is named."""


@dataclass(frozen=True)
class ServeSettings:
    """What ``probrank serve`` was asked for.

    Attributes:
        data: A data set name or a ``.jsonl`` / ``.csv`` file (None with the TREC inputs,
            else ``liveqa-med``).
        topics: TREC topics file (with ``run`` and ``documents``).
        run: TREC run whose top documents are judged.
        documents: The documents' texts (TREC ``<DOC>`` file or JSON lines).
        depth: Documents per topic from the run.
        db: The SQLite database.
        host: Address to bind.
        port: Port (0: any free one).
        posterior: Posterior kind (default: laplace, or the saved model's).
        strategy: Pair strategy (default: the ranker's).
        seed: Seed of the warm start and of every session.
        rounds: Judgements per annotator and question (None: until the pairs run out).
        model: A saved InteractiveRanker folder.
        threads: Torch intra-op threads (default 1).
        max_sessions: Sessions kept in memory (least recently used ones are rebuilt from
            the database when asked for again).
        instructions: A Markdown file of instructions for the annotators.
    """

    data: str | None = None
    topics: str | None = None
    run: str | None = None
    documents: str | None = None
    depth: int = 20
    db: str = DEFAULT_DB
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    posterior: str | None = None
    strategy: str | None = None
    seed: int = 0
    rounds: int | None = None
    model: str | None = None
    threads: int = 1
    max_sessions: int = DEFAULT_MAX_SESSIONS
    instructions: str | None = None
