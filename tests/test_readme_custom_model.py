"""The "Custom priors and likelihoods" page's command-line block (``docs/guide/custom-priors.md``),
run as it stands:
a likelihood and a prior written in a module beside a config reach ``probrank experiment``,
and a typo in the callable's name is one line, exit code 2, before any work."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "custom-priors.md"
SECTION = "# Custom priors and likelihoods"

pytestmark = pytest.mark.integration


def _block() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    match = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    assert match is not None, "the section has no ```sh block"
    return match.group(1)


def test_the_readme_block_runs(shared_data: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PROBRANK_DATA": str(shared_data),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", _block()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "my-qlfusion"
    out = done.stdout
    results = json.loads(out[: out.rindex("}") + 1])
    assert set(results["qlfusion"]) == {"P@5", "nDCG@10"}
    assert 0.0 <= results["qlfusion"]["nDCG@10"] <= 1.0
    written = json.loads(next((folder / "run").glob("*.json")).read_text(encoding="utf-8"))
    assert "likelihood=mylik:beta_binomial" in json.dumps(written)
    # the typo: one line naming the file, its line and the key; nothing written for it
    expected = [
        line.removeprefix("# ")
        for line in _block().splitlines()
        if line.startswith("# probrank: error:")
    ]
    assert done.stderr.strip().splitlines()[-1] == expected[0]
    assert "exit code 2" in out
