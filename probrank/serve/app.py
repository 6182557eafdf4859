"""The judging web application (Starlette): server-rendered pages, a little plain JavaScript.

Routes (every one but ``/static/*`` and ``/health`` needs the project's token, as the query
parameter ``token`` or the header ``X-Probrank-Token``, compared in constant time):

======================  =====================================================================
``GET /``               questions, and a form to start judging under a name
``POST /start``         register the name, go to the first question
``GET /judge/{qid}``    the judging page of ``?annotator=NAME`` (JSON state with
                        ``Accept: application/json``)
``POST /judge/{qid}``   one judgement (an HTML form body); answered after the commit, with a
                        redirect to the next pair, or JSON for ``Accept: application/json``
``GET /ranking/{qid}``  candidates in posterior order with 90% credible intervals (one
                        annotator's with ``?annotator=NAME``, else everyone's)
``GET /admin``          annotators, their counts, agreement on repeated pairs
``GET /export.jsonl``   every judgement as JSON lines
``GET /export.prefs``   the judgements in trec_eval's preference format
======================  =====================================================================

Bad requests get a page (or JSON) that says what is wrong, with a 4xx status: no or a wrong
token (403), an unknown question or page (404), a stale form or a finished question (409), a
pair that was not offered or a malformed field (400), a body over :data:`MAX_BODY` bytes (413),
a body that is not ``application/x-www-form-urlencoded`` (415). Every text from the data is
HTML-escaped (Jinja2 autoescaping).
"""

from __future__ import annotations

import hmac
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
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
    StreamingResponse,
)
from starlette.routing import Route

from probrank._options import parse_enum
from probrank.exceptions import InputDataError
from probrank.serve.agreement import agreement
from probrank.serve.errors import (
    BadRequest,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    RequestError,
    UnsupportedMediaType,
)
from probrank.serve.exports import jsonl_lines, prefs_lines
from probrank.serve.judging import (
    JudgingService,
    Submission,
    check_annotator,
    check_judgement_id,
)
from probrank.serve.plot import ranking_svg
from probrank.serve.store import Choice

__all__ = ["MAX_BODY", "create_app"]

MAX_BODY = 16 * 1024
"""Largest request body accepted (bytes); a judgement form is about 200."""

