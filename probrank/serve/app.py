"""The judging web application (Starlette): server-rendered pages, a little plain JavaScript.

Every route but ``/static/*`` and ``/health`` needs a token (the query parameter ``token`` or
the header ``X-Probrank-Token``), looked up (hashed) in the database at every request, so a
revoked link is refused at once. An annotator's token (``probrank annotators add``) judges
only as that annotator: a name in a form or query that is not theirs is refused (403), and it
opens neither ``/admin``, nor the exports, nor another annotator's pages. The admin token
(printed by ``probrank serve``) opens ``/admin``, the exports and every ranking, and judges
nothing.

======================  ===============================================================  =========
``GET /``               the questions, the annotator's progress, the instructions        both
``GET /judge/{qid}``    the judging page (JSON state with ``Accept: application/json``)  annotator
``POST /judge/{qid}``   one judgement (a form); answered after the commit                annotator
``POST /undo/{qid}``    take back one's last answer on the question (an undo event)      annotator
``GET /ranking/{qid}``  posterior ranking with 90% intervals (own; admin: anyone's,      both
                        or everyone's together)
``GET /admin``          annotators, per-question progress, agreement                     admin
``GET /export.jsonl``   every event (undo events and retracted answers marked) as        admin
``GET /export.csv``     JSON lines or CSV, or the answers that stand in trec_eval's
``GET /export.prefs``   preference format; ``?annotator=`` / ``?question=`` filter
======================  ===============================================================  =========

While the server prepares its model (:mod:`~probrank.serve.startup`), pages that need it
answer 503 with a page that says what is being prepared, with its progress, and refreshes
itself every 2 seconds; ``/admin`` and the exports work from the database at once.

Bad requests get a page (or JSON) that says what is wrong, with a 4xx status (see
:mod:`~probrank.serve.errors`). Every text from the data is HTML-escaped (Jinja2
autoescaping); question ids are percent-encoded in every link and form action.
"""

from __future__ import annotations

import csv
import io
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlencode

import anyio.to_thread
from anyio import CapacityLimiter
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from probrank._options import parse_enum
from probrank.exceptions import InputDataError
from probrank.serve.agreement import agreement
from probrank.serve.errors import BadRequest, Forbidden, NotFound, RequestError
from probrank.serve.exports import prefs_lines
from probrank.serve.http import MAX_BODY, header_timeout_protocol, read_form, render_markdown
from probrank.serve.identity import Identity, Role, check_name
from probrank.serve.limits import ROUND_WORKERS
from probrank.serve.plot import ranking_svg
from probrank.serve.startup import Preparation
from probrank.serve.store import Choice, Judgement, JudgementStore

if TYPE_CHECKING:  # torch loads with the service, in the background, not with the pages
    from probrank.serve.judging import JudgingService

__all__ = ["MAX_BODY", "create_app", "header_timeout_protocol"]

