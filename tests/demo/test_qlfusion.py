"""The demo's QLFusion section on generated runs."""

from __future__ import annotations

import random
from pathlib import Path

from probrank.data.trec import Qrels, Run
from probrank.demo.qlfusion import qlfusion_demo


def _generated(tmp_path: Path) -> tuple[Path, list[Path]]:
    rng = random.Random(0)
    qrels = {str(q): {f"d{d}": int(rng.random() < 0.3) for d in range(30)} for q in range(12)}
    Qrels(qrels).write(tmp_path / "qrels.txt")
    paths = []
    for r, noise in enumerate((0.3, 1.0)):
        scores = {
            q: {d: g + noise * rng.gauss(0, 1) for d, g in docs.items()}
            for q, docs in qrels.items()
        }
        path = tmp_path / f"run{r}.txt"
        Run(scores, name=f"run{r}").write(path)
        paths.append(path)
    return tmp_path / "qrels.txt", paths


def test_qlfusion_demo_on_generated_runs(tmp_path: Path) -> None:
    qrels_path, paths = _generated(tmp_path)
    figure = tmp_path / "figures" / "qlfusion.png"
    figure.parent.mkdir()  # a user-given output path: its folder is never created silently
    runs = [Run.read(p) for p in paths]
    out = qlfusion_demo(runs, Qrels.read(qrels_path), seed=0, quick=True, figure=figure)
    assert set(out) == {"combsum", "combmnz", "qlfusion", "qlfusion_mae"}
    assert 0.0 <= out["qlfusion"]["P@5"] <= 1.0
    assert 0.0 <= out["qlfusion_mae"]["MAE"] <= 1.0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in figure.parent.iterdir()] == ["qlfusion.png"]  # no temp file left
