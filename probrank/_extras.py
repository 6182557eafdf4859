"""Optional dependencies: each belongs to one extra of ``pyproject.toml`` (``probrank[mediqa]``,
``probrank[interactive]``, ...) and is imported through :func:`require`, which turns a missing
package into one clear line naming the extra.

Core modules never import an extra's package at import time (a test checks it): the import
happens inside the function that needs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from probrank.exceptions import MissingExtraError

__all__ = ["require"]


def require(module: str, *, extra: str, purpose: str | None = None) -> ModuleType:
    """Import ``module`` from an optional extra.

    Args:
        module: The module to import (``"bm25s"``, ``"rouge_score.tokenizers"``).
        extra: The extra of ``pyproject.toml`` that installs it (``"mediqa"``).
        purpose: What needs it, for the message (e.g. ``"the MEDIQA entailment features"``).

    Returns:
        The imported module.

    Raises:
        MissingExtraError: the module (or one it needs) is not installed; the message names
            the extra: ``pip install 'probrank[<extra>]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.partition(".")[0]
        what = f" for {purpose}" if purpose else ""
        raise MissingExtraError(
            f"{top} is not installed; it is needed{what}: pip install 'probrank[{extra}]'"
        ) from exc
