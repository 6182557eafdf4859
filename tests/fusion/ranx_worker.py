"""Compute ranx reference results in a separate process: ``python ranx_worker.py < jobs.json``.

ranx compiles its functions with numba on first use (about two minutes on 2 cores without a
cache); :func:`tests.fusion.ranx_reference.ranx_results` runs this script with
``NUMBA_DISABLE_JIT=1``, so ranx's own Python code runs uncompiled (the same code, in
seconds on small inputs). Input: ``{"jobs": {id: {"op": ..., "runs": [{qid: {doc: score}}],
"qrels": {qid: {doc: grade}} | null, "args": {...}}}}``. Output on stdout:
``{id: {"run": {qid: {doc: score}}, "params": ...}}``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import ranx
from ranx import fusion as rf
from ranx.normalization import norm_switch

Job = dict[str, Any]


def _runs(job: Job) -> list[ranx.Run]:
    return [ranx.Run(r, name=f"r{i}") for i, r in enumerate(job["runs"])]


def _qrels(job: Job) -> ranx.Qrels:
    return ranx.Qrels(job["qrels"])


def _normalised(runs: list[ranx.Run], norm: str | None) -> list[ranx.Run]:
    return runs if norm is None else [norm_switch(norm)(run) for run in runs]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.floating):
        return float(value)
    return value


def _fuse(job: Job) -> dict[str, Any]:
    a = job["args"]
    run = ranx.fuse(_runs(job), norm=a["norm"], method=a["method"], params=a.get("params"))
    return {"run": run.to_dict()}


def _trained(train: Callable[..., Any], fuse: Callable[..., Any]) -> Callable[[Job], dict]:
    def op(job: Job) -> dict[str, Any]:
        a = job["args"]
        runs = _runs(job)
        params = train(_qrels(job), runs, *a.get("train_args", []))
        fused = fuse(_normalised(runs, a.get("norm")), params, *a.get("fuse_args", []))
        return {"run": fused.to_dict(), "params": _plain(params)}

    return op


def _weighted(job: Job) -> dict[str, Any]:
    a = job["args"]
    runs = _normalised(_runs(job), a.get("norm"))
    rule = {"wsum": rf.wsum, "wmnz": rf.wmnz}[a["rule"]]
    return {"run": rule(runs, a["weights"]).to_dict()}


def _weighted_rrf(job: Job) -> dict[str, Any]:
    a = job["args"]
    single = [rf.rrf([run], a["k"]) for run in _runs(job)]
    return {"run": rf.wsum(single, a["weights"]).to_dict()}


OPS: dict[str, Callable[[Job], dict[str, Any]]] = {
    "fuse": _fuse,
    "probfuse": _trained(rf.probfuse_train, rf.probfuse),
    "segfuse": _trained(rf.segfuse_train, rf.segfuse),
    "slidefuse": _trained(rf.slidefuse_train, rf.slidefuse),
    "posfuse": _trained(rf.posfuse_train, rf.posfuse),
    "bayesfuse": _trained(rf.bayesfuse_train, rf.bayesfuse),
    "mapfuse": _trained(rf.mapfuse_train, rf.mapfuse),
    "weighted": _weighted,
    "weighted_rrf": _weighted_rrf,
}


def main() -> None:
    jobs = json.load(sys.stdin)["jobs"]
    out = {key: OPS[job["op"]](job) for key, job in jobs.items()}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
