"""Issue 3's golden numbers: CombSUM and CombMNZ (min-max, depth 100) of the six Robust03 runs
with the highest MAP, evaluated with trec_eval semantics, to trec_eval's four decimals."""

from __future__ import annotations

from pathlib import Path

import pytest

from probrank.data import Qrels, Run
from probrank.evaluation import evaluate
from probrank.evaluation.selection import top_runs
from probrank.fusion import fuse

pytestmark = pytest.mark.integration

SIX = ["pircRBa1", "aplrob03a", "uwmtCR0", "VTcdhgp1", "THUIRr0301", "fub03IeOLKe3"]
MEASURES = ["P@5", "nDCG@10", "AP"]


@pytest.fixture(scope="module")
def robust03(shared_data: Path) -> tuple[Qrels, list[Run]]:
    folder = shared_data / "fusion" / "robust03"
    runs = [Run.read(folder / "runs" / f"input.{name}.gz") for name in SIX]
    return Qrels.read(folder / "qrels.txt"), runs


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("combsum", {"P@5": 0.5680, "nDCG@10": 0.4894, "AP": 0.2949}),
        ("combmnz", {"P@5": 0.5620, "nDCG@10": 0.4860}),
    ],
)
def test_golden_fusion_numbers(robust03, method: str, expected: dict[str, float]) -> None:
    qrels, runs = robust03
    fused = fuse(runs, method, norm="minmax", depth=100)
    values = evaluate(qrels, fused, MEASURES)
    for measure, value in expected.items():
        assert values[measure] == pytest.approx(value, abs=5e-5), measure


def test_golden_numbers_do_not_depend_on_run_order(robust03) -> None:
    _, runs = robust03
    forward = fuse(runs, "combsum")
    backward = fuse(runs[::-1], "combsum")
    assert forward.to_dict() == backward.to_dict()


def test_top_runs_finds_the_six_best_by_map(shared_data: Path) -> None:
    folder = shared_data / "fusion" / "robust03"
    runs = [Run.read(path) for path in sorted((folder / "runs").glob("input.*.gz"))]
    chosen = top_runs(Qrels.read(folder / "qrels.txt"), runs, 6)
    assert {r.name for r in chosen} == {f"input.{name}" for name in SIX}
    assert chosen[0].name == "input.pircRBa1"  # MAP 0.3101 (data README, trec_eval 10.0)
