"""The demo's interactive section: a simulated session on generated questions."""

from __future__ import annotations

from pathlib import Path

from probrank.demo.interactive import demo_session


def test_demo_session_writes_a_plot(tmp_path: Path) -> None:
    markdown, results = demo_session(tmp_path, seed=0, quick=True)
    assert (tmp_path / "interactive_accuracy.png").stat().st_size > 1000
    assert "laplace+ei t=0.3" in results and "| configuration |" in markdown
    assert len(results["laplace+ei t=0.3"]["accuracy"]) == 5
