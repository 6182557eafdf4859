"""Where the shared public data lives: ``$PROBRANK_DATA``, else ``<repo>/../shared/data``."""

from __future__ import annotations

import os
from pathlib import Path

from probrank.exceptions import InputDataError

__all__ = ["shared_data_dir"]


def shared_data_dir(*parts: str, must_exist: bool = True) -> Path:
    """Path of the shared data folder (or of ``parts`` inside it).

    The folder is ``$PROBRANK_DATA`` when set, else ``../shared/data`` beside the repository
    this package was installed from.

    Raises:
        InputDataError: ``must_exist`` and the path does not exist.
    """
    root = os.environ.get("PROBRANK_DATA")
    base = Path(root) if root else Path(__file__).resolve().parents[3] / "shared" / "data"
    path = base.joinpath(*parts)
    if must_exist and not path.exists():
        raise InputDataError(
            f"shared data not found at {path}; set PROBRANK_DATA to the folder that holds it"
        )
    return path
