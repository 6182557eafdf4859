"""top_runs: the k runs with the highest mean measure, ties by name."""

from __future__ import annotations

import pytest

from probrank.data import Qrels, Run
from probrank.evaluation.selection import top_runs
from probrank.exceptions import InputDataError


def test_top_runs_orders_by_map_and_breaks_ties_by_name() -> None:
    qrels = Qrels({"1": {"a": 1, "b": 0}})
    good = Run({"1": {"a": 2.0, "b": 1.0}}, name="good")
    bad = Run({"1": {"a": 1.0, "b": 2.0}}, name="bad")
    twin = Run({"1": {"a": 5.0, "b": 1.0}}, name="alsogood")
    chosen = top_runs(qrels, [bad, good, twin], 2)
    assert [r.name for r in chosen] == ["alsogood", "good"]
    assert [r.name for r in top_runs(qrels, [good, bad], 5)] == ["good", "bad"]
    with pytest.raises(InputDataError):
        top_runs(qrels, [good], 0)
