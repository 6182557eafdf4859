"""Saving and loading the model objects: a folder with a JSON manifest and safetensors weights.

A saved model is a directory::

    manifest.json          what was saved, by which probrank, and how to check it
    <group>.safetensors    one safetensors file per tensor group (e.g. ``head``, ``scaler``)

The manifest (``format_version`` :data:`FORMAT_VERSION`) holds the probrank version, the model
class, its settings (:func:`~probrank.models._settings.settings_to_json`), the encoder's id and
revision (or null), the fitted non-tensor state (chosen hyperparameters, names, ...) and, per
weights file, its SHA-256 and every tensor's name, shape and dtype. Every file is written
atomically (:func:`probrank._files.write_atomically`), the manifest last.

:func:`load_model` refuses, with an :class:`~probrank.exceptions.InputDataError` that says
why: a path that is not such a folder, a missing or unreadable manifest, another manifest
format, a probrank of another major.minor version, a manifest of another model class, a missing
weights file, a file whose checksum does not match (damaged or truncated), or tensors other
than those the manifest lists. Nothing is unpickled: weights are read with
:func:`safetensors.torch.load`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor

from probrank._files import check_output_folder, write_atomically, write_text_atomically
from probrank.exceptions import InputDataError
from probrank.models._manifest import check_manifest, parse_manifest, read_settings

__all__ = ["FORMAT_VERSION", "MANIFEST_NAME", "Manifest", "load_model", "save_model"]

FORMAT_VERSION = 1
"""Version of the manifest layout; a manifest of another version is refused."""

MANIFEST_NAME = "manifest.json"
"""File name of the manifest inside a saved model's folder."""

_SUFFIX = ".safetensors"
S = TypeVar("S")


@dataclass(frozen=True)
class Manifest:
    """A saved model's manifest.

    Attributes:
        model_class: The model's class name (e.g. ``"GPFRanker"``).
        probrank_version: The probrank version that saved it.
        settings: The settings as JSON.
        encoder: The encoder's id, revision and options, or None (no encoder).
        state: Fitted non-tensor state, as JSON.
        weights: ``{group: {"file", "sha256", "tensors": {name: {"shape", "dtype"}}}}``.
        file: The ``manifest.json`` it was read from (None: not read from a file).
    """

    model_class: str
    probrank_version: str
    settings: dict[str, Any]
    encoder: dict[str, Any] | None
    state: dict[str, Any]
    weights: dict[str, dict[str, Any]]
    file: Path | None = None

    def read_settings(self, build: Callable[[dict[str, Any]], S]) -> S:
        """The settings built by ``build`` (the settings class's reader); its errors name
        the manifest file and ``settings`` (:func:`probrank.models._manifest.read_settings`)."""
        return read_settings(build, self.settings, self.file or Path(MANIFEST_NAME))


def _version() -> str:
    from probrank import __version__

    return __version__


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def save_model(
    path: str | os.PathLike[str],
    *,
    model_class: str,
    settings: Mapping[str, Any],
    tensors: Mapping[str, Mapping[str, Tensor]],
    state: Mapping[str, Any],
    encoder: Mapping[str, Any] | None,
) -> Path:
    """Write a model folder (created if needed; files already there are replaced).

    Args:
        path: The folder.
        model_class: The model's class name.
        settings: Its settings as JSON.
        tensors: ``{group: {name: tensor}}``; each group becomes ``<group>.safetensors``.
        state: Fitted non-tensor state (JSON-serialisable).
        encoder: The encoder's description, or None.

    Returns:
        The folder.

    Raises:
        InputDataError: an empty ``path`` (never the working folder by accident), ``path`` is
            a file, or a group name is not a plain file name.
    """
    folder = check_output_folder(path, what="model folder")
    folder.mkdir(parents=True, exist_ok=True)
    weights: dict[str, dict[str, Any]] = {}
    for group, named in tensors.items():
        if not group or Path(group).name != group or group.startswith("."):
            raise InputDataError(f"tensor group {group!r} is not a plain file name")
        plain = {name: t.detach().cpu().contiguous().clone() for name, t in named.items()}
        data = _serialise(plain)
        file_name = group + _SUFFIX
        write_atomically(folder / file_name, _bytes_writer(data))
        weights[group] = {
            "file": file_name,
            "sha256": hashlib.sha256(data).hexdigest(),
            "tensors": {
                name: {"shape": list(t.shape), "dtype": _dtype_name(t.dtype)}
                for name, t in plain.items()
            },
        }
    manifest = {
        "format_version": FORMAT_VERSION,
        "probrank_version": _version(),
        "model_class": model_class,
        "settings": dict(settings),
        "encoder": None if encoder is None else dict(encoder),
        "state": dict(state),
        "weights": weights,
    }
    text = json.dumps(manifest, indent=2, sort_keys=True, allow_nan=False)
    write_text_atomically(folder / MANIFEST_NAME, text + "\n")
    return folder


