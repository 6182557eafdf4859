"""Thread pools: the default from the usable CPUs, validation, and the settings a process gets
(environment before torch loads, torch's pools, restoring after a scope)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from probrank import _threads
from probrank._threads import (
    THREAD_ENV_VARS,
    configure_threads,
    default_threads,
    parse_threads,
    thread_scope,
    usable_cpus,
)
from probrank.exceptions import InputDataError


def test_usable_cpus_follow_the_affinity_mask() -> None:
    count = usable_cpus()
    assert 1 <= count <= (os.cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        assert count <= len(os.sched_getaffinity(0))


def test_a_cgroup_quota_caps_the_count(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(_threads, "_CGROUP_CPU_MAX", quota)
    quota.write_text("50000 100000\n")  # half a CPU: still one thread
    assert usable_cpus() == 1
    quota.write_text("max 100000\n")
    assert usable_cpus() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("value", [0, -1, "0", "x", "1.5", "٣", True, 2.0, None, ""])
def test_parse_threads_rejects(value: object) -> None:
    with pytest.raises(InputDataError, match="must be a positive integer"):
        parse_threads(value)


def test_parse_threads_accepts() -> None:
    assert parse_threads(3) == 3
    assert parse_threads(" 4 ") == 4


def test_default_threads_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROBRANK_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert default_threads() == usable_cpus()
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "4,2")  # nested OpenMP levels: not ours to judge
    assert default_threads() == usable_cpus()
    monkeypatch.setenv("PROBRANK_THREADS", "5")
    assert default_threads() == 5
    monkeypatch.setenv("PROBRANK_THREADS", "many")
    with pytest.raises(InputDataError, match=r"\$PROBRANK_THREADS must be a positive integer"):
        default_threads()


def test_thread_scope_sets_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    torch.set_num_threads(1)
    with thread_scope(2, torch=True) as count:
        assert count == 2
        assert all(os.environ[name] == "2" for name in THREAD_ENV_VARS)
        assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
        assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
        assert torch.get_num_threads() == 2
    assert os.environ["OMP_NUM_THREADS"] == "1"
    assert "MKL_NUM_THREADS" not in os.environ and "OMP_WAIT_POLICY" not in os.environ
    assert torch.get_num_threads() == 1


def test_a_users_wait_policy_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    with thread_scope(1):
        assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_configure_threads_validates() -> None:
    with pytest.raises(InputDataError, match="threads must be a positive integer, got 0"):
        configure_threads(0)


PROBE = """
import json, os, sys
from probrank._threads import configure_threads, configure_torch
count = configure_threads(int(sys.argv[1]) if len(sys.argv) > 1 else None)
import numpy, torch  # loaded after the environment is set, as the CLI does
configure_torch(count)
from threadpoolctl import threadpool_info
print(json.dumps({
    "count": count,
    "torch": torch.get_num_threads(),
    "interop": torch.get_num_interop_threads(),
    "blas": sorted({p["num_threads"] for p in threadpool_info()}),
}))
"""


def _probe(*args: str, env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout)


def test_a_fresh_process_gets_one_size_for_every_pool() -> None:
    env = {k: v for k, v in os.environ.items() if k not in (*THREAD_ENV_VARS, "PROBRANK_THREADS")}
    probe = _probe("1", env=env)  # OpenBLAS would cap a count above the CPUs at the CPUs
    assert probe == {"count": 1, "torch": 1, "interop": 1, "blas": [1]}
    default = _probe(env=env)
    assert default["count"] == usable_cpus() == default["torch"] == default["interop"]
    assert default["blas"] == [usable_cpus()]