_FIELDS = ("round", "left", "right", "jid", "choice")
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
}
_STATIC = {
    "judging.js": "text/javascript; charset=utf-8",
    "judge.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
_EXPORT_COLUMNS = (
    "id", "seq", "annotator", "qid", "round", "left", "right", "choice", "winner", "loser",
    "created", "retracts", "retracted", "retracted_by",
)  # fmt: skip
_log = logging.getLogger("probrank.serve")

Handler = Callable[[Request], Awaitable[Response]]
_T = TypeVar("_T")


class NotReady(RequestError):
    """The model is being prepared (503, a page that refreshes itself)."""

    status = 503
    title = "Preparing"


def check_annotator(name: str) -> str:
    """``name`` NFC-normalised if it is a valid annotator name, else
    :class:`~probrank.serve.errors.BadRequest`."""
    try:
        return check_name(name)
    except InputDataError as exc:
        raise BadRequest(exc.reason) from None


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def _small_int(value: str, what: str) -> int:
    if not (value.isascii() and value.isdigit() and len(value) <= 9):
        raise BadRequest(f"{what} must be a non-negative integer, got {value[:40]!r}")
    return int(value)


def _choice(value: str) -> Choice:
    try:
        choice = parse_enum(Choice, value, "choice")
    except InputDataError as exc:
        raise BadRequest(exc.reason) from None
    if choice is Choice.UNDO:
        raise BadRequest("choice 'undo' is not an answer: use the undo button")
    return choice


@dataclass(frozen=True)
class _Caller:
    """The identity of a request and its token (for the links of its pages)."""

    identity: Identity
    token: str

    @property
    def admin(self) -> bool:
        return self.identity.role is Role.ADMIN

    def url(self, path: str, *segments: str, **params: object) -> str:
        """``path`` + percent-encoded ``segments``, with the token and non-empty ``params``."""
        full = path + "".join("/" + quote(str(s), safe="") for s in segments)
        query = {"token": self.token}
        query.update({k: str(v) for k, v in params.items() if v not in (None, "")})
        return f"{full}?{urlencode(query)}"


class _Pages:
    """The route handlers over one preparation (its service once ready) and database."""

    STATIC: dict[str, str] = _STATIC
    """The files ``/static/{name}`` serves, with their media types."""

    def __init__(
        self, preparation: Preparation, store: JudgementStore, instructions: str | None
    ) -> None:
        self.preparation = preparation
        self.store = store
        self.instructions = Markup(render_markdown(instructions)) if instructions else None
        self.env = Environment(
            loader=PackageLoader("probrank.serve", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
        )
        self._rounds = CapacityLimiter(ROUND_WORKERS)

    async def work(self, func: Callable[..., _T], *args: Any) -> _T:
        """``func(*args)`` on a worker thread of the judging service's work: at most
        :data:`~probrank.serve.limits.ROUND_WORKERS` at once, the others waiting in arrival
        order (a round that has started runs to its end even if the client goes away)."""
        return await anyio.to_thread.run_sync(func, *args, limiter=self._rounds)

    # -- who and what -----------------------------------------------------------------------

    def caller(self, request: Request) -> _Caller:
        token = request.query_params.get("token") or request.headers.get("x-probrank-token")
        if not token:
            raise Forbidden(
                "this server needs a token: open your own link (an annotator's from "
                "`probrank annotators add`, the admin's printed by `probrank serve`)"
            )
        identity = self.store.identify(token)
        if identity is None:
            raise Forbidden("this link's token is not valid here (revoked, or another project's)")
        return _Caller(identity, token)

    def annotator_of(self, request: Request, caller: _Caller) -> str:
        """The caller's own name; a different ``?annotator=`` is refused."""
        if caller.admin:
            raise Forbidden(
                "the admin link does not judge: add yourself as an annotator "
                "(probrank annotators add NAME) and use that link"
            )
        name = str(caller.identity.annotator)
        asked = request.query_params.get("annotator")
        if asked and check_annotator(asked) != name:
            raise Forbidden(f"this link judges as {name!r} only, not as {asked[:60]!r}")
        return name

    def viewed(self, request: Request, caller: _Caller) -> str | None:
        """Whose pages: an annotator's own; the admin's ``?annotator=`` (None: everyone)."""
        asked = request.query_params.get("annotator")
        if caller.admin:
            return check_annotator(asked) if asked else None
        return self.annotator_of(request, caller)

    def service(self) -> JudgingService:
        service = self.preparation.service
        if service is None:
            raise NotReady("the server is preparing its model")
        return service

    def page(
        self, template: str, caller: _Caller | None, status: int = 200, **context: Any
    ) -> HTMLResponse:
        context.setdefault("annotator", caller.identity.annotator if caller else None)
        context.setdefault("admin", caller is not None and caller.admin)
        context.setdefault("refresh", None)
        url = caller.url if caller is not None else (lambda path, *a, **k: path)
        text = self.env.get_template(template).render(url=url, **context)
        return HTMLResponse(text, status_code=status, headers=_HEADERS)

    def error(self, request: Request, exc: RequestError | InputDataError, status: int) -> Response:
        message = getattr(exc, "reason", str(exc))
        title = getattr(exc, "title", "Bad request")
        headers = {**_HEADERS, "Retry-After": "2"} if status == 503 else _HEADERS
        if _wants_json(request):
            body = {"ok": False, "status": status, "error": message}
            return JSONResponse(body, status_code=status, headers=headers)
        try:
            caller: _Caller | None = self.caller(request)
        except RequestError:
            caller = None
        if status == 503:
            response = self.page(
                "preparing.html", caller, status, title=title, message=message,
                progress=self.preparation.progress(), refresh=2,
            )  # fmt: skip
            response.headers["Retry-After"] = "2"
            return response
        back = None
        if caller is not None and not caller.admin and request.method == "POST":
            qid = request.path_params.get("qid")
            back = caller.url("/judge", qid) if qid else None
        return self.page("error.html", caller, status, title=title, message=message, back=back)

    def guarded(self, handler: Callable[[Request, _Caller], Awaitable[Response]]) -> Handler:
        """``handler`` behind the token check, with errors turned into 4xx (503) pages."""

        async def endpoint(request: Request) -> Response:
            try:
                caller = self.caller(request)  # one indexed read, never behind a commit
                return await handler(request, caller)
            except RequestError as exc:
                return self.error(request, exc, exc.status)
            except InputDataError as exc:  # e.g. a database made with another model
                return self.error(request, exc, 409)

        return endpoint

    def open(self, handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestError as exc:
                return self.error(request, exc, exc.status)

        return endpoint

    # -- annotators' pages ------------------------------------------------------------------

    async def start_page(self, request: Request, caller: _Caller) -> Response:
        service = self.service()
        project = service.project
        annotator = None if caller.admin else self.annotator_of(request, caller)
        mine: dict[str, int] = {}
        if annotator is not None:
            mine = (await run_in_threadpool(self.store.counts, annotator)).get(annotator, {})
        todo = [item.qid for item in project.questions if item.qid not in mine]
        settings = project.ranker.settings
        return self.page(
            "start.html", caller, title="Questions", mine=mine, project=project,
            questions=project.questions, first=(todo or [project.questions[0].qid])[0],
            posterior=settings.posterior.value, strategy=project.strategy.value,
            instructions=self.instructions, answers=sum(mine.values()),
        )  # fmt: skip

    async def judge_page(self, request: Request, caller: _Caller) -> Response:
        service = self.service()
        qid = request.path_params["qid"]
        item = service.project.question(qid)
        annotator = self.annotator_of(request, caller)
        state = await self.work(service.state, annotator, qid)
        if _wants_json(request):
            return JSONResponse({"ok": True, "state": state.to_json()}, headers=_HEADERS)
        mine = (await run_in_threadpool(self.store.counts, annotator)).get(annotator, {})
        order = [q.qid for q in service.project.questions]
        return self.page(
            "judge.html", caller, title=f"Question {qid}", item=item, state=state,
            jid=uuid.uuid4().hex, undo_jid=uuid.uuid4().hex, rounds=service.project.rounds,
            next_qid=service.project.next_qid(qid), position=order.index(qid) + 1,
            count=len(order), started=len(mine), answers=sum(mine.values()),
            instructions=self.instructions,
        )  # fmt: skip

    async def judge(self, request: Request, caller: _Caller) -> Response:
        from probrank.serve.judging import Submission, check_judgement_id

        service = self.service()
        qid = request.path_params["qid"]
        item = service.project.question(qid)
        annotator = self.annotator_of(request, caller)
        fields = await read_form(request, fields=2 * (len(_FIELDS) + 1))
        if "annotator" in fields and check_annotator(fields["annotator"]) != annotator:
            raise Forbidden(f"this link judges as {annotator!r} only")
        missing = [name for name in _FIELDS if name not in fields]
        if missing:
            raise BadRequest(f"the form lacks {', '.join(missing)} (a stale or foreign form?)")
        left = _small_int(fields["left"], "left")
        right = _small_int(fields["right"], "right")
        if left >= len(item) or right >= len(item) or left == right:
            raise BadRequest(
                f"({left}, {right}) is not a pair of two of question {qid!r}'s "
                f"{len(item)} candidates"
            )
        submission = Submission(
            id=check_judgement_id(fields["jid"]),
            annotator=annotator,
            qid=qid,
            round=_small_int(fields["round"], "round"),
            left=left,
            right=right,
            choice=_choice(fields["choice"]),
        )
        receipt = await self.work(service.submit, submission)
        return self._after(request, caller, qid, receipt)

    async def undo(self, request: Request, caller: _Caller) -> Response:
        from probrank.serve.judging import check_judgement_id

        service = self.service()
        qid = request.path_params["qid"]
        service.project.question(qid)
        annotator = self.annotator_of(request, caller)
        fields = await read_form(request, fields=6)
        missing = [name for name in ("jid", "round") if name not in fields]
        if missing:
            raise BadRequest(f"the form lacks {', '.join(missing)} (a stale or foreign form?)")
        receipt = await self.work(
            lambda: service.undo(
                annotator, qid, jid=check_judgement_id(fields["jid"]),
                round=_small_int(fields["round"], "round"),
            )
        )  # fmt: skip
        return self._after(request, caller, qid, receipt)

    def _after(self, request: Request, caller: _Caller, qid: str, receipt: Any) -> Response:
        next_url = caller.url("/judge", qid)
        if not _wants_json(request):
            return RedirectResponse(next_url, 303, headers=_HEADERS)
        body = {
            "ok": True,
            "duplicate": receipt.duplicate,
            "judgement": receipt.judgement.to_json(),
            "state": receipt.state.to_json(),
            "next_url": next_url,
        }
        return JSONResponse(body, headers=_HEADERS)

    async def ranking_page(self, request: Request, caller: _Caller) -> Response:
        service = self.service()
        qid = request.path_params["qid"]
        item = service.project.question(qid)
        whose = self.viewed(request, caller)
        ranking = await self.work(service.ranking, qid, whose)
        return self.page(
            "ranking.html", caller, title=f"Ranking of {qid}", item=item, ranking=ranking,
            svg=ranking_svg(ranking, item.candidate_ids),
        )  # fmt: skip

    # -- the admin's pages ------------------------------------------------------------------

    @staticmethod
    def _admin_only(caller: _Caller) -> None:
        if not caller.admin:
            raise Forbidden("this page is the admin's: an annotator's link does not open it")

    async def admin_page(self, request: Request, caller: _Caller) -> Response:
        self._admin_only(caller)
        store = self.store
        rows = await run_in_threadpool(lambda: store.judgements(live=True))  # one query
        counts: dict[str, dict[str, int]] = {name: {} for name in store.annotators()}
        per_question: dict[str, dict[str, int]] = {}
        for row in rows:
            mine = counts.setdefault(row.annotator, {})
            mine[row.qid] = mine.get(row.qid, 0) + 1
            by = per_question.setdefault(row.qid, {})
            by[row.annotator] = by.get(row.annotator, 0) + 1
        stats = await run_in_threadpool(agreement, rows)
        questions = [item.qid for item in self.preparation.questions]
        service = self.preparation.service
        sessions = {
            "live": service.sessions() if service else 0,
            "cap": service.max_sessions if service else 0,
            "evicted": service.evictions if service else 0,
        }
        return self.page(
            "admin.html", caller, title="Annotators", counts=counts, agreement=stats,
            total=len(rows), db=store.path.name, journal=store.journal_mode.upper(),
            fmt=_format_stat, questions=questions, per_question=per_question,
            progress=self.preparation.progress(), sessions=sessions,
        )  # fmt: skip

    def _selected(self, request: Request, caller: _Caller) -> list[Judgement]:
        self._admin_only(caller)
        annotator = request.query_params.get("annotator") or None
        qid = request.query_params.get("question") or None
        return self.store.judgements(
            annotator=check_annotator(annotator) if annotator else None, qid=qid
        )

    def _export(self, body: str, kind: str, name: str) -> Response:
        headers = {**_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'}
        return Response(body.encode("utf-8"), media_type=kind, headers=headers)

    async def export_jsonl(self, request: Request, caller: _Caller) -> Response:
        self._admin_only(caller)
        annotator = request.query_params.get("annotator") or None
        body = await run_in_threadpool(
            lambda: self.store.export_jsonl(
                annotator=check_annotator(annotator) if annotator else None,
                qid=request.query_params.get("question") or None,
            )
        )
        return self._export(body, "application/x-ndjson; charset=utf-8", "judgements.jsonl")

    async def export_csv(self, request: Request, caller: _Caller) -> Response:
        body = await run_in_threadpool(lambda: _csv(self._selected(request, caller)))
        return self._export(body, "text/csv; charset=utf-8", "judgements.csv")

    async def export_prefs(self, request: Request, caller: _Caller) -> Response:
        body = await run_in_threadpool(
            lambda: "".join(prefs_lines(j for j in self._selected(request, caller) if j.live))
        )
        return self._export(body, "text/plain; charset=utf-8", "judgements.prefs")

    # -- open routes and fallbacks ----------------------------------------------------------

    def application(self, routes: list[Route]) -> Starlette:
        """The ASGI application of the pages' ``routes``, with the routes every mode has (the
        static files and ``/health``, open) and the error pages."""
        return Starlette(
            routes=[
                *routes,
                Route("/static/{name}", self.open(self.static), methods=["GET"]),
                Route("/health", self.open(self.health), methods=["GET"]),
            ],
            exception_handlers={HTTPException: self.http_error, Exception: self.server_error},
        )

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.STATIC:
            raise NotFound(f"there is no static file {name[:60]!r}")
        text = resources.files("probrank.serve").joinpath("static", name).read_text("utf-8")
        return Response(text, media_type=self.STATIC[name], headers={"Cache-Control": "no-cache"})

    async def health(self, request: Request) -> Response:
        return PlainTextResponse("ok" if self.preparation.service is not None else "preparing")

    async def http_error(self, request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        detail = {404: "there is no such page", 405: "this page does not take that method"}
        error = RequestError(detail.get(status, str(getattr(exc, "detail", "bad request"))))
        error.title = "Not found" if status == 404 else "Bad request"
        return self.error(request, error, status)

    async def server_error(self, request: Request, exc: Exception) -> Response:
        _log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
        message = (
            "internal error (the server's log has the details); your last answer may not be saved"
        )
        if _wants_json(request):
            return JSONResponse({"ok": False, "status": 500, "error": message}, status_code=500)
        return PlainTextResponse(f"probrank serve: {message}", status_code=500)


def _csv(judgements: Iterable[Judgement]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=_EXPORT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for judgement in judgements:
        writer.writerow(judgement.to_json())
    return out.getvalue()


def _format_stat(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def create_app(
    target: JudgingService | Preparation,
    *,
    store: JudgementStore | None = None,
    instructions: str | None = None,
) -> Starlette:
    """The Starlette application.

    Args:
        target: A ready service, or the preparation of one (:mod:`~probrank.serve.startup`).
        store: The database (default: the service's; needed with a preparation).
        instructions: Markdown instructions for the annotators (rendered safely).

    Returns:
        The ASGI application (run it with uvicorn; see :func:`probrank.serve.server.serve`).

    Raises:
        InputDataError: a preparation without a store.
    """
    if isinstance(target, Preparation):
        preparation = target
    else:
        preparation = Preparation(target.project.questions, service=target)
        store = store or target.store
    if store is None:
        raise InputDataError("create_app needs the database (store=) with a preparation")
    pages = _Pages(preparation, store, instructions)
    guarded = pages.guarded
    routes = [
        Route("/", guarded(pages.start_page), methods=["GET"]),
        Route("/judge/{qid}", guarded(pages.judge_page), methods=["GET"]),
        Route("/judge/{qid}", guarded(pages.judge), methods=["POST"]),
        Route("/undo/{qid}", guarded(pages.undo), methods=["POST"]),
        Route("/ranking/{qid}", guarded(pages.ranking_page), methods=["GET"]),
        Route("/admin", guarded(pages.admin_page), methods=["GET"]),
        Route("/export.jsonl", guarded(pages.export_jsonl), methods=["GET"]),
        Route("/export.csv", guarded(pages.export_csv), methods=["GET"]),
        Route("/export.prefs", guarded(pages.export_prefs), methods=["GET"]),
    ]
    return pages.application(routes)
