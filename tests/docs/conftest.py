"""The built documentation site (``make docs``, which ``make test`` runs before the tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.serve.conftest import _missing, chromium  # noqa: F401 (the fixture, shared)

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "docs" / "_build" / "html"


@pytest.fixture(scope="session")
def site() -> Path:
    """The built site's folder (skipped without it, a failure under ``CI=true``)."""
    if not (SITE / "index.html").is_file():
        _missing(f"no built site in {SITE}: run `make docs` first")
    return SITE
