"""The documentation builds in strict mode: in a temporary copy of ``docs/``, the unchanged
pages build cleanly, and a copy with a broken cross-reference, a dead internal link and a
docstring that does not render fails the build with a message naming each.

The copy builds quickly: the notebooks are not executed (``PROBRANK_DOCS_EXECUTE=off``) and the
API pages are limited to two packages (``PROBRANK_DOCS_API``); the full build is ``make docs``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.xdist_group("docs-build")


def _copy(tmp_path: Path) -> Path:
    """``docs/`` (no build outputs) beside links to the folders its pages include."""
    copy = tmp_path / "repo"
    shutil.copytree(
        ROOT / "docs",
        copy / "docs",
        ignore=shutil.ignore_patterns("_build", "api", "tutorials", "__pycache__"),
    )
    for name in ("tutorials", "models", "README.md"):
        (copy / name).symlink_to(ROOT / name)
    return copy / "docs"


def _build(docs: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    pytest.importorskip(
        "sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')"
    )
    env = {
        **os.environ,
        "PROBRANK_DOCS_EXECUTE": "off",
        "PROBRANK_DOCS_API": "probrank.models,probrank.exceptions",
        "OMP_NUM_THREADS": "1",
        **(extra_env or {}),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-b",
            "html",
            "-n",
            "-W",
            "--keep-going",
            "-q",
            str(docs),
            str(docs / "_build" / "html"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess:
    return _build(_copy(tmp_path_factory.mktemp("clean")))


def test_the_pages_build_cleanly(clean_build: subprocess.CompletedProcess) -> None:
    assert clean_build.returncode == 0, clean_build.stderr[-3000:]


@pytest.fixture(scope="module")
def broken_build(
    tmp_path_factory: pytest.TempPathFactory,
) -> subprocess.CompletedProcess:
    """One copy broken three ways: a cross-reference, an internal link, a docstring."""
    tmp_path = tmp_path_factory.mktemp("broken")
    docs = _copy(tmp_path)
    page = docs / "guide" / "pooling.md"
    page.write_text(
        page.read_text(encoding="utf-8") + "\nSee {py:func}`probrank.models.no_such_function`.\n",
        encoding="utf-8",
    )
    page = docs / "getting-started.md"
    page.write_text(
        page.read_text(encoding="utf-8") + "\nSee [the missing page](/guide/no-such-page.md).\n",
        encoding="utf-8",
    )
    module = tmp_path / "broken_docstring_module.py"
    module.write_text(
        textwrap.dedent(
            '''
            """A module whose function's docstring is not valid reStructuredText."""

            __all__ = ["broken"]


            def broken() -> None:
                """Returns |B - A| without backticks, and an unclosed ``literal."""
            '''
        ),
        encoding="utf-8",
    )
    (docs / "broken.rst").write_text(
        "Broken\n======\n\n.. automodule:: broken_docstring_module\n   :members:\n",
        encoding="utf-8",
    )
    index = docs / "index.md"
    index.write_text(index.read_text(encoding="utf-8").replace("layout\n", "layout\nbroken\n"))
    return _build(docs, {"PYTHONPATH": str(tmp_path)})


def _warnings(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]


def test_the_broken_copy_fails(broken_build: subprocess.CompletedProcess) -> None:
    assert broken_build.returncode != 0


def test_a_broken_cross_reference_is_named(
    clean_build: subprocess.CompletedProcess, broken_build: subprocess.CompletedProcess
) -> None:
    found = [line for line in _warnings(broken_build) if "probrank.models.no_such_function" in line]
    assert found and "reference target not found" in found[0]
    assert "no_such_function" not in clean_build.stderr


def test_a_dead_internal_link_is_named(broken_build: subprocess.CompletedProcess) -> None:
    found = [line for line in _warnings(broken_build) if "no-such-page" in line]
    assert found and "getting-started.md" in found[0]


def test_a_docstring_that_does_not_render_is_named(
    broken_build: subprocess.CompletedProcess,
) -> None:
    found = [line for line in _warnings(broken_build) if "broken_docstring_module" in line]
    assert any("Undefined substitution referenced" in line for line in found)
    assert any("end-string" in line for line in found)
