"""The trained fusion methods on hand-computed examples (closed forms), and their contract:
fit -> self, runs matched by name, order invariance, depth, relevance level, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from probrank.data import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion import (
    BayesFuse,
    FuserSettings,
    LearnedMethod,
    MAPFuse,
    PosFuse,
    ProbFuse,
    SegFuse,
    SlideFuse,
    make_fuser,
)
from probrank.fusion.bayesfuse import MISSING_LOG_ODDS


def _ranked(prefix: str, n: int) -> dict[str, float]:
    """``n`` documents ``prefix0 .. prefix{n-1}`` with scores ``n .. 1`` (best first)."""
    return {f"{prefix}{i}": float(n - i) for i in range(n)}


def _qrels_from_hits(hits: dict[str, list[int]], prefix: str = "d") -> Qrels:
    return Qrels(
        {
            q: {f"{prefix}{i}": 1 for i, h in enumerate(hs) if h} or {"none": 0}
            for q, hs in hits.items()
        }
    )


def _one_run(lengths: dict[str, int]) -> Run:
    return Run({q: _ranked("d", n) for q, n in lengths.items()}, name="a")


def _scores(run: Run, qid: str) -> list[float]:
    return [s for _, s in run.ranking(qid)]


def test_probfuse_closed_form() -> None:
    # hits A = 1 0 0 1, B = 1 1 0 0; 2 segments of 2: P1 = (1/2 + 1) / 2, P2 = (1/2 + 0) / 2
    run = _one_run({"A": 4, "B": 4})
    model = ProbFuse(2, depth=None).fit(
        [run], _qrels_from_hits({"A": [1, 0, 0, 1], "B": [1, 1, 0, 0]})
    )
    np.testing.assert_allclose(model.params["a"], [0.75, 0.25], rtol=0, atol=1e-15)
    # a list of 3: segments of ceil(3 / 2) = 2; segment 2 is discounted by 2
    fused = model.fuse([Run({"C": _ranked("d", 3)}, name="a")])
    np.testing.assert_allclose(_scores(fused, "C"), [0.75, 0.75, 0.125], rtol=0, atol=1e-15)


def test_posfuse_and_slidefuse_closed_form() -> None:
    # hits A = 1 0 1, B = 0 1: P = (1/2, 1/2, 1/1)
    run = _one_run({"A": 3, "B": 2})
    qrels = _qrels_from_hits({"A": [1, 0, 1], "B": [0, 1]})
    pos = PosFuse(depth=None).fit([run], qrels)
    np.testing.assert_allclose(pos.params["a"], [0.5, 0.5, 1.0], rtol=0, atol=1e-15)
    test = [Run({"C": _ranked("d", 4)}, name="a")]
    np.testing.assert_allclose(_scores(pos.fuse(test), "C")[:3], [1.0, 0.5, 0.5])
    assert pos.fuse(test).as_dict()["C"]["d3"] == 0.0  # beyond the trained ranks
    slide = SlideFuse(1, depth=None).fit([run], qrels)
    # windows over n = 4 ranks: [0,1] [0,2] [1,3] [2,3]; rank 3 is untrained (adds 0)
    expected = {"d0": 0.5, "d1": 2.0 / 3.0, "d2": 0.5, "d3": 0.5}
    got = slide.fuse(test).as_dict()["C"]
    assert got == pytest.approx(expected, rel=1e-15)
    assert (
        SlideFuse(0, depth=None).fit([run], qrels).fuse(test).as_dict() == pos.fuse(test).as_dict()
    )


def test_segfuse_closed_form() -> None:
    # relevant at ranks 1, 2 (segment 1: 2/5) and 11 (segment 2, ranks 6-15: 1/10)
    hits = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]
    model = SegFuse(depth=None).fit([_one_run({"A": 12})], _qrels_from_hits({"A": hits}))
    expected = np.zeros(10)
    expected[:2] = [0.4, 0.1]
    np.testing.assert_allclose(model.params["a"], expected, rtol=0, atol=1e-15)
    fused = model.fuse([Run({"C": _ranked("d", 6)}, name="a")])  # min-max: 1, .8, ..., 0
    minmax = [1.0, 0.8, 0.6, 0.4, 0.2]
    want = [0.4 * (s + 1.0) for s in minmax] + [0.1]
    np.testing.assert_allclose(_scores(fused, "C"), want, rtol=1e-15)


def test_bayesfuse_closed_form_and_missing_documents() -> None:
    # one topic: ranks 1-5 all relevant (p = 1 -> 1 - p floored at 0.001), 6-10 none
    hits = [1] * 5 + [0] * 5
    runs = [_one_run({"A": 10}), Run({"A": _ranked("d", 10)}, name="b")]
    model = BayesFuse(depth=None).fit(runs, _qrels_from_hits({"A": hits}))
    top, low = math.log(1.0 / 0.001), math.log(0.001 / 0.999)
    np.testing.assert_allclose(model.params["a"][:12], [top] * 5 + [low] * 7, rtol=1e-15)
    assert MISSING_LOG_ODDS == pytest.approx(low, rel=1e-15)
    test = [Run({"C": {"x": 2.0, "y": 1.0}}, name="a"), Run({"C": {"y": 5.0}}, name="b")]
    fused = model.fuse(test).as_dict()["C"]
    assert fused["x"] == pytest.approx(top + MISSING_LOG_ODDS, rel=1e-15)
    assert fused["y"] == pytest.approx(top + top, rel=1e-15)


def test_mapfuse_closed_form() -> None:
    # topic A: relevant at ranks 1 and 3 of 3 -> AP (1 + 2/3) / 2; topic B: none retrieved
    run = _one_run({"A": 3, "B": 2})
    qrels = Qrels({"A": {"d0": 1, "d2": 1}, "B": {"zz": 1}})
    model = MAPFuse(depth=None).fit([run], qrels)
    map_value = (1.0 + 2.0 / 3.0) / 2.0 / 2.0
    assert model.params["a"][0] == pytest.approx(map_value, rel=1e-15)
    fused = model.fuse([Run({"C": _ranked("d", 3)}, name="a")])
    np.testing.assert_allclose(_scores(fused, "C"), [map_value / r for r in (1, 2, 3)], rtol=1e-15)


def _three_runs() -> tuple[list[Run], Qrels]:
    rng = np.random.default_rng(3)
    runs = []
    for name in ("a", "b", "c"):
        runs.append(
            Run(
                {
                    q: {f"d{d}": float(rng.normal()) for d in rng.choice(40, 25, replace=False)}
                    for q in ("1", "2", "3", "4")
                },
                name=name,
            )
        )
    qrels = Qrels(
        {q: {f"d{d}": int(rng.integers(0, 3)) for d in range(0, 40, 3)} for q in ("1", "2", "3")}
    )
    return runs, qrels


POSITIONAL = [m for m in LearnedMethod if m.value not in ("wsum", "wmnz", "wrrf")]


@pytest.mark.parametrize("method", POSITIONAL)
def test_fit_returns_self_and_fuse_ignores_run_order(method: LearnedMethod) -> None:
    runs, qrels = _three_runs()
    model = make_fuser(method, FuserSettings(depth=20, segments=5, window=2))
    assert model.fit(runs, qrels) is model
    assert model.training_topics == ("1", "2", "3")  # topic 4 is not judged
    forward = model.fuse(runs).as_dict()
    backward = model.fuse(runs[::-1]).as_dict()
    assert forward == backward
    assert set(forward) == {"1", "2", "3", "4"}  # fuses unjudged topics too
    for qid, docs in forward.items():  # only each run's top 20 take part
        tops = {d for run in runs for d, _ in run.ranking(qid, 20)}
        assert set(docs) == tops


@pytest.mark.parametrize("method", POSITIONAL)
def test_params_round_trip(method: LearnedMethod) -> None:
    runs, qrels = _three_runs()
    model = make_fuser(method, FuserSettings(depth=20)).fit(runs, qrels)
    copy = make_fuser(method, FuserSettings(depth=20)).set_params(model.params)  # type: ignore[attr-defined]
    assert copy.fuse(runs).as_dict() == model.fuse(runs).as_dict()


def test_relevance_level_counts_only_high_grades() -> None:
    run = _one_run({"A": 2})
    qrels = Qrels({"A": {"d0": 1, "d1": 2}})
    np.testing.assert_allclose(PosFuse(depth=None).fit([run], qrels).params["a"], [1.0, 1.0])
    level2 = PosFuse(depth=None, relevance_level=2).fit([run], qrels)
    np.testing.assert_allclose(level2.params["a"], [0.0, 1.0])


def test_bad_input_raises() -> None:
    runs, qrels = _three_runs()
    with pytest.raises(InputDataError, match="not fitted"):
        PosFuse().fuse(runs)
    model = PosFuse().fit(runs, qrels)
    with pytest.raises(InputDataError, match="matched by name"):
        model.fuse(runs[:2])
    with pytest.raises(InputDataError, match="distinct"):
        PosFuse().fit([runs[0], runs[0]], qrels)
    with pytest.raises(InputDataError, match="share no topic"):
        PosFuse().fit(runs, Qrels({"99": {"d1": 1}}))
    with pytest.raises(InputDataError, match="Qrels"):
        PosFuse().fit(runs, {"1": {"d1": 1}})  # type: ignore[arg-type]
    for bad in (0, -1, True, 2.5):
        with pytest.raises(InputDataError, match="segments"):
            ProbFuse(bad)  # type: ignore[arg-type]
    with pytest.raises(InputDataError, match="window"):
        SlideFuse(-1)
    with pytest.raises(InputDataError, match="depth"):
        PosFuse(depth=0)
    with pytest.raises(InputDataError, match="method"):
        make_fuser("combsum")
    with pytest.raises(InputDataError, match="finite"):
        PosFuse().set_params({"a": [np.nan]})
