"""The tutorials: stored without outputs, listed in their README, and run top to bottom.

Every notebook under ``tutorials/NN_name/`` is executed with nbclient under ``SMOKE_TEST=1``
(small sizes) by a Jupyter kernel that runs *this* interpreter: the kernel spec is written to
a temporary folder with ``sys.executable``, so no user-level or system kernel is picked up and
a fresh CI machine needs nothing installed beyond the ``test`` extra. The notebooks read
``../shared/data`` (or ``$PROBRANK_DATA``): without it they are skipped, except under
``CI=true`` where that fails, as for the integration tests. Set
``PROBRANK_TUTORIALS_EXECUTED`` to a folder to keep the executed notebooks (with outputs)
there for inspection.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("[0-9][0-9]_*/*.ipynb"))
KERNEL = "probrank-tutorials"
CELL_TIMEOUT_S = 600


def test_every_tutorial_is_found_and_numbered() -> None:
    assert len(NOTEBOOKS) >= 5
    for path in NOTEBOOKS:
        assert path.stem == path.parent.name, f"{path}: name the notebook after its folder"
    numbers = [p.parent.name[:2] for p in NOTEBOOKS]
    assert numbers == [f"{i:02d}" for i in range(1, len(NOTEBOOKS) + 1)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_stored_notebook_has_no_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [], f"{path.name} cell {index} has stored outputs"
        assert cell.execution_count is None, f"{path.name} cell {index} has an execution count"
    assert notebook.metadata["kernelspec"]["language"] == "python"
    sources = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert "SMOKE_TEST" in sources, f"{path.name} does not honour SMOKE_TEST"


def test_readme_links_every_tutorial() -> None:
    readme = (TUTORIALS / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)]+\.ipynb)\)", readme))
    assert linked == {p.relative_to(TUTORIALS).as_posix() for p in NOTEBOOKS}


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernel spec whose argv is this interpreter (``sys.executable``)."""
    folder = tmp_path_factory.mktemp("kernels")
    spec = folder / KERNEL
    spec.mkdir()
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "probrank tutorials", "language": "python"})
    )
    return folder


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_tutorial_runs_in_smoke_mode(path: Path, shared_data: Path, kernel_dir: Path) -> None:
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    specs = KernelSpecManager(kernel_dirs=[str(kernel_dir)])
    manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # the kernel's inline backend draws the figures
    env.update(
        SMOKE_TEST="1",
        PROBRANK_DATA=str(shared_data),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    client = NotebookClient(
        notebook,
        km=manager,
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute(env=env)
    finally:
        keep = os.environ.get("PROBRANK_TUTORIALS_EXECUTED")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, Path(keep) / path.name)
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert not errors
    # issue 30: no warning about an API's future reaches the reader (FutureWarning,
    # DeprecationWarning, MigrationWarning), on either ArviZ line; numerical notes such as
    # GPyTorch's NumericalWarning ("added jitter") are information the reader may want
    warned = [
        line
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream" and output.name == "stderr"
        for line in output.text.splitlines()
        if re.search(r"\b(Future|Deprecation|PendingDeprecation|Migration)Warning\b", line)
    ]
    assert not warned, warned
