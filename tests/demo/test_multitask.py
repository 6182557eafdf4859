"""The demo's multi-task section on generated answer lists."""

from __future__ import annotations

from pathlib import Path

from probrank.demo.multitask import demo_section


def test_demo_section_fits_both_heads_and_writes_one_png(tmp_path: Path) -> None:
    markdown, results = demo_section(tmp_path, seed=0, quick=True)
    assert [p.name for p in tmp_path.iterdir()] == ["multitask.png"]
    assert (tmp_path / "multitask.png").stat().st_size > 1000
    assert "multitask.png" in markdown
    assert set(results) == {"deterministic", "bayesian"}
    for row in results.values():
        # the generated utility is linear with noise sd 0.7: both heads learn it
        assert row["accuracy"] > 0.7
        assert 0.0 <= row["ECE"] <= 1.0
    assert results["deterministic"]["mean utility sd"] == 0.0
    assert results["bayesian"]["mean utility sd"] > 0.0
