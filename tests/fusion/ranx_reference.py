"""ranx as an independent reference, run once per batch of jobs in a subprocess.

ranx (a test-only dependency) JIT-compiles with numba on first use: about two minutes on two
cores with a cold cache, more than the whole test budget. :func:`ranx_results` runs
``ranx_worker.py`` with ``NUMBA_DISABLE_JIT=1`` instead, so the comparisons run ranx's own
Python source uncompiled; one call (interpreter, ``import ranx`` and all jobs) takes a few
seconds. Batch every reference a test module needs into one call (a module-scoped fixture).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from probrank.data import Run

WORKER = Path(__file__).with_name("ranx_worker.py")


def ranx_results(jobs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Run ``jobs`` (see ``ranx_worker.py``) through ranx; skip the test when ranx is absent."""
    pytest.importorskip("ranx")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, str(WORKER)],
        input=json.dumps({"jobs": jobs}),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ranx worker failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)


def assert_same_scores(
    mine: Run, theirs: Mapping[str, Mapping[str, float]], *, rtol: float = 1e-12
) -> None:
    """The same topics and documents, and per (topic, document) the same fused score."""
    ours = mine.as_dict()
    assert set(ours) == set(theirs)
    for qid, docs in ours.items():
        assert set(docs) == set(theirs[qid]), qid
        for doc, score in docs.items():
            assert score == pytest.approx(theirs[qid][doc], rel=rtol, abs=1e-15), (qid, doc)
