"""Where an experiment's results go, and what they say about how they were made.

Every run of :func:`~probrank.experiments.run_experiment` that is given a folder writes its
results there (``probrank experiment`` defaults to ``runs/<config stem>-<UTC time>/``): the
results JSON ``<config stem>.json`` and the protocol's figures ``<config stem>_<name>.png``,
each written atomically. The JSON holds the per-seed values, their means and standard
deviations, the extra tables, the notes, any protocol data (e.g. the interactive curves) and
``provenance``:

``probrank_version``
    the installed package's version;
``git_commit``
    ``git rev-parse HEAD`` of the repository the package was loaded from, or ``null``
    (never an error: no git, not a repository, a timeout);
``created_utc``, ``command``, ``python``, ``torch``
    when, with which command line and which interpreter and torch;
``config_path``, ``config``
    the config file and its document as run (command-line overrides such as ``--threads``
    applied);
``resolved_config``
    every table and key the protocol's schema knows, filled with the values the protocol used
    where it reports them (``settings``) and ``null`` where the default of its typed settings
    (:func:`~probrank.experiments.load_config`) applies and it does not report one;
``settings``
    the settings objects the protocol built (its typed view of the config, defaults
    included);
``seeds``, ``smoke``, ``threads``
    the seeds run (``0 .. N-1``), whether it was a smoke run and torch's thread count.

The committed results of a model card (``models/<model>/results/``) are written only when asked
(``update_card=True``, ``probrank experiment --update-card``), never by a smoke run.
"""

from __future__ import annotations

import contextvars
import dataclasses
import datetime as _dt
import json
import logging
import math
import platform
import subprocess
import sys
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probrank._files import save_figure, write_text_atomically
from probrank.exceptions import InputDataError

if TYPE_CHECKING:
    from probrank.experiments.results import ExperimentResult
    from probrank.experiments.tables import Output

__all__ = [
    "RunOutput",
    "card_folder",
    "default_run_dir",
    "git_commit",
    "json_ready",
    "probrank_version",
    "provenance",
    "resolve_config",
    "save_partial",
    "writing_to",
]

logger = logging.getLogger(__name__)

_REPOSITORY = Path(__file__).resolve().parents[2]
"""The folder above the package: the repository of an editable install."""


def probrank_version() -> str:
    """The installed distribution's version (``"unknown"`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("probrank")
    except PackageNotFoundError:
        return "unknown"


def git_commit(repository: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` in ``repository`` (default: the one the package was loaded from).

    Returns:
        The 40-hex commit, or None when git is missing, the folder is not a repository, git
        fails or takes more than 10 s. Never raises.
    """
    folder = Path(repository) if repository is not None else _REPOSITORY
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    commit = done.stdout.strip()
    if done.returncode != 0 or len(commit) != 40:
        return None
    return commit


def default_run_dir(config_path: str | Path, *, now: _dt.datetime | None = None) -> Path:
    """``runs/<config stem>-<UTC time, YYYYmmddTHHMMSSZ>`` (relative to the working folder); a
    ``-2``, ``-3``... suffix when that folder exists."""
    moment = (now or _dt.datetime.now(_dt.timezone.utc)).astimezone(_dt.timezone.utc)
    base = Path("runs") / f"{Path(config_path).stem}-{moment:%Y%m%dT%H%M%SZ}"
    path, count = base, 1
    while path.exists():
        count += 1
        path = base.with_name(f"{base.name}-{count}")
    return path