def _bytes_writer(data: bytes) -> Callable[[str], object]:
    def write(temporary: str) -> object:
        return Path(temporary).write_bytes(data)

    return write


def _serialise(tensors: dict[str, Tensor]) -> bytes:
    from safetensors.torch import save

    return save(tensors)


def _read_manifest(folder: Path) -> dict[str, Any]:
    if not folder.is_dir():
        raise InputDataError("not a saved model: no such folder", path=folder)
    file = folder / MANIFEST_NAME
    if not file.is_file():
        raise InputDataError(f"not a saved probrank model: no {MANIFEST_NAME}", path=folder)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputDataError(f"damaged manifest ({exc})", path=file) from None
    manifest = parse_manifest(text, file)
    if not isinstance(manifest, dict):
        raise InputDataError("damaged manifest: not a JSON object", path=file)
    return manifest


def _check_header(manifest: dict[str, Any], file: Path, model_class: str) -> None:
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise InputDataError(
            f"manifest format version {version!r}, but this probrank reads version "
            f"{FORMAT_VERSION}: re-fit the model or load it with the probrank that saved it",
            path=file,
        )
    saved_by = str(manifest.get("probrank_version"))
    if _major_minor(saved_by) != _major_minor(_version()):
        raise InputDataError(
            f"saved by probrank {saved_by}, this is probrank {_version()} (another major.minor "
            "version): re-fit the model or load it with the version that saved it",
            path=file,
        )
    found = manifest.get("model_class")
    if found != model_class:
        raise InputDataError(f"the folder holds a {found} model, not a {model_class}", path=file)
    missing = [
        k for k in ("settings", "encoder", "state", "weights") if k not in manifest
    ]  # fmt: skip
    if missing:
        raise InputDataError(f"damaged manifest: missing {missing}", path=file)


def _load_group(folder: Path, group: str, entry: Mapping[str, Any]) -> dict[str, Tensor]:
    from safetensors.torch import load

    file = folder / str(entry.get("file", ""))
    if Path(str(entry.get("file", ""))).name != entry.get("file") or not file.is_file():
        raise InputDataError(f"missing weights file {entry.get('file')!r}", path=folder)
    data = file.read_bytes()
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        raise InputDataError(
            "weights file damaged or truncated (its SHA-256 does not match the manifest)",
            path=file,
        )
    try:
        tensors = load(data)
    except Exception as exc:  # safetensors raises its own error types
        raise InputDataError(f"unreadable weights file ({exc})", path=file) from None
    expected = entry.get("tensors", {})
    if set(tensors) != set(expected):
        raise InputDataError(
            f"weights file holds {sorted(tensors)}, the manifest lists {sorted(expected)}",
            path=file,
        )
    for name, tensor in tensors.items():
        spec = expected[name]
        if list(tensor.shape) != spec.get("shape") or _dtype_name(tensor.dtype) != spec.get(
            "dtype"
        ):
            raise InputDataError(
                f"tensor {name!r} is {_dtype_name(tensor.dtype)} {list(tensor.shape)}, the "
                f"manifest says {spec.get('dtype')} {spec.get('shape')}",
                path=file,
            )
    return tensors


def load_model(
    path: str | os.PathLike[str], model_class: str
) -> tuple[Manifest, dict[str, dict[str, Tensor]]]:
    """Read and check a model folder written by :func:`save_model`.

    Args:
        path: The folder.
        model_class: The class name the caller expects.

    Returns:
        ``(manifest, {group: {name: tensor}})``.

    Raises:
        InputDataError: see the module docstring.
    """
    folder = Path(path)
    manifest = _read_manifest(folder)
    _check_header(manifest, folder / MANIFEST_NAME, model_class)
    manifest = check_manifest(manifest, folder / MANIFEST_NAME)  # every level, typed
    weights = manifest["weights"]
    tensors = {group: _load_group(folder, group, entry) for group, entry in weights.items()}
    return (
        Manifest(
            model_class=model_class,
            probrank_version=str(manifest["probrank_version"]),
            settings=dict(manifest["settings"]),
            encoder=manifest["encoder"],
            state=dict(manifest["state"]),
            weights=weights,
            file=folder / MANIFEST_NAME,
        ),
        tensors,
    )
