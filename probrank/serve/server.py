"""``probrank serve``: check the inputs, open the database, bind, print the links, serve.

The order is chosen so that bad input leaves nothing behind and the address comes at once:

1. the inputs are checked before any file is made: the questions are read (no torch needed),
   a ``--model`` folder must hold a saved ranker's manifest, the database file must be absent,
   empty or a probrank judgement database (another application's SQLite file is refused
   before anything is written);
2. the port is bound (127.0.0.1 unless ``host`` says otherwise), the database opened (made
   0600, migrated from the first version if need be), a new admin token made;
3. the addresses are printed (the admin link ``http://127.0.0.1:8765/admin?token=...``; each
   annotator has a link of their own from ``probrank annotators add``) and uvicorn serves;
4. torch, the ranker (or its warm start) and the features are prepared in a thread
   (:mod:`~probrank.serve.startup`): meanwhile the judging pages say "preparing" with the
   progress and refresh themselves; the admin page and the exports work at once. A failure of
   the preparation (a database made with another model, say) stops the server with that
   error, and a database made by this run with nothing in it is removed.

Nothing is replayed at start: each annotator's session is rebuilt from the database on its
first request. uvicorn runs with a header-read timeout (:data:`HEADER_TIMEOUT`: a connection
that has not sent a request's headers by then is closed) and keep-alive timeout.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from probrank.exceptions import InputDataError
from probrank.serve.heap import heap_thawed_on_exit
from probrank.serve.limits import DEFAULT_MAX_SESSIONS
from probrank.serve.settings import DEFAULT_DB, DEFAULT_PORT, ServeSettings

__all__ = [
    "DEFAULT_DB",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_PORT",
    "HEADER_TIMEOUT",
    "ServeSettings",
    "bind",
    "serve",
    "url_of",
    "uvicorn_logging_kept",
    "uvicorn_server",
]

HEADER_TIMEOUT = 10.0
"""Seconds a connection may take to send a request's headers before it is closed."""

KEEP_ALIVE = 5
"""Seconds an idle keep-alive connection is kept."""


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


def url_of(sock: socket.socket, path: str = "/", token: str | None = None) -> str:
    """The address of ``path`` on a bound socket (a wildcard host shown as loopback), with
    ``token`` in its query string."""
    host, port = sock.getsockname()[:2]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # pragma: no cover - getsockname gives numbers
        address = None
    if address is not None and address.is_unspecified:
        host = "127.0.0.1" if address.version == 4 else "::1"
        address = ipaddress.ip_address(host)
    shown = f"[{host}]" if address is not None and address.version == 6 else host
    query = "" if token is None else f"?token={token}"
    return f"http://{shown}:{port}{path}{query}"


_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")
"""The loggers an in-process ``uvicorn.Config`` touches (levels, handlers, propagation)."""


@contextmanager
def uvicorn_logging_kept() -> Iterator[None]:
    """Build and run an in-process uvicorn inside this block: uvicorn's own loggers are put
    back as they were afterwards.

    Pass ``log_config=None`` to ``uvicorn.Config`` as well: its default logging config goes
    through ``logging.config.dictConfig``, which closes *every* handler of the process (a
    notebook's, absl's holding the ``sys.stderr`` of its import, pytest's capture). With
    ``log_config=None`` uvicorn still sets its loggers' levels (``log_level``) and empties
    ``uvicorn.access`` (``access_log=False``); this block undoes that when the server stops.
    """
    import logging

    saved = []
    for name in _UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, list(logger.handlers), logger.propagate))
    try:
        yield
    finally:
        for logger, level, handlers, propagate in saved:
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate = propagate


def uvicorn_server(app: Any) -> Any:
    """A ``uvicorn.Server`` for ``app`` as ``probrank serve`` runs it: logging left alone
    (``log_config=None``; see :func:`uvicorn_logging_kept`), no access log, a header-read
    timeout (:data:`HEADER_TIMEOUT`) and a short keep-alive (:data:`KEEP_ALIVE`)."""
    import uvicorn

    from probrank.serve.http import header_timeout_protocol

    config = uvicorn.Config(
        app, log_config=None, log_level="warning", access_log=False, lifespan="off",
        timeout_graceful_shutdown=5, timeout_keep_alive=KEEP_ALIVE,
        http=header_timeout_protocol(HEADER_TIMEOUT),
    )  # fmt: skip
    return uvicorn.Server(config)


def _say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


