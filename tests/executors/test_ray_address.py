"""A Ray address is checked by its form when the settings are made and probed, with a
timeout, before Ray joins it: nothing listening is one line, never a hang (issue 27)."""

from __future__ import annotations

import socket
import time

import pytest

from probrank.exceptions import InputDataError
from probrank.executors import ExecutorSettings
from probrank.executors.ray_address import (
    CONNECT_TIMEOUT_S,
    HostPort,
    connect_timeout,
    parse_address,
    probe_address,
)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("auto", None),
        ("local", None),
        ("10.0.0.5:6379", HostPort("10.0.0.5", 6379)),
        ("ray://head.example:10001", HostPort("head.example", 10001)),
        ("[::1]:6379", HostPort("::1", 6379)),
    ],
)
def test_addresses_parse_as_ray_documents_them(address: str, expected: HostPort | None) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", ["headnode", "host:", ":6379", "host:0", "host:65536", "a b:1"])
def test_malformed_addresses_are_refused_when_the_settings_are_made(address: str) -> None:
    with pytest.raises(InputDataError, match="a Ray address is 'auto', 'host:port'"):
        ExecutorSettings(kind="ray", address=address)


def test_a_listening_port_passes_the_probe() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        probe_address(f"127.0.0.1:{server.getsockname()[1]}", timeout=5.0)


def test_a_closed_port_is_refused_at_once() -> None:
    with socket.socket() as server:  # a port just freed: nothing listens there
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
    start = time.perf_counter()
    with pytest.raises(InputDataError, match=f"nothing answers at 127.0.0.1:{port}"):
        probe_address(f"127.0.0.1:{port}", timeout=5.0)
    assert time.perf_counter() - start < 5.0


def test_a_silent_address_fails_within_the_timeout() -> None:
    """A blackholed address (TEST-NET-1, RFC 5737: never routed) answers nothing: the probe
    gives up after its timeout (or at once where the network says unreachable)."""
    start = time.perf_counter()
    with pytest.raises(InputDataError, match=r"cannot join the Ray cluster .*timeout 0\.3 s"):
        probe_address("192.0.2.1:6379", timeout=0.3)
    assert time.perf_counter() - start < 3.0


def test_the_timeout_is_documented_and_can_be_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROBRANK_RAY_CONNECT_TIMEOUT", raising=False)
    assert connect_timeout() == CONNECT_TIMEOUT_S == 10.0
    monkeypatch.setenv("PROBRANK_RAY_CONNECT_TIMEOUT", "2.5")
    assert connect_timeout() == 2.5
    monkeypatch.setenv("PROBRANK_RAY_CONNECT_TIMEOUT", "-1")
    with pytest.raises(InputDataError, match="PROBRANK_RAY_CONNECT_TIMEOUT"):
        connect_timeout()
