"""A Ray cluster's address: its form checked when the settings are made, its port probed
(with a timeout) before Ray is asked to join.

``ray.init(address="host:port")`` with nothing listening there does not fail: it retries the
GCS for minutes, printing warnings. So before joining, :func:`probe_address` opens a plain
TCP connection to the address with a timeout of :data:`CONNECT_TIMEOUT_S` seconds (the
``PROBRANK_RAY_CONNECT_TIMEOUT`` environment variable changes it) and refuses, in one line,
an address where nothing answers. ``"auto"`` (the cluster this machine runs) and ``"local"``
are not probed: Ray finds (or starts) those itself and fails at once when there is none.
"""

from __future__ import annotations

import math
import os
import socket
from typing import NamedTuple

from probrank.exceptions import InputDataError

__all__ = ["CONNECT_TIMEOUT_S", "HostPort", "connect_timeout", "parse_address", "probe_address"]

CONNECT_TIMEOUT_S = 10.0
"""Seconds :func:`probe_address` waits for a cluster's port to accept a connection."""

_ENV = "PROBRANK_RAY_CONNECT_TIMEOUT"
_NOT_PROBED = ("auto", "local")
_SCHEMES = ("ray://",)


class HostPort(NamedTuple):
    """A ``host:port`` address (``host`` without IPv6 brackets)."""

    host: str
    port: int


def parse_address(address: str) -> HostPort | None:
    """The host and port of ``address``, or None for ``"auto"`` and ``"local"``.

    Args:
        address: ``"auto"``, ``"local"``, ``"host:port"`` or ``"ray://host:port"``
            (``[v6 address]:port`` too).

    Raises:
        InputDataError: any other form, or a port outside ``1 .. 65535``.
    """
    if address in _NOT_PROBED:
        return None
    rest = address
    for scheme in _SCHEMES:
        rest = rest.removeprefix(scheme)
    host, colon, port = rest.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    usage = "a Ray address is 'auto', 'host:port' or 'ray://host:port'"
    if not colon or not host or any(c.isspace() or c in "/?#@" for c in host):
        raise InputDataError(f"{usage}, got {address[:80]!r}")
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        raise InputDataError(f"{usage} with a port from 1 to 65535, got {address[:80]!r}")
    return HostPort(host, int(port))


def connect_timeout() -> float:
    """:data:`CONNECT_TIMEOUT_S`, or ``$PROBRANK_RAY_CONNECT_TIMEOUT`` (seconds > 0).

    Raises:
        InputDataError: the variable is not a finite number > 0.
    """
    text = os.environ.get(_ENV)
    if text is None or not text.strip():
        return CONNECT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InputDataError(f"${_ENV} must be a number of seconds > 0, got {text[:40]!r}")
    return value


def probe_address(address: str | None, *, timeout: float | None = None) -> None:
    """Refuse a Ray address where nothing accepts a connection within ``timeout`` seconds.

    Args:
        address: The cluster (None, ``"auto"``, ``"local"``: nothing to probe).
        timeout: Seconds to wait (None: :func:`connect_timeout`).

    Raises:
        InputDataError: a malformed address, a host that does not resolve, or a port where
            nothing answers in time (refused, unreachable or silent).
    """
    if address is None:
        return
    target = parse_address(address)
    if target is None:
        return
    seconds = connect_timeout() if timeout is None else timeout
    try:
        with socket.create_connection(target, timeout=seconds):
            return
    except TimeoutError:
        reason = f"no answer within {seconds:g} s"
    except socket.gaierror as error:
        reason = f"unknown host ({error.strerror})"
    except OSError as error:
        reason = (error.strerror or type(error).__name__).lower()
    raise InputDataError(
        f"cannot join the Ray cluster {address!r}: nothing answers at "
        f"{target.host}:{target.port} ({reason}; timeout {seconds:g} s, "
        f"${_ENV} changes it)"
    )
