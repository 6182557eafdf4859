"""``probrank demo`` (every section of probrank.demo, quick sizes) prints no warning: no
FutureWarning, DeprecationWarning or MigrationWarning from probrank's calls or its imports of
ArviZ, GPyTorch and BoTorch (issue 30), on either ArviZ line, even with every warning shown."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_the_demo_sections_print_no_warning(tmp_path: Path) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    env.pop("PYTHONWARNINGS", None)
    result = subprocess.run(
        [sys.executable, "-W", "always", "-m", "probrank.cli", "demo", "--quick",
         "-o", str(tmp_path / "demo"), "--threads", "1"],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    warned = [line for line in result.stderr.splitlines() if re.search(r"\b\w*Warning\b", line)]
    assert not warned, warned
    assert (tmp_path / "demo" / "report.md").exists()
