"""Imports ``linear_operator`` (the matrix library under GPyTorch and BoTorch) quietly.

linear_operator decorates two functions of ``linear_operator.utils.linear_cg`` with
``@torch.jit.script`` when it is imported, and torch 2.13 deprecates ``torch.jit.script`` with a
``DeprecationWarning`` that no call of probrank's causes and no user can act on. Every module
of probrank that imports GPyTorch, BoTorch or linear_operator imports this module first (before
an ``# isort: split``), so linear_operator is imported here, with exactly that message filtered
and only around this import; packages that import lazily (``nn``, ``models``, ``serve``) stay
lazy.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    # torch 2.13: "`torch.jit.script` is deprecated. Please switch to `torch.compile` or
    # `torch.export`." raised by linear_operator's import-time @torch.jit.script
    warnings.filterwarnings(
        "ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning
    )
    import linear_operator  # noqa: F401
