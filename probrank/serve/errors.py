"""Errors of a judging request: each is an :class:`~probrank.exceptions.InputDataError` with the
HTTP status the page is sent with (always a 4xx; the message is shown on the page)."""

from __future__ import annotations

from probrank.exceptions import InputDataError

__all__ = [
    "BadRequest",
    "Conflict",
    "Forbidden",
    "NotFound",
    "PayloadTooLarge",
    "RequestError",
    "UnsupportedMediaType",
]


class RequestError(InputDataError):
    """A request the server refuses; ``status`` is its HTTP status code."""

    status = 400
    title = "Bad request"


class BadRequest(RequestError):
    """A malformed or forged request (a missing field, a pair that was not offered)."""


class Forbidden(RequestError):
    """No project token, or a wrong one."""

    status = 403
    title = "Forbidden"


class NotFound(RequestError):
    """An unknown question or page."""

    status = 404
    title = "Not found"


class Conflict(RequestError):
    """A stale form: the round it answers was answered already, or the question is done."""

    status = 409
    title = "Out of date"


class PayloadTooLarge(RequestError):
    """A request body over the limit."""

    status = 413
    title = "Too large"


class UnsupportedMediaType(RequestError):
    """A body that is not an HTML form (``application/x-www-form-urlencoded``)."""

    status = 415
    title = "Unsupported content type"
