"""Experiment protocols: read a TOML config, run it, return a results table.

A config names its protocol in ``[experiment] protocol = "..."``; :data:`PROTOCOLS` maps the
name to ``"module:function"``, imported only when used (so the CLI starts fast and optional
heavy imports stay lazy). :func:`load_config` checks the file against the protocol's typed
schema (:mod:`probrank.experiments.schemas`): an unknown key, a missing required key or a value
of the wrong type is a one-line error naming the file, the line and the key. A protocol
function has the signature
``fn(config: dict, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

from probrank._config import check_config, locate_key, read_toml
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


def load_config(path: str | Path, *, protocol: str | None = None) -> dict:
    """Read a TOML experiment config and check it against its protocol's schema.

    Args:
        path: The config file.
        protocol: The protocol the caller expects (``probrank interactive --config`` reads
            ``interactive`` configs): the file may then omit ``[experiment] protocol``, and
            must not name another one.

    Returns:
        The parsed document, unchanged.

    Raises:
        InputDataError: a missing, unreadable or invalid TOML file, no (or an unknown)
            ``[experiment] protocol``, or a key the schema does not know, a missing required
            key or a value of the wrong type (:mod:`probrank.experiments.schemas`); the message
            names the file, the line and the dotted key.
    """
    path = Path(path)
    config, text = read_toml(path)
    experiment = config.get("experiment", {})
    if not isinstance(experiment, dict):
        raise InputDataError(
            "experiment: expected a table", path=path, line=locate_key(text, ("experiment",))
        )
    named = experiment.get("protocol", protocol)
    if protocol is not None and named != protocol:
        raise InputDataError(
            f"experiment.protocol: this command reads {protocol!r} configs, got {named!r}",
            path=path,
            line=locate_key(text, ("experiment", "protocol")),
        )
    if named not in PROTOCOLS:
        known = ", ".join(sorted(PROTOCOLS))
        raise InputDataError(
            f"experiment.protocol: must be one of {known}, got {named!r}",
            path=path,
            line=locate_key(text, ("experiment", "protocol")),
        )
    from probrank.experiments.schemas import SCHEMAS

    document = {**config, "experiment": {**experiment, "protocol": named}}
    check_config(document, SCHEMAS[named], path=path, text=text)
    return config


def run_experiment(
    path: str | Path, *, seeds: int = 3, smoke: bool = False, threads: int | None = None
) -> ExperimentResult:
    """Run the experiment a config describes and return its results.

    Args:
        path: The TOML config.
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: Tiny sizes, to check the pipeline.
        threads: Torch threads of the run, in place of the config's ``[experiment] threads``
            (None: the config's, else the protocol's default).

    Raises:
        InputDataError: a bad argument, or a config that does not match its protocol's schema.
    """
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise InputDataError(f"seeds must be a positive integer, got {seeds!r}")
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
    ):
        raise InputDataError(f"threads must be a positive integer, got {threads!r}")
    config = load_config(path)
    if threads is not None:
        config = {**config, "experiment": {**config["experiment"], "threads": threads}}
    module_name, _, function_name = PROTOCOLS[config["experiment"]["protocol"]].partition(":")
    function: ProtocolFn = getattr(importlib.import_module(module_name), function_name)
    return function(config, config_path=Path(path), seeds=seeds, smoke=smoke)
