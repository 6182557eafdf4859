"""Atomic writers: a failed write keeps the old file and leaves no temporary file behind."""

from __future__ import annotations

import stat
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from probrank._files import save_figure, write_atomically, write_text_atomically


def test_text_is_written_whole_with_readable_mode(tmp_path: Path) -> None:
    target = write_text_atomically(tmp_path / "sub" / "r.json", '{"a": 1}\n')
    assert target.read_text(encoding="utf-8") == '{"a": 1}\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.json"]


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = write_text_atomically(tmp_path / "r.txt", "old")

    def half_then_fail(temp: str) -> None:
        Path(temp).write_text("partial", encoding="utf-8")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, half_then_fail)
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]


def test_save_figure_writes_a_png_and_closes_the_figure(tmp_path: Path) -> None:
    figure, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = save_figure(figure, tmp_path / "f.png", dpi=50)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(figure.number)
    broken, _ = plt.subplots()
    with pytest.raises(ValueError):
        save_figure(broken, tmp_path / "g.png", dpi=-1)
    assert not plt.fignum_exists(broken.number)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]


def test_figure_writers_leave_pyplot_and_the_backend_alone(tmp_path: Path) -> None:
    # Experiments and the demo write figures from notebooks too: in a fresh interpreter whose
    # backend is 'svg' (standing in for an inline backend), writing the GPF demo's reliability
    # PNG and a demo bar chart must keep that backend and leave no pyplot figure open.
    import os
    import subprocess
    import sys

    code = (
        "import matplotlib; matplotlib.use('svg'); import matplotlib.pyplot as plt;"
        "from pathlib import Path;"
        "from probrank.experiments.gpf_demo import demo_section;"
        "from probrank.demo.plots import bar_chart;"
        f"folder = Path({str(tmp_path)!r});"
        "demo_section(folder, seed=0, quick=True);"
        "bar_chart({'a': {'P@5': 0.5}}, ['P@5'], 't', folder / 'b.png');"
        "print(matplotlib.get_backend(), len(plt.get_fignums()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env["OMP_NUM_THREADS"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split()[-2:] == ["svg", "0"]
    for name in ("gpf_reliability.png", "b.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