def json_ready(value: Any) -> Any:
    """``value`` as strict JSON data: NaN and infinities become None, dataclasses dicts, enums
    their values, tuples lists, paths strings."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Enum):
        return json_ready(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_ready(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_ready(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist"):  # numpy / torch scalars and arrays
        return json_ready(value.tolist())
    return str(value)


def _is_table(hint: Any) -> type | None:
    """The schema dataclass of a hint (``Schema``, ``Schema | None`` or a
    :class:`~probrank._config.CheckedAs` table), else None."""
    from probrank._config import CheckedAs

    def checked_as(hint: Any) -> type | None:
        if typing.get_origin(hint) is not typing.Annotated:
            return None
        markers = [m for m in typing.get_args(hint)[1:] if isinstance(m, CheckedAs)]
        return markers[0].schema if markers else None

    if checked_as(hint) is not None:
        return checked_as(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint
    for arg in typing.get_args(hint):
        if checked_as(arg) is not None:
            return checked_as(arg)
        if dataclasses.is_dataclass(arg) and isinstance(arg, type):
            return arg
    return None


def resolve_config(config: Mapping[str, Any], schema: type) -> dict[str, Any]:
    """Every table and key of ``schema``: the config's value, else None (the default of the
    typed settings applies; :meth:`RunOutput.payload` fills it from the settings the protocol
    reports). Free tables (``dict[str, T]``) and arrays of tables are copied as given.

    Args:
        config: A document that passed :func:`probrank._config.check_config` with ``schema``.
        schema: The protocol's schema dataclass.
    """
    hints = typing.get_type_hints(schema, include_extras=True)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(schema):
        table = _is_table(hints[f.name])
        if f.name in config:
            value = config[f.name]
            if table is not None and isinstance(value, Mapping):
                out[f.name] = resolve_config(value, table)
            else:
                out[f.name] = json_ready(value)
        elif table is not None:
            out[f.name] = resolve_config({}, table)
        else:
            out[f.name] = None  # the default applies (filled where the protocol reports it)
    return out


def _merge(resolved: dict[str, Any], used: Mapping[str, Any]) -> dict[str, Any]:
    """``resolved`` with the ``None`` entries filled from ``used`` (nested by table)."""
    out = dict(resolved)
    for key, value in used.items():
        if key not in out:
            continue
        if isinstance(out[key], dict) and isinstance(value, Mapping):
            out[key] = _merge(out[key], value)
        elif out[key] is None:
            out[key] = json_ready(value)
    return out


@dataclass
class RunOutput:
    """Where one experiment run writes its results.

    Attributes:
        directory: The run folder (created on first write).
        stem: File stem (the config's).
        provenance: The ``provenance`` object of the results JSON.
        card: The model card's results folder, written too (``--update-card``), or None.
        written: Every file written so far.
    """

    directory: Path
    stem: str
    provenance: dict[str, Any]
    card: Path | None = None
    written: list[Path] = field(default_factory=list)

    def _folders(self) -> list[Path]:
        return [self.directory] + ([self.card] if self.card is not None else [])

    def payload(self, result: ExperimentResult) -> dict[str, Any]:
        """The results JSON of ``result`` (see the module docstring)."""
        provenance = dict(self.provenance)
        if result.settings:
            provenance["settings"] = json_ready(result.settings)
            provenance["resolved_config"] = _merge(
                provenance.get("resolved_config", {}), result.settings
            )
        return json_ready(
            {
                "title": result.title,
                "means": result.means(),
                "stds": result.stds(),
                "values": result.values,
                "extra": result.extra,
                **result.data,
                "notes": result.notes,
                "provenance": provenance,
            }
        )

    def write(self, result: ExperimentResult, *, figures: bool = True) -> list[Path]:
        """Write the results JSON and (with ``figures``) the figures of ``result``.

        Returns:
            The files written by this call.
        """
        text = json.dumps(self.payload(result), indent=2, allow_nan=False) + "\n"
        paths: list[Path] = []
        for folder in self._folders():
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{self.stem}.json"
            write_text_atomically(path, text)
            paths.append(path)
            if figures:
                for name, figure in result.figures.items():
                    png = folder / f"{self.stem}_{name}.png"
                    save_figure(figure, png, dpi=80, tight=False)
                    paths.append(png)
        self.written.extend(p for p in paths if p not in self.written)
        return paths


_ACTIVE: contextvars.ContextVar[RunOutput | None] = contextvars.ContextVar(
    "probrank_run_output", default=None
)


@contextmanager
def writing_to(output: RunOutput | None) -> Iterator[RunOutput | None]:
    """Make ``output`` the place :func:`save_partial` writes to, for the block."""
    token = _ACTIVE.set(output)
    try:
        yield output
    finally:
        _ACTIVE.reset(token)


def save_partial(result: ExperimentResult) -> None:
    """Write the results so far of a long protocol (e.g. after each cell of a grid), so an
    interrupted run keeps what it measured; nothing happens when no run folder is active."""
    output = _ACTIVE.get()
    if output is not None:
        output.write(result, figures=False)


def provenance(
    *,
    config_path: Path,
    config: Mapping[str, Any],
    schema: type | None,
    seeds: int,
    smoke: bool,
    threads: int | None,
) -> dict[str, Any]:
    """The ``provenance`` object of a run (see the module docstring; ``settings`` is added
    from the protocol's result when it is written)."""
    try:
        import torch

        torch_version: str | None = str(torch.__version__)
    except ImportError:  # pragma: no cover - a hard dependency
        torch_version = None
    return {
        "probrank_version": probrank_version(),
        "git_commit": git_commit(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": list(sys.argv),
        "python": platform.python_version(),
        "torch": torch_version,
        "config_path": str(config_path),
        "config": json_ready(config),
        "resolved_config": resolve_config(config, schema) if schema is not None else None,
        "seeds": list(range(seeds)),
        "smoke": smoke,
        "threads": threads,
    }


def card_folder(output: Output, config_path: Path) -> Path:
    """The model card's results folder of a config: its ``[output] folder`` beside the config.

    Args:
        output: The config's ``[output]`` settings.
        config_path: The config file.

    Raises:
        InputDataError: the config says ``[output] save = false``.
    """
    if not output.save:
        raise InputDataError(
            "--update-card: this config has [output] save = false", path=config_path
        )
    return config_path.parent / output.folder
