"""HTTP helpers of the judging server: the header-read timeout, bounded forms, instructions.

* :func:`header_timeout_protocol`: uvicorn's HTTP protocol with a timer from the moment a
  connection opens (and again whenever a new request begins) that closes it if the request's
  headers are not complete in time: half-open connections are not held (uvicorn's own
  ``timeout_keep_alive`` only starts after a response). The protocol is uvicorn's httptools
  one when httptools is installed (``uvicorn[standard]``: its parser, in C, costs the server
  less CPU per request than h11's, in Python; see the latency numbers in the user guide),
  else h11's.
* :func:`read_form`: the fields of a bounded ``application/x-www-form-urlencoded`` body.
* :func:`render_markdown`: instructions from a Markdown file as safe HTML (markdown-it-py
  with raw HTML off, so every tag in the file is shown as text, and unsafe link schemes
  dropped; without markdown-it-py, escaped paragraphs).
"""

from __future__ import annotations

import asyncio
import html
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request

from probrank.serve.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

__all__ = ["MAX_BODY", "header_timeout_protocol", "http_protocol", "read_form", "render_markdown"]

MAX_BODY = 16 * 1024
"""Largest request body accepted (bytes); a judgement form is about 200."""

_FORM = "application/x-www-form-urlencoded"


def http_protocol(name: str = "auto") -> type[Any]:
    """uvicorn's HTTP protocol class: ``"httptools"``, ``"h11"``, or ``"auto"`` (httptools
    when it is installed, else h11, as uvicorn's own ``http="auto"`` chooses).

    Raises:
        ImportError: ``"httptools"`` without httptools installed.
        ValueError: another name.
    """
    if name not in ("auto", "httptools", "h11"):
        raise ValueError(f"unknown HTTP protocol {name!r}: auto, httptools or h11")
    if name != "h11":
        try:
            from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
        except ImportError:
            if name == "httptools":
                raise
        else:
            return HttpToolsProtocol
    from uvicorn.protocols.http.h11_impl import H11Protocol

    return H11Protocol


def header_timeout_protocol(seconds: float, base: str = "auto") -> type[Any]:
    """uvicorn's HTTP protocol (:func:`~probrank.serve.http.http_protocol` of ``base``)
    closing connections whose request headers take over ``seconds`` (pass it as
    ``uvicorn.Config(http=...)``)."""
    protocol = http_protocol(base)

    class HeaderTimeoutProtocol(protocol):  # type: ignore[valid-type,misc]
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _waiting(self) -> bool:  # no request whose headers have arrived is running
            return self.cycle is None or self.cycle.response_complete

        def _expire(self) -> None:
            self._header_timer = None
            if self._waiting() and not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self._waiting():
                self._arm()
            super().data_received(data)
            if not self._waiting():
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimeoutProtocol


async def read_form(request: Request, fields: int = 8) -> dict[str, str]:
    """The fields of a bounded ``application/x-www-form-urlencoded`` body (each once).

    Raises:
        UnsupportedMediaType: another content type.
        PayloadTooLarge: a body over :data:`MAX_BODY` bytes.
        BadRequest: not UTF-8 form data, too many fields, a field twice.
    """
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
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=fields)
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("the form is not valid UTF-8 form data or has too many fields") from None
    found: dict[str, str] = {}
    for key, value in pairs:
        if key in found:
            raise BadRequest(f"the form has the field {key[:40]!r} twice")
        found[key] = value
    return found


def render_markdown(text: str) -> str:
    """Safe HTML of Markdown ``text`` (raw HTML in it is escaped, not rendered)."""
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # pragma: no cover - markdown-it-py comes with rich
        paragraphs = [p.strip() for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
        return "\n".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    renderer: Any = MarkdownIt("commonmark", {"html": False, "linkify": False})
    return str(renderer.render(text))
