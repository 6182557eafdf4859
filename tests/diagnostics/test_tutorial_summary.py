"""Tutorial 7's summary table is ArviZ's: the notebook's own ``summary`` output, compared
with ``az.summary`` on the same data, column for column and value for value.

The notebook's code cells run in this process (``SMOKE_TEST=1``) up to the cell that builds
the table, so the test reads the very objects the notebook shows.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd
import pytest

from probrank._arviz import arviz as az
from tests.diagnostics.arviz_columns import summary_columns

NOTEBOOK = (
    Path(__file__).resolve().parents[2]
    / "tutorials"
    / "07_posterior_diagnostics"
    / "07_posterior_diagnostics.ipynb"
)


@pytest.mark.integration
@pytest.mark.slow
def test_tutorial_summary_equals_arviz_summary(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMOKE_TEST", "1")
    monkeypatch.setenv("PROBRANK_DATA", str(shared_data))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(NOTEBOOK.parent)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    namespace: dict[str, object] = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        exec(compile(cell.source, f"{NOTEBOOK.name} cell {index}", "exec"), namespace)
        if "table = summary(idata)" in cell.source:
            break
    table, idata = namespace["table"], namespace["idata"]
    assert isinstance(table, pd.DataFrame)
    reference = az.summary(idata)
    assert list(table.columns) == list(reference.columns)
    assert list(table.index) == list(reference.index)
    pd.testing.assert_frame_equal(table, reference, check_exact=True)
    assert list(table.columns) == summary_columns()
    assert table.attrs["chains"] == 2 and "divergences" in table.attrs
