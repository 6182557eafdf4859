"""A two-node Ray cluster on this machine (a head and a worker node, each with one CPU, on
127.0.0.1): ``probrank encode --executor ray --ray-address`` runs on both nodes.

The nodes are started with ``ray start --block`` as child processes of the test and stopped by
their process ids (SIGTERM makes ``ray start --block`` stop the node's processes), not with
``ray stop``, which stops every Ray process of the machine (the session's own instance and any
other user's among them).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from probrank.cli import main
from tests.encoders.conftest import make_tiny_bert
from tests.executors.conftest import skip_or_fail
from tests.executors.test_encoding import _assert_same_cache, _texts, _trec

pytestmark = pytest.mark.xdist_group("ray")

BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _environment(root: str) -> dict[str, str]:
    """The environment of the nodes and the driver: Ray's files (the session folder, the address
    and node IP files a driver reads to find its local node) under ``root``, not ``/tmp/ray``,
    where another Ray instance of this machine keeps its own; and token authentication off on
    all three (``ray start`` turns it on when ``~/.ray/auth_token`` exists, and a driver without
    ``RAY_AUTH_MODE=token`` is then refused: the test must not depend on that file)."""
    return {
        **os.environ,
        "RAY_TMPDIR": root,
        "RAY_AUTH_MODE": "disabled",
        "OMP_NUM_THREADS": "1",
        "TQDM_DISABLE": "1",
        "PYTHONUNBUFFERED": "1",  # the nodes' lines reach the log as they are printed
        # a node drains for up to 30 s on SIGTERM; the job is over by then, nothing to drain
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "2",
    }


def _start(args: list[str], root: str, log: IO[str]) -> subprocess.Popen[str]:
    command = [str(BIN / "ray"), "start", "--block", "--num-cpus=1", *args]
    command += ["--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    return subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, text=True, env=_environment(root)
    )


def _stop(*processes: subprocess.Popen[str]) -> None:
    """SIGTERM to every node at once (each stops its own Ray processes), then wait for all."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:  # pragma: no cover - a node that does not stop
            process.kill()
            process.wait()


STARTED = "Ray runtime started"
"""What ``ray start`` prints once its node is up (a worker node: once it joined the head)."""


def _wait_for_nodes(log: Path, nodes: tuple[subprocess.Popen[str], ...]) -> None:
    """Wait until every node printed :data:`STARTED` (the job would otherwise see the head
    alone on a loaded machine); skip or fail when a node exits or 120 s pass."""
    deadline = time.monotonic() + 120
    while log.read_text().count(STARTED) < len(nodes):
        if any(node.poll() is not None for node in nodes) or time.monotonic() > deadline:
            skip_or_fail(f"the Ray nodes did not start here: {log.read_text()[-2000:]}")
        time.sleep(0.5)


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The address of a running head node plus one worker node (both one CPU), and the folder
    of their Ray files (:func:`_environment`)."""
    if shutil.which("ray", path=str(BIN)) is None:
        skip_or_fail("Ray is not installed: pip install 'probrank[ray]'")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    root = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths are limited
    log = open(tmp_path / "nodes.log", "w")
    head = _start(["--head", f"--port={port}", "--include-dashboard=false"], root, log)
    worker = _start([f"--address={address}"], root, log)
    try:
        _wait_for_nodes(tmp_path / "nodes.log", (head, worker))
        yield address, root
    finally:
        _stop(worker, head)
        log.close()
        shutil.rmtree(root, ignore_errors=True)
    for process in (head, worker):
        if process.returncode not in (0, 1, -15, 143):
            text = (tmp_path / "nodes.log").read_text()[-2000:]
            skip_or_fail(f"a Ray node did not start here (exit {process.returncode}): {text}")


def test_encoding_job_uses_both_nodes(two_nodes: tuple[str, str], tmp_path: Path) -> None:
    address, root = two_nodes
    model = make_tiny_bert(tmp_path / "tiny-bert")
    collection = _trec(tmp_path / "docs.trec", _texts(40, seed=3)[:-1])
    common = [str(collection), "--model", str(model), "--max-length", "48", "--batch-size", "4"]
    command = [
        str(BIN / "probrank"), "encode", *common, "--cache-dir", str(tmp_path / "cluster"),
        "--executor", "ray", "--ray-address", address, "--workers", "2", "--json",
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, env=_environment(root)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["encoded"] == 40 and report["workers"] == 2
    assert len(report["nodes"]) == 2, report["nodes"]  # one actor per one-CPU node
    assert all(passes > 0 for passes in report["nodes"].values())
    assert sum(report["nodes"].values()) == 10  # 40 texts in passes of 4
    assert main(["encode", *common, "--cache-dir", str(tmp_path / "local"), "--quiet"]) == 0
    _assert_same_cache(tmp_path / "local", tmp_path / "cluster")
