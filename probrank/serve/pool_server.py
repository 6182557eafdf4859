"""``probrank serve --pool``: check the inputs, open the database, bind, print the links, serve.

The order of :func:`probrank.serve.server.serve`, without a background preparation (the
pooling strategies need no torch and start in milliseconds):

1. the inputs are checked before any file is made: the runs, topics and documents are read
   and every pooled document must have a text
   (:func:`~probrank.serve.pool_source.load_pool_topics`), the strategy must be known, the
   database file must be absent, empty or a probrank judgement database;
2. the port is bound, the database opened, its topics checked (a database made for other
   topics, or by the pairwise pages, is refused; a database made by this run is then
   removed), a new admin token made;
3. the addresses are printed (the admin link; each annotator has a link of their own from
   ``probrank annotators add``) and uvicorn serves until interrupted.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from probrank.exceptions import InputDataError
from probrank.serve.settings import DEFAULT_DB, DEFAULT_PORT

__all__ = ["PoolServeSettings", "serve_pool"]


@dataclass(frozen=True)
class PoolServeSettings:
    """What ``probrank serve --pool`` was asked for.

    Attributes:
        runs: A folder of TREC runs whose pool is judged.
        topics: TREC topics file.
        documents: The documents' texts (TREC ``<DOC>`` file or JSON lines).
        depth: Documents per run and topic in the pool.
        strategy: The pooling strategy (:class:`~probrank.pooling.StrategyName`).
        seed: Seed of the strategy's choices.
        rounds: Judgements per topic before it is done (None: the whole pool).
        db: The SQLite database.
        host: Address to bind.
        port: Port (0: any free one).
        instructions: A Markdown file of instructions for the annotators.
    """

    runs: str
    topics: str
    documents: str
    depth: int = 20
    strategy: str = "bayesian"
    seed: int = 0
    rounds: int | None = None
    db: str = DEFAULT_DB
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    instructions: str | None = None


def serve_pool(options: PoolServeSettings, *, out: TextIO | None = None) -> None:
    """Run the pool judging server until interrupted.

    Args:
        options: What to serve and where.
        out: Where the addresses and the start-up lines go (default stdout).

    Raises:
        InputDataError: bad input (runs, topics, documents, strategy, database, address),
            found before anything is written, or a database made for other topics.
    """
    from probrank.pooling.strategies import make_strategy
    from probrank.serve.heap import freeze_startup_objects, heap_thawed_on_exit
    from probrank.serve.pool_app import create_pool_app
    from probrank.serve.pool_judging import PoolService
    from probrank.serve.pool_source import load_pool_topics
    from probrank.serve.pool_store import PoolStore
    from probrank.serve.schema import inspect_database
    from probrank.serve.server import (
        _read_instructions,
        _remove,
        _say,
        _say_access,
        bind,
        url_of,
        uvicorn_logging_kept,
        uvicorn_server,
    )

    out = out or sys.stdout
    db = Path(options.db)
    if not db.parent.is_dir():
        raise InputDataError("the database's folder does not exist", path=db)
    strategy = make_strategy(options.strategy)  # an unknown name: before the data is read
    topics = load_pool_topics(options.runs, options.topics, options.documents, depth=options.depth)
    instructions = _read_instructions(options.instructions) if options.instructions else None
    inspect_database(db)
    sock = bind(options.host, options.port)
    try:
        store = PoolStore(db)
        try:
            service = PoolService(
                topics, store, strategy=strategy.name.value, seed=options.seed,
                rounds=options.rounds, source=os.fspath(options.runs),
            )  # fmt: skip
        except BaseException:
            empty = store.base.created and store.count() == 0
            store.close()
            if empty:  # made by this run for nothing: leave no file behind
                _remove(store.base)
            raise
        with store, uvicorn_logging_kept(), heap_thawed_on_exit():
            admin = store.base.issue_admin_token()
            store.base.announce_url(url_of(sock, ""))
            app = create_pool_app(service, instructions=instructions, depth=options.depth)
            server = uvicorn_server(app)
            documents = sum(len(topic) for topic in topics)
            runs = topics[0].pool.num_runs
            _say(out, f"probrank serve: pool of {runs} runs from {options.runs} (depth "
                      f"{options.depth}): {len(topics)} topics, {documents} documents; "
                      f"strategy {strategy.name.value}; database {os.fspath(store.path)} "
                      f"({store.count()} judgements stored)")  # fmt: skip
            _say_access(out, sock, db)
            _say(out, f"probrank serve: qrels: {url_of(sock, '/export.qrels', admin)}")
            _say(out, f"probrank serve: open {url_of(sock, '/admin', admin)}")
            freeze_startup_objects()  # the pool and the model: out of every collection
            server.run(sockets=[sock])
    finally:
        sock.close()
