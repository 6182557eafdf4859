"""The demo's calibration section: deterministic vs GPF head on synthetic features."""

from __future__ import annotations

from pathlib import Path

from probrank.demo.gpf import demo_section


def test_demo_section_writes_a_reliability_diagram(tmp_path: Path) -> None:
    markdown, results = demo_section(tmp_path, seed=0, quick=True)
    png = Path(results["reliability_png"])
    assert png.parent == tmp_path and png.stat().st_size > 1000
    assert png.name in markdown and "| shifted test | gpf |" in markdown
    for split in ("in-domain test", "shifted test"):
        for head in ("deterministic", "gpf"):
            values = results[split][head]
            assert 0 <= values["ECE"] <= 1 and 0 <= values["accuracy"] <= 1
    assert results["selected"]["gpf"]["gamma"] in (1.0, 2.0)
