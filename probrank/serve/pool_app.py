"""The pages of ``probrank serve --pool`` (Starlette): graded judging of single documents.

The same machinery as the pairwise pages (:mod:`~probrank.serve.app`): every route but
``/static/*`` and ``/health`` needs a token looked up in the database at every request, an
annotator's token judges only as that annotator, the admin token opens ``/admin`` and the
exports and judges nothing; bounded forms, security headers, errors as pages (or JSON) with a
4xx status; every text from the data is HTML-escaped.

=======================  ==========================================================  =========
``GET /``                the topics, their pools' progress, the annotator's own       both
``GET /judge/{qid}``     the document to judge (JSON state with ``Accept:             annotator
                         application/json``)
``POST /judge/{qid}``    one graded judgement (``jid``, ``docno``, ``grade``);        annotator
                         answered after the commit
``POST /undo/{qid}``     take back one's last judgement on the topic (``jid``,        annotator
                         ``target``: the judgement's id)
``GET /admin``           annotators, per-topic progress, the download links           admin
``GET /export.qrels``    the judgements that stand as TREC qrels (``qid 0 docno       admin
                         grade``, judging order); ``?annotator=`` / ``?question=``
``GET /export.jsonl``    every event (undo events and retracted judgements marked)    admin
=======================  ==========================================================  =========
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from probrank.serve.app import _HEADERS, _Caller, _Pages, _wants_json, check_annotator
from probrank.serve.errors import BadRequest, Forbidden
from probrank.serve.http import read_form
from probrank.serve.pool_judging import (
    GRADES,
    PoolReceipt,
    PoolService,
    PoolSubmission,
    check_grade,
    check_judgement_id,
)
from probrank.serve.pool_store import qrels_lines
from probrank.serve.startup import Preparation

__all__ = ["create_pool_app"]

_STATIC = {
    "judging.js": "text/javascript; charset=utf-8",
    "pool_judge.js": "text/javascript; charset=utf-8",
    "pool.css": "text/css; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
_TEMPLATES = {"error.html": "pool_error.html"}


class _PoolPages(_Pages):
    """The route handlers over one :class:`~probrank.serve.pool_judging.PoolService`."""

    STATIC = _STATIC

    def __init__(self, service: PoolService, instructions: str | None, depth: int) -> None:
        super().__init__(Preparation(), service.store.base, instructions)
        self.pool = service
        self.depth = depth

    def page(
        self, template: str, caller: _Caller | None, status: int = 200, **context: Any
    ) -> HTMLResponse:
        return super().page(_TEMPLATES.get(template, template), caller, status, **context)

    # -- annotators' pages ------------------------------------------------------------------

    def _mine(self, annotator: str | None) -> dict[str, int]:
        if annotator is None:
            return {}
        return self.pool.store.counts().get(annotator, {})

    async def start_page(self, request: Request, caller: _Caller) -> Response:
        annotator = None if caller.admin else self.annotator_of(request, caller)
        mine = await run_in_threadpool(self._mine, annotator)
        progress = await run_in_threadpool(self.pool.progress)
        todo = [row["qid"] for row in progress if not row["done"]]
        return self.page(
            "pool_start.html", caller, title="Topics", topics=self.pool.topics,
            queries={t.qid: t.query for t in self.pool.topics}, progress=progress, mine=mine,
            first=(todo or [progress[0]["qid"]])[0], answers=sum(mine.values()),
            source=self.pool.source, depth=self.depth, strategy=self.pool.strategy.name.value,
            instructions=self.instructions,
        )  # fmt: skip

    async def judge_page(self, request: Request, caller: _Caller) -> Response:
        qid = request.path_params["qid"]
        topic = self.pool.topic(qid)
        annotator = self.annotator_of(request, caller)
        state = await run_in_threadpool(self.pool.state, annotator, qid)
        if _wants_json(request):
            return JSONResponse({"ok": True, "state": state.to_json()}, headers=_HEADERS)
        mine = await run_in_threadpool(self._mine, annotator)
        order = [t.qid for t in self.pool.topics]
        return self.page(
            "pool_judge.html", caller, title=f"Topic {qid}", topic=topic, state=state,
            jid=uuid.uuid4().hex, undo_jid=uuid.uuid4().hex, rounds=self.pool.rounds,
            next_qid=self.pool.next_qid(qid), position=order.index(qid) + 1, count=len(order),
            started=len(mine), answers=sum(mine.values()), grades=GRADES,
            instructions=self.instructions,
        )  # fmt: skip

    async def judge(self, request: Request, caller: _Caller) -> Response:
        qid = request.path_params["qid"]
        self.pool.topic(qid)
        annotator = self.annotator_of(request, caller)
        fields = await read_form(request, fields=8)
        if "annotator" in fields and check_annotator(fields["annotator"]) != annotator:
            raise Forbidden(f"this link judges as {annotator!r} only")
        missing = [name for name in ("jid", "docno", "grade") if name not in fields]
        if missing:
            raise BadRequest(f"the form lacks {', '.join(missing)} (a stale or foreign form?)")
        submission = PoolSubmission(
            id=check_judgement_id(fields["jid"]),
            annotator=annotator,
            qid=qid,
            docno=fields["docno"],
            grade=check_grade(fields["grade"]),
        )
        receipt = await run_in_threadpool(self.pool.submit, submission)
        return self._answered(request, caller, qid, receipt)

    async def undo(self, request: Request, caller: _Caller) -> Response:
        qid = request.path_params["qid"]
        self.pool.topic(qid)
        annotator = self.annotator_of(request, caller)
        fields = await read_form(request, fields=6)
        missing = [name for name in ("jid", "target") if name not in fields]
        if missing:
            raise BadRequest(f"the form lacks {', '.join(missing)} (a stale or foreign form?)")
        jid = check_judgement_id(fields["jid"])
        receipt = await run_in_threadpool(
            lambda: self.pool.undo(annotator, qid, jid=jid, target=fields["target"])
        )
        return self._answered(request, caller, qid, receipt)

    def _answered(
        self, request: Request, caller: _Caller, qid: str, receipt: PoolReceipt
    ) -> Response:
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

    # -- the admin's pages ------------------------------------------------------------------

    async def admin_page(self, request: Request, caller: _Caller) -> Response:
        self._admin_only(caller)
        counts = await run_in_threadpool(self.pool.store.counts)
        progress = await run_in_threadpool(self.pool.progress)
        check = await run_in_threadpool(self.pool.explored_check)
        store = self.pool.store.base
        return self.page(
            "pool_admin.html", caller, title="Annotators", counts=counts, progress=progress,
            total=sum(row["judged"] for row in progress), db=store.path.name,
            journal=store.journal_mode.upper(), strategy=self.pool.strategy.name.value,
            check=check,
        )  # fmt: skip

    def _chosen(self, request: Request, caller: _Caller) -> list[Any]:
        self._admin_only(caller)
        annotator = request.query_params.get("annotator") or None
        qid = request.query_params.get("question") or None
        return self.pool.store.judgements(
            annotator=check_annotator(annotator) if annotator else None, qid=qid
        )

    async def export_qrels(self, request: Request, caller: _Caller) -> Response:
        rows = await run_in_threadpool(self._chosen, request, caller)
        body = "".join(qrels_lines(rows))
        return self._export(body, "text/plain; charset=utf-8", "judged.qrels")

    async def export_pool_jsonl(self, request: Request, caller: _Caller) -> Response:
        rows = await run_in_threadpool(self._chosen, request, caller)
        body = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in rows)
        return self._export(body, "application/x-ndjson; charset=utf-8", "judgements.jsonl")

    # -- open routes ------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return PlainTextResponse("ok")


def create_pool_app(
    service: PoolService, *, instructions: str | None = None, depth: int = 20
) -> Starlette:
    """The Starlette application of the pool judging pages.

    Args:
        service: The judging service (its store is the database).
        instructions: Markdown instructions for the annotators (rendered safely).
        depth: The pool depth (shown on the start page).

    Returns:
        The ASGI application (run it with uvicorn; see
        :func:`probrank.serve.pool_server.serve_pool`).
    """
    pages = _PoolPages(service, instructions, depth)
    guarded = pages.guarded
    routes = [
        Route("/", guarded(pages.start_page), methods=["GET"]),
        Route("/judge/{qid}", guarded(pages.judge_page), methods=["GET"]),
        Route("/judge/{qid}", guarded(pages.judge), methods=["POST"]),
        Route("/undo/{qid}", guarded(pages.undo), methods=["POST"]),
        Route("/admin", guarded(pages.admin_page), methods=["GET"]),
        Route("/export.qrels", guarded(pages.export_qrels), methods=["GET"]),
        Route("/export.jsonl", guarded(pages.export_pool_jsonl), methods=["GET"]),
    ]
    return pages.application(routes)
