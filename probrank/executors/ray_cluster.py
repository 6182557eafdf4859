"""Connecting to Ray: a local instance for one job, a running cluster, or the caller's own.

Ray is the optional extra ``probrank[ray]``; it is imported here, when a job asks for it, and
a missing install is one line naming the extra (:func:`probrank._extras.require`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from probrank._extras import require
from probrank.exceptions import InputDataError
from probrank.executors.ray_address import probe_address

__all__ = ["cluster_gpus", "import_ray", "ray_session"]

AUTO = "auto"
"""The address that joins the cluster this machine belongs to (``ray start`` ran here)."""


def import_ray(purpose: str = "--executor ray") -> ModuleType:
    """``ray``, or one line naming the extra that installs it.

    Raises:
        MissingExtraError: Ray is not installed.
    """
    return require("ray", extra="ray", purpose=purpose)


@contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray, connected for the block.

    A Ray instance this process already started (``ray.init`` in a notebook, a test fixture) is
    used as it is and left running. Otherwise ``address`` None starts a local instance (no
    dashboard, ``num_cpus`` CPUs or all), ``"auto"`` joins the running cluster of this machine
    and ``"host:port"`` / ``"ray://host:port"`` a given one (its port probed first, with the
    timeout of :func:`probrank.executors.ray_address.connect_timeout`: nothing listening is an
    error, not a hang); what the block connected to is
    disconnected (a local instance shut down) when it ends. Worker output is not forwarded:
    a task's error comes back as the exception of its result.

    Args:
        address: Where the cluster is (see above).
        num_cpus: CPUs of a local instance (ignored when joining a cluster).

    Yields:
        The ``ray`` module.

    Raises:
        MissingExtraError: Ray is not installed.
        InputDataError: the cluster cannot be reached or Ray cannot start here.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,  # its notes at start-up are not ours to print
        "configure_logging": True,
    }
    if address is None:
        options["num_cpus"] = num_cpus
    else:
        options["address"] = address
    where = "start a local Ray instance" if address is None else f"join the Ray cluster {address!r}"
    probe_address(address)  # nothing listening: one line after a timeout, not a hang
    try:
        ray.init(**options)
    except Exception as error:  # ConnectionError, RuntimeError, ValueError: one line
        detail = " ".join(str(error).split()) or type(error).__name__
        raise InputDataError(f"cannot {where}: {detail}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def cluster_gpus() -> float:
    """GPUs of the connected Ray cluster (0 without any)."""
    ray = import_ray()
    return float(ray.cluster_resources().get("GPU", 0.0))
