"""``probrank serve``: load the questions and the ranker, open the database, replay it, serve.

The server binds 127.0.0.1 unless another address is asked for explicitly (``host``), prints
the address with the project's token (``http://127.0.0.1:8765/?token=...``) once everything is
ready, and runs uvicorn (one process; judgement rounds run in its thread pool) until Ctrl-C or
SIGTERM.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from probrank.exceptions import InputDataError

__all__ = ["DEFAULT_DB", "DEFAULT_PORT", "ServeOptions", "bind", "serve", "url_of"]

DEFAULT_DB = "probrank-judgements.sqlite"
"""The database file when none is named."""

DEFAULT_PORT = 8765
"""The port when none is named."""


@dataclass(frozen=True)
class ServeOptions:
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


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``.

    Raises:
        InputDataError: an address that does not resolve, a port in use or not allowed.
    """
    if not 0 <= port <= 65535:
        raise InputDataError(f"--port must be 0 to 65535, got {port}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise InputDataError(f"--host {host!r} is not an address here ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = (
            "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
        )
        raise InputDataError(f"port {port} on {host} {reason}; pass another --port") from None
    return sock


def url_of(sock: socket.socket, token: str) -> str:
    """The judging page's address for a bound socket (a wildcard host shown as loopback)."""
    host, port = sock.getsockname()[:2]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # pragma: no cover - getsockname gives numbers
        address = None
    if address is not None and address.is_unspecified:
        host = "127.0.0.1" if address.version == 4 else "::1"
        address = ipaddress.ip_address(host)
    shown = f"[{host}]" if address is not None and address.version == 6 else host
    return f"http://{shown}:{port}/?token={token}"


def _say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


def serve(options: ServeOptions, *, out: TextIO | None = None) -> None:
    """Run the judging server until interrupted.

    Args:
        options: What to serve and where.
        out: Where the address and the start-up lines go (default stdout).

    Raises:
        InputDataError: bad input (data, model, database, address); see the loaders.
    """
    import torch
    import uvicorn

    from probrank.serve.app import create_app
    from probrank.serve.judging import JudgingService
    from probrank.serve.project import Project
    from probrank.serve.sources import (
        build_ranker,
        cached_encoder,
        load_questions,
        load_trec_questions,
    )
    from probrank.serve.store import JudgementStore

    out = out or sys.stdout
    if not Path(options.db).parent.is_dir():  # before the data and the model are loaded
        raise InputDataError("the database's folder does not exist", path=options.db)
    torch.set_num_threads(options.threads)
    trec = (options.topics, options.run, options.documents)
    if any(trec):
        if not all(trec) or options.data is not None:
            raise InputDataError("TREC input needs --topics, --run and --docs, and no --data")
        questions, source = load_trec_questions(
            str(options.topics), str(options.run), str(options.documents), depth=options.depth
        )
    else:
        questions, source = load_questions(options.data or "liveqa-med")
    sock = bind(options.host, options.port)  # refuse a busy port before the slow part
    try:
        with JudgementStore(options.db) as store:
            ranker = build_ranker(
                posterior=options.posterior, seed=options.seed, model=options.model
            )
            encoder = cached_encoder(ranker.encoder) if options.model else None
            project = Project(
                questions, ranker, source=source, seed=options.seed, strategy=options.strategy,
                rounds=options.rounds, encoder=encoder,
            )  # fmt: skip
            project.encode()
            service = JudgingService(project, store)
            replayed = service.rebuild()
            app = create_app(service)
            _say(out, f"probrank serve: {project}; database {os.fspath(store.path)} "
                      f"({replayed} answers replayed)")  # fmt: skip
            if not ipaddress.ip_address(sock.getsockname()[0]).is_loopback:
                _say(out, "probrank serve: listening beyond this machine: anyone who has the "
                          "address with its token can judge")  # fmt: skip
            _say(out, f"probrank serve: open {url_of(sock, store.token)}")
            config = uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="off",
                timeout_graceful_shutdown=5,
            )  # fmt: skip
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
