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