def _say_access(out: TextIO, sock: socket.socket, db: Path) -> None:
    """The lines every mode prints on start: a warning when the socket listens beyond this
    machine, and how annotators get their links."""
    if not ipaddress.ip_address(sock.getsockname()[0]).is_loopback:
        _say(out, "probrank serve: listening beyond this machine: anyone who has a "
                  "link with its token can use it")  # fmt: skip
    _say(out, f"probrank serve: annotators' links: probrank annotators add NAME "
              f"--db {db} (links on {url_of(sock, '')}; --url for another "
              "address)")  # fmt: skip


def _check_model(model: str) -> None:
    """A saved ranker's folder (its manifest read as JSON; the weights load later)."""
    folder = Path(model)
    manifest = folder / "manifest.json"
    if not folder.is_dir():
        raise InputDataError("not a saved model: no such folder", path=folder)
    try:
        header: Any = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputDataError("not a saved probrank model: no manifest.json", path=folder) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputDataError(f"damaged manifest ({exc})", path=manifest) from None
    kind = header.get("model_class") if isinstance(header, dict) else None
    if kind != "InteractiveRanker":
        raise InputDataError(
            f"a saved {kind or 'unknown'} model, not an InteractiveRanker", path=folder
        )


def _read_instructions(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputDataError("no such file", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputDataError(f"cannot be read as UTF-8 text ({exc})", path=path) from None


def _questions(options: ServeSettings) -> tuple[list[Any], str]:
    from probrank.serve.sources import load_questions, load_trec_questions

    trec = (options.topics, options.run, options.documents)
    if any(trec):
        if not all(trec) or options.data is not None:
            raise InputDataError("TREC input needs --topics, --run and --docs, and no --data")
        return load_trec_questions(
            str(options.topics), str(options.run), str(options.documents), depth=options.depth
        )
    return load_questions(options.data or "liveqa-med")


def serve(options: ServeSettings, *, out: TextIO | None = None) -> None:
    """Run the judging server until interrupted.

    Args:
        options: What to serve and where.
        out: Where the addresses and the start-up lines go (default stdout).

    Raises:
        InputDataError: bad input (data, model, database, address), found before anything
            is written; or an error of the preparation (see the module docstring).
    """
    from probrank.serve.app import create_app
    from probrank.serve.schema import inspect_database
    from probrank.serve.startup import Preparation, prepare
    from probrank.serve.store import JudgementStore

    out = out or sys.stdout
    db = Path(options.db)
    if not db.parent.is_dir():  # before the data and the model are read
        raise InputDataError("the database's folder does not exist", path=db)
    questions, source = _questions(options)
    if options.model is not None:
        _check_model(options.model)
    instructions = _read_instructions(options.instructions) if options.instructions else None
    inspect_database(db)  # another application's file: refused before anything is written
    sock = bind(options.host, options.port)
    failure: list[BaseException] = []
    try:
        with JudgementStore(db) as store, uvicorn_logging_kept(), heap_thawed_on_exit():
            admin = store.issue_admin_token()
            store.announce_url(url_of(sock, ""))  # `annotators add` without --url uses it
            preparation = Preparation(questions)
            app = create_app(preparation, store=store, instructions=instructions)
            server = uvicorn_server(app)

            def stop(exc: BaseException) -> None:
                failure.append(exc)
                server.should_exit = True

            stored = store.count()
            if store.migrated:
                _say(out, "probrank serve: the database was made by an earlier probrank: "
                          "migrated; its shared token no longer works: give each annotator a "
                          f"link with `probrank annotators add NAME --db {db}`")  # fmt: skip
            _say(out, f"probrank serve: {len(questions)} questions from {source}; database "
                      f"{os.fspath(store.path)} ({stored} answers stored; sessions are rebuilt "
                      "from them on first use); preparing the model in the background")  # fmt: skip
            _say_access(out, sock, db)
            _say(out, f"probrank serve: open {url_of(sock, '/admin', admin)}")
            thread = threading.Thread(
                target=prepare, args=(options, questions, source, store, preparation),
                kwargs={"on_error": stop},
                name="probrank-serve-prepare", daemon=True,
            )  # fmt: skip
            thread.start()
            try:
                server.run(sockets=[sock])
            finally:
                preparation.stop()  # before the heap is thawed: no freeze after it
            if failure and store.created and store.count() == 0:
                _remove(store)
    finally:
        sock.close()
    if failure:
        raise failure[0]


def _remove(store: Any) -> None:
    """Close and delete a database this run made and left empty."""
    store.close()
    for path in (store.path, Path(f"{store.path}-wal"), Path(f"{store.path}-shm")):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
