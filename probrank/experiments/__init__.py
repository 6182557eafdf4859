"""Experiment protocols: read a TOML config, run it, write its results with provenance.

One subpackage per protocol, each reading its typed config and calling the model objects
(:mod:`probrank.models`) or their parts; none defines a network:

* :mod:`~probrank.experiments.qlfusion_cv`: ``qlfusion_cv``, QLFusion by cross-validation over
  topics;
* :mod:`~probrank.experiments.gpf`: ``gpf_ranker`` (frozen encoder), ``gpf_finetune`` (end
  to end) and ``gpf_top_layers`` (the top layers on cached states), calibrated relevance in
  domain and under shift;
* :mod:`~probrank.experiments.mediqa`: ``mediqa_multitask``, the MEDIQA 2019 Task 3 protocol;
* :mod:`~probrank.experiments.interactive`: ``interactive``, simulated sessions (also the
  ``probrank interactive`` command).

A config names its protocol in ``[experiment] protocol = "..."``; :data:`PROTOCOLS` maps the
name to ``"module:function"``, imported only when used (so the CLI starts fast and optional
heavy imports stay lazy). :func:`load_config` checks the file against the protocol's typed
schema (:data:`probrank.experiments.schemas.SCHEMAS`): an unknown key, a missing required key or
a value of the wrong type is a one-line error naming the file, the line and the key; a prior or
likelihood named as ``"module.path:callable"`` is imported (the config's folder first on the
import path) and probed there too (:mod:`probrank._plugins`), before any work starts.

:func:`load_config` returns the config's typed settings: an instance of the protocol's schema,
frozen, one nested dataclass per table with the defaults of the keys the file omits (a table
that configures a model is that model's settings object, e.g. ``[quantifier]`` a
:class:`~probrank.models.qlfusion.QLFusionSettings`); ``smoke=True`` merges the config's
``[smoke]`` tables first. A protocol function has the signature
``fn(settings, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult`` and reads
the settings' attributes; :func:`run_experiment` writes what it returns, with the checked
document as provenance (:mod:`probrank.experiments.provenance`).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from probrank._config import (
    build_settings,
    check_config,
    check_schema,
    locate_key,
    read_toml,
    with_overrides,
)
from probrank._plugins import PluginError, locate_plugin, resolve_config_plugins
from probrank.exceptions import InputDataError
from probrank.experiments.results import ExperimentResult

if TYPE_CHECKING:
    from probrank.experiments.schemas import ExperimentSettings

__all__ = [
    "PROTOCOLS",
    "RAY_PROTOCOLS",
    "ExperimentResult",
    "load_config",
    "load_document",
    "run_experiment",
    "settings_of",
]

logger = logging.getLogger(__name__)

PROTOCOLS: dict[str, str] = {
    "qlfusion_cv": "probrank.experiments.qlfusion_cv.protocol:run",
    "gpf_ranker": "probrank.experiments.gpf.frozen:run",
    "gpf_finetune": "probrank.experiments.gpf.finetune:run",
    "gpf_top_layers": "probrank.experiments.gpf.top_layers:run",
    "mediqa_multitask": "probrank.experiments.mediqa.protocol:run",
    "interactive": "probrank.experiments.interactive.protocol:run",
    "cascade": "probrank.experiments.cascade.protocol:run",
}
"""Each protocol's function, ``"module:function"``, by the name configs give it; its schema
is :data:`probrank.experiments.schemas.SCHEMAS` under the same name."""

RAY_PROTOCOLS = frozenset(
    {"qlfusion_cv", "gpf_ranker", "gpf_finetune", "mediqa_multitask", "interactive", "cascade"}
)
"""The protocols whose tasks run on the Ray executor (``[experiment] executor = "ray"``,
``--executor ray``; :mod:`probrank.executors`) with the local executor's results; the others
refuse it."""


class ProtocolFn(Protocol):
    def __call__(
        self, settings: Any, *, config_path: Path, seeds: int, smoke: bool
    ) -> ExperimentResult: ...


def load_config(
    path: str | Path, *, protocol: str | None = None, smoke: bool = False
) -> ExperimentSettings:
    """Read a TOML experiment config, check it against its protocol's schema and return its
    typed settings.

    Args:
        path: The config file.
        protocol: The protocol the caller expects (``probrank interactive --config`` reads
            ``interactive`` configs): the file may then omit ``[experiment] protocol``, and
            must not name another one.
        smoke: Merge the config's ``[smoke]`` tables over the tables they name (the settings
            of a ``--smoke`` run; :func:`probrank._config.with_overrides`).

    Returns:
        The protocol's settings object (an instance of its schema,
        :data:`probrank.experiments.schemas.SCHEMAS`): frozen, one nested dataclass per
        table, the defaults of the keys the file omits filled in.

    Raises:
        InputDataError: a missing, unreadable or invalid TOML file, no (or an unknown)
            ``[experiment] protocol``, or a key the schema does not know, a missing required
            key or a value of the wrong type (:mod:`probrank.experiments.schemas`); the message
            names the file, the line and the dotted key.
    """
    document = load_document(path, protocol=protocol)
    return settings_of(document, smoke=smoke)


def load_document(path: str | Path, *, protocol: str | None = None) -> dict[str, Any]:
    """Read and check a TOML experiment config like :func:`load_config`; returns the checked
    document (``[experiment] protocol`` filled in when ``protocol`` names it), as the results'
    provenance records it.

    Raises:
        InputDataError: see :func:`load_config`.
    """
    path = Path(path)
    config, text = read_toml(path)
    # the raw document, before its schema is known: only [experiment] protocol is read here
    experiment = config["experiment"] if "experiment" in config else {}
    if not isinstance(experiment, dict):
        raise InputDataError(
            "experiment: expected a table", path=path, line=locate_key(text, ("experiment",))
        )
    named = experiment["protocol"] if "protocol" in experiment else protocol
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
    # your own priors and likelihoods ("module:callable"): imported and probed before any work
    resolve_config_plugins(document, check_schema(SCHEMAS[named]), path=path, text=text)
    return document


def settings_of(document: Mapping[str, Any], *, smoke: bool = False) -> ExperimentSettings:
    """The typed settings of a checked document (:func:`load_document`), with its ``[smoke]``
    tables merged when ``smoke``."""
    from probrank.experiments.schemas import SCHEMAS

    schema = SCHEMAS[document["experiment"]["protocol"]]
    return build_settings(with_overrides(document) if smoke else document, schema)


def run_experiment(
    path: str | Path,
    *,
    seeds: int = 3,
    smoke: bool = False,
    threads: int | None = None,
    out: str | Path | None = None,
    update_card: bool = False,
    executor: str | None = None,
    ray_address: str | None = None,
) -> ExperimentResult:
    """Run the experiment a config describes, write its results, and return them.

    Args:
        path: The TOML config.
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: Tiny sizes, to check the pipeline.
        threads: Torch threads of the run, in place of the config's ``[experiment] threads``
            (None: the config's, else the protocol's default).
        out: The run folder for the results JSON (with provenance) and figures
            (:mod:`probrank.experiments.provenance`); None: write nothing there
            (``probrank experiment`` passes ``runs/<config stem>-<UTC time>/`` by default).
        update_card: Also write the results into the model card's folder (``[output] folder``
            beside the config, default ``results/``), replacing the committed ones. Refused
            for smoke runs.
        executor: Where the protocol's tasks run, ``"local"`` or ``"ray"``, in place of the
            config's ``[experiment] executor`` (None: the config's, else local).
        ray_address: The Ray cluster, in place of the config's ``[experiment] ray_address``
            (None: the config's, else a local Ray instance; ``"auto"``: the running cluster).

    Returns:
        The results; ``files`` lists what was written.

    Raises:
        InputDataError: a bad argument, or a config that does not match its protocol's schema.
    """
    from probrank.experiments.provenance import (
        RunOutput,
        card_folder,
        provenance,
        writing_to,
    )
    from probrank.experiments.schemas import SCHEMAS

    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise InputDataError(f"seeds must be a positive integer, got {seeds!r}")
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
    ):
        raise InputDataError(f"threads must be a positive integer, got {threads!r}")
    if update_card and smoke:
        raise InputDataError("--update-card writes a model card's results: not with --smoke")
    path = Path(path)
    config = load_document(path)
    if threads is not None:
        config = {**config, "experiment": {**config["experiment"], "threads": threads}}
    overrides = {"executor": executor, "ray_address": ray_address}
    if any(value is not None for value in overrides.values()):
        given = {key: value for key, value in overrides.items() if value is not None}
        config = {**config, "experiment": {**config["experiment"], **given}}
    protocol = config["experiment"]["protocol"]
    settings = settings_of(config, smoke=smoke)
    from probrank.executors import ExecutorKind

    where = settings.experiment.executor_settings()  # checked before any work
    if where.kind is ExecutorKind.RAY:
        if protocol not in RAY_PROTOCOLS:
            raise InputDataError(
                f"protocol {protocol!r} runs on the local executor only", path=path
            )
        from probrank.executors.ray_cluster import import_ray

        import_ray()  # a missing extra is an error before any work
    card = card_folder(settings.output, path) if update_card else None
    output = None
    if out is not None or card is not None:
        record = provenance(
            config_path=path,
            config=config,
            schema=SCHEMAS.get(protocol),
            seeds=seeds,
            smoke=smoke,
            threads=settings.experiment.threads,
        )
        if out is not None:
            output = RunOutput(Path(out), path.stem, record, card=card)
        elif card is not None:
            output = RunOutput(card, path.stem, record)
    module_name, _, function_name = PROTOCOLS[protocol].partition(":")
    function: ProtocolFn = getattr(importlib.import_module(module_name), function_name)
    logger.debug(  # debug: an error must stay the one line on stderr
        "%s: protocol %s, seeds 0..%d%s", path, protocol, seeds - 1, " (smoke)" if smoke else ""
    )
    try:
        with writing_to(output):
            result = function(settings, config_path=path, seeds=seeds, smoke=smoke)
    except PluginError as exc:  # your own prior or likelihood failed: name its config line
        if exc.path is not None:
            raise
        found = locate_plugin(config, exc.target, read_toml(path)[1])
        key, line = ("", None) if found is None else (f"{'.'.join(found[0])}: ", found[1])
        raise PluginError(key + exc.reason, target=exc.target, path=path, line=line) from exc
    if output is not None:
        output.write(result)
        result.files = [str(p) for p in output.written]
        for folder in dict.fromkeys(p.parent for p in output.written):
            names = ", ".join(p.name for p in output.written if p.parent == folder)
            logger.info("results written to %s (%s)", folder, names)
    return result