_FORM = "application/x-www-form-urlencoded"
_FIELDS = ("annotator", "round", "left", "right", "jid", "choice")
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
_STATIC = {"judge.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
_log = logging.getLogger("probrank.serve")

Handler = Callable[[Request], Awaitable[Response]]


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def _small_int(value: str, what: str) -> int:
    if not (value.isascii() and value.isdigit() and len(value) <= 9):
        raise BadRequest(f"{what} must be a non-negative integer, got {value[:40]!r}")
    return int(value)


def _choice(value: str) -> Choice:
    try:
        return parse_enum(Choice, value, "choice")
    except InputDataError as exc:
        raise BadRequest(exc.reason) from None


async def _form(request: Request) -> dict[str, str]:
    """The fields of a bounded ``application/x-www-form-urlencoded`` body (each once)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != _FORM:
        raise UnsupportedMediaType(
            f"a judgement is sent as an HTML form ({_FORM}), not {kind or 'an untyped body'!r}"
        )
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        raise PayloadTooLarge(f"the request body is over {MAX_BODY} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise PayloadTooLarge(f"the request body is over {MAX_BODY} bytes")
    try:
        pairs = parse_qsl(
            body.decode("utf-8"), keep_blank_values=True, max_num_fields=2 * len(_FIELDS)
        )
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("the form is not valid UTF-8 form data or has too many fields") from None
    fields: dict[str, str] = {}
    for key, value in pairs:
        if key in fields:
            raise BadRequest(f"the form has the field {key[:40]!r} twice")
        fields[key] = value
    return fields


class _Pages:
    """The route handlers over one :class:`JudgingService`."""

    def __init__(self, service: JudgingService, token: str) -> None:
        self.service = service
        self.project = service.project
        self._token = token.encode()
        self.env = Environment(
            loader=PackageLoader("probrank.serve", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
        )

    # -- helpers ----------------------------------------------------------------------------

    def url(self, path: str, **params: object) -> str:
        """``path`` with the token and the non-empty ``params`` in its query string."""
        query = {"token": self._token.decode()}
        query.update({k: str(v) for k, v in params.items() if v not in (None, "")})
        return f"{path}?{urlencode(query)}"

    def check_token(self, request: Request) -> None:
        given = request.query_params.get("token") or request.headers.get("x-probrank-token")
        if not given:
            raise Forbidden(
                "this server needs the project's token: open the address it printed "
                "(http://HOST:PORT/?token=...)"
            )
        if not hmac.compare_digest(given.encode(), self._token):
            raise Forbidden("the token in this address is not this project's")

    def annotator(self, request: Request) -> str | None:
        """The ``annotator`` query parameter, checked (None when absent)."""
        name = request.query_params.get("annotator", "")
        return check_annotator(name) if name else None

    def required_annotator(self, request: Request) -> str:
        """The ``annotator`` query parameter, which must be there."""
        name = self.annotator(request)
        if name is None:
            raise BadRequest("say who is judging: start from the questions page")
        return name

    def page(
        self, template: str, request: Request, status: int = 200, **context: Any
    ) -> HTMLResponse:
        context.setdefault("annotator", None)
        text = self.env.get_template(template).render(url=self.url, **context)
        return HTMLResponse(text, status_code=status, headers=_HEADERS)

    def error(self, request: Request, exc: RequestError | InputDataError, status: int) -> Response:
        message = getattr(exc, "reason", str(exc))
        title = getattr(exc, "title", "Bad request")
        if _wants_json(request):
            body = {"ok": False, "status": status, "error": message}
            return JSONResponse(body, status_code=status, headers=_HEADERS)
        annotator = request.query_params.get("annotator")
        try:
            annotator = check_annotator(annotator) if annotator else None
        except RequestError:
            annotator = None
        back = None
        if request.method == "POST" and request.url.path.startswith("/judge/") and annotator:
            back = self.url(request.url.path, annotator=annotator)
        return self.page(
            "error.html", request, status, title=title, message=message, back=back,
            annotator=annotator,
        )  # fmt: skip

    def guarded(self, handler: Handler, *, token: bool = True) -> Handler:
        """``handler`` behind the token check, with errors turned into 4xx pages."""

        async def endpoint(request: Request) -> Response:
            try:
                if token:
                    self.check_token(request)
                return await handler(request)
            except RequestError as exc:
                return self.error(request, exc, exc.status)
            except InputDataError as exc:  # e.g. a database made with another model
                return self.error(request, exc, 409)

        return endpoint

    # -- pages --------------------------------------------------------------------------------

    async def start_page(self, request: Request) -> Response:
        annotator = self.annotator(request)
        mine: Mapping[str, int] = {}
        if annotator is not None:
            counts = await run_in_threadpool(self.service.counts)
            mine = counts.get(annotator, {})
        settings = self.project.ranker.settings
        return self.page(
            "start.html", request, title="Questions", annotator=annotator, mine=mine,
            project=self.project, questions=self.project.questions,
            posterior=settings.posterior.value, strategy=self.project.strategy.value,
        )  # fmt: skip

    async def start(self, request: Request) -> Response:
        fields = await _form(request)
        annotator = check_annotator(fields.get("annotator", "").strip())
        await run_in_threadpool(self.service.store.add_annotator, annotator)
        counts = (await run_in_threadpool(self.service.counts)).get(annotator, {})
        todo = [item.qid for item in self.project.questions if item.qid not in counts]
        first = todo[0] if todo else self.project.questions[0].qid
        return RedirectResponse(self.url(f"/judge/{first}", annotator=annotator), 303)

    async def judge_page(self, request: Request) -> Response:
        qid = request.path_params["qid"]
        item = self.project.question(qid)
        annotator = self.required_annotator(request)
        state = await run_in_threadpool(self.service.state, annotator, qid)
        if _wants_json(request):
            return JSONResponse({"ok": True, "state": state.to_json()}, headers=_HEADERS)
        order = [q.qid for q in self.project.questions]
        return self.page(
            "judge.html", request, title=f"Question {qid}", item=item, state=state,
            annotator=annotator, jid=uuid.uuid4().hex, rounds=self.project.rounds,
            next_qid=self.project.next_qid(qid), position=order.index(qid) + 1, count=len(order),
        )  # fmt: skip

    async def judge(self, request: Request) -> Response:
        qid = request.path_params["qid"]
        item = self.project.question(qid)
        fields = await _form(request)
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
            annotator=check_annotator(fields["annotator"]),
            qid=qid,
            round=_small_int(fields["round"], "round"),
            left=left,
            right=right,
            choice=_choice(fields["choice"]),
        )
        receipt = await run_in_threadpool(self.service.submit, submission)
        next_url = self.url(f"/judge/{qid}", annotator=submission.annotator)
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

    async def ranking_page(self, request: Request) -> Response:
        qid = request.path_params["qid"]
        item = self.project.question(qid)
        annotator = self.annotator(request)
        ranking = await run_in_threadpool(self.service.ranking, qid, annotator)
        return self.page(
            "ranking.html", request, title=f"Ranking of {qid}", item=item, ranking=ranking,
            svg=ranking_svg(ranking, item.candidate_ids), annotator=annotator,
        )  # fmt: skip

    async def admin_page(self, request: Request) -> Response:
        store = self.service.store
        counts = await run_in_threadpool(self.service.counts)
        stats = await run_in_threadpool(lambda: agreement(store.judgements()))
        return self.page(
            "admin.html", request, title="Annotators", counts=counts, agreement=stats,
            total=sum(sum(row.values()) for row in counts.values()), db=store.path.name,
            journal=store.journal_mode.upper(), fmt=_format_stat,
        )  # fmt: skip

    async def export_jsonl(self, request: Request) -> Response:
        judgements = await run_in_threadpool(self.service.store.judgements)
        return StreamingResponse(
            jsonl_lines(judgements),
            media_type="application/x-ndjson; charset=utf-8",
            headers={**_HEADERS, "Content-Disposition": 'attachment; filename="judgements.jsonl"'},
        )

    async def export_prefs(self, request: Request) -> Response:
        judgements = await run_in_threadpool(self.service.store.judgements)
        return StreamingResponse(
            prefs_lines(judgements),
            media_type="text/plain; charset=utf-8",
            headers={**_HEADERS, "Content-Disposition": 'attachment; filename="judgements.prefs"'},
        )

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            raise NotFound(f"there is no static file {name[:60]!r}")
        text = resources.files("probrank.serve").joinpath("static", name).read_text("utf-8")
        return Response(text, media_type=_STATIC[name], headers={"Cache-Control": "no-cache"})

    async def health(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    # -- fallbacks ------------------------------------------------------------------------------

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


def _format_stat(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def create_app(service: JudgingService, *, token: str | None = None) -> Starlette:
    """The Starlette application over ``service``.

    Args:
        service: The sessions, project and database.
        token: The project's secret token (default: the database's).

    Returns:
        The ASGI application (run it with uvicorn; see :func:`probrank.serve.server.serve`).
    """
    pages = _Pages(service, token or service.store.token)
    guarded = pages.guarded
    routes = [
        Route("/", guarded(pages.start_page), methods=["GET"]),
        Route("/start", guarded(pages.start), methods=["POST"]),
        Route("/judge/{qid}", guarded(pages.judge_page), methods=["GET"]),
        Route("/judge/{qid}", guarded(pages.judge), methods=["POST"]),
        Route("/ranking/{qid}", guarded(pages.ranking_page), methods=["GET"]),
        Route("/admin", guarded(pages.admin_page), methods=["GET"]),
        Route("/export.jsonl", guarded(pages.export_jsonl), methods=["GET"]),
        Route("/export.prefs", guarded(pages.export_prefs), methods=["GET"]),
        Route("/static/{name}", guarded(pages.static, token=False), methods=["GET"]),
        Route("/health", guarded(pages.health, token=False), methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: pages.http_error, Exception: pages.server_error},
    )
