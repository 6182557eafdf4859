"""Experiment protocols: read a TOML config, run it, return a results table.

A config names its protocol in ``[experiment] protocol = "..."``; :data:`PROTOCOLS` maps the
name to ``"module:function"``, imported only when used (so the CLI starts fast and optional
heavy imports stay lazy). A protocol function has the signature
``fn(config: dict, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

import tomllib

from probrank.exceptions import InputDataError
from probrank.experiments.results import ExperimentResult

__all__ = ["PROTOCOLS", "ExperimentResult", "load_config", "run_experiment"]

PROTOCOLS: dict[str, str] = {
    "qlfusion_cv": "probrank.experiments.qlfusion:run",
    "gpf_ranker": "probrank.experiments.gpf_ranker:run",
    "gpf_finetune": "probrank.experiments.gpf_finetune:run",
    "mediqa_multitask": "probrank.experiments.mediqa_multitask:run",
    "interactive": "probrank.experiments.interactive:run",
}


class ProtocolFn(Protocol):
    def __call__(
        self, config: dict, *, config_path: Path, seeds: int, smoke: bool
    ) -> ExperimentResult: ...


def load_config(path: str | Path) -> dict:
    """Read a TOML experiment config.

    Raises:
        InputDataError: missing file, invalid TOML, or no ``[experiment] protocol``.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            config = tomllib.load(handle)
    except FileNotFoundError:
        raise InputDataError("no such config file", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputDataError(f"invalid TOML: {exc}", path=path) from None
    protocol = config.get("experiment", {}).get("protocol")
    if protocol not in PROTOCOLS:
        known = ", ".join(sorted(PROTOCOLS))
        raise InputDataError(
            f"[experiment] protocol must be one of {known}, got {protocol!r}", path=path
        )
    return config


def run_experiment(path: str | Path, *, seeds: int = 3, smoke: bool = False) -> ExperimentResult:
    """Run the experiment a config describes and return its results."""
    if seeds < 1:
        raise InputDataError(f"seeds must be at least 1, got {seeds}")
    config = load_config(path)
    module_name, _, function_name = PROTOCOLS[config["experiment"]["protocol"]].partition(":")
    function: ProtocolFn = getattr(importlib.import_module(module_name), function_name)
    return function(config, config_path=Path(path), seeds=seeds, smoke=smoke)
