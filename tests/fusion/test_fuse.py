"""fuse(): order invariance, missing topics / empty lists / constant scores, options, ranx."""

from __future__ import annotations

import itertools
import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probrank.data import Run
from probrank.exceptions import ConvergenceWarning, InputDataError
from probrank.fusion import FusionMethod, Normalization, fuse
from tests.fusion.ranx_reference import ranx_results

SCORE_METHODS = ["combsum", "combmnz", "combmax"]
ALL_CASES = [(m, n) for m in SCORE_METHODS for n in Normalization] + [
    ("rrf", "minmax"),
    ("meta", "minmax"),
]

# Scores from a small set so that ties (within and across runs) are frequent.
_lists = st.dictionaries(
    st.sampled_from([f"d{i}" for i in range(8)]),
    st.sampled_from([-1.0, 0.0, 0.1, 0.5, 1.0, 2.5, 7.0]) | st.floats(-5, 5, width=32),
    max_size=8,
)
_runs = st.lists(
    st.dictionaries(st.sampled_from(["1", "2", "10", "a"]), _lists, max_size=4),
    min_size=1,
    max_size=4,
)


def _fuse_quiet(runs: list[Run], method: str, norm: str, **kw: object) -> Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fuse(runs, method, norm=norm, **kw)  # type: ignore[arg-type]


def _assert_finite(run: Run) -> None:
    for docs in run.as_dict().values():
        assert all(math.isfinite(v) for v in docs.values())


@pytest.mark.parametrize(("method", "norm"), ALL_CASES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_runs, perm_seed=st.randoms(use_true_random=False))
def test_fusion_is_invariant_to_run_order(method, norm, data, perm_seed) -> None:
    runs = [Run(d, name=f"r{i}") for i, d in enumerate(data)]
    shuffled = list(runs)
    perm_seed.shuffle(shuffled)
    first = _fuse_quiet(runs, method, norm, depth=5)
    second = _fuse_quiet(shuffled, method, norm, depth=5)
    assert first.to_dict() == second.to_dict()  # exact: same floats, same ranking
    for qid in first:
        assert first.ranking(qid) == second.ranking(qid)
    _assert_finite(first)


def test_weighted_fusion_is_invariant_to_run_order() -> None:
    runs = [
        Run({"1": {"a": 0.3, "b": 0.1, "c": 0.2}, "2": {"a": 1.0}}, name="x"),
        Run({"1": {"b": 0.7, "c": 0.1}, "2": {"b": 2.0, "c": 2.0}}, name="y"),
        Run({"1": {"c": 5.0, "a": 1.0}}, name="z"),
    ]
    weights = {"x": {"1": 0.1, "2": 0.7}, "y": {"1": 0.3, "2": 0.2}, "z": {"1": 0.9}}
    outs = [
        fuse(list(p), "weighted", weights=weights).to_dict() for p in itertools.permutations(runs)
    ]
    assert all(o == outs[0] for o in outs)


# Run A lacks topic 3, run B has an empty list for topic 2 and constant scores for topic 1,
# run C holds one document per topic; topic 4 is empty everywhere.
A = Run({"1": {"a": 3.0, "b": 1.0, "c": 2.0}, "2": {"a": 1.0, "b": 1.0}, "4": {}}, name="A")
B = Run({"1": {"a": 0.5, "d": 0.5, "e": 0.5}, "2": {}, "3": {"x": -2.0, "y": -1.0}}, name="B")
C = Run({"1": {"f": 10.0}, "3": {"x": 4.0}, "4": {}}, name="C")


@pytest.mark.parametrize(("method", "norm"), ALL_CASES)
def test_missing_topics_empty_lists_and_constant_scores(method: str, norm: str) -> None:
    fused = _fuse_quiet([A, B, C], method, norm)
    _assert_finite(fused)
    assert set(fused) == {"1", "2", "3"}  # topic 4 has no document in any run
    assert set(fused["1"]) == {"a", "b", "c", "d", "e", "f"}
    assert set(fused["2"]) == {"a", "b"}
    assert set(fused["3"]) == {"x", "y"}


def test_constant_minmax_list_counts_as_top_for_every_document() -> None:
    fused = fuse([A, B, C], "combsum")["1"]
    # A: a 1, c 0.5, b 0;  B constant: a, d, e 1;  C single document: f 1
    assert dict(fused) == pytest.approx(
        {"a": 2.0, "c": 0.5, "b": 0.0, "d": 1.0, "e": 1.0, "f": 1.0}
    )


def test_fuse_cuts_at_depth_in_trec_eval_order_and_is_pure() -> None:
    before = [r.to_dict() for r in (A, B, C)]
    fused = fuse([A, B, C], "combsum", depth=1)
    assert [r.to_dict() for r in (A, B, C)] == before
    # Tops: A -> a (3.0); B's three documents tie at 0.5 and trec_eval puts the largest docno,
    # e, first; C -> f.
    assert set(fused["1"]) == {"a", "e", "f"}


def test_enum_and_string_options_agree() -> None:
    by_str = fuse([A, B, C], "combmnz", norm="zscore").to_dict()
    by_enum = fuse([A, B, C], FusionMethod.COMBMNZ, norm=Normalization.ZSCORE).to_dict()
    assert by_str == by_enum


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "borda"},
        {"norm": "max"},
        {"depth": 0},
        {"method": "rrf", "weights": {"A": 1.0, "B": 1.0, "C": 1.0}},
        {"method": "weighted"},
    ],
)
def test_bad_options_raise(kwargs: dict) -> None:
    with pytest.raises(InputDataError):
        fuse([A, B, C], **kwargs)


def test_no_runs_raise() -> None:
    with pytest.raises(InputDataError):
        fuse([])


def test_agrees_with_ranx_fuse() -> None:
    raw = [
        {"1": {"a": 3.0, "b": 1.5, "c": 0.2, "d": 0.1}, "2": {"a": 0.9, "e": 0.3, "f": 0.1}},
        {"1": {"b": 9.0, "c": 4.0, "e": 1.0}, "2": {"e": 2.0, "a": 1.0, "g": 0.5}},
        {"1": {"d": -1.0, "a": -2.0, "c": -3.5}, "2": {"f": 5.0, "g": 4.0, "e": 2.0}},
    ]
    ours = [Run(r, name=f"r{i}") for i, r in enumerate(raw)]
    cases = [
        ("combsum", "minmax", "sum", "min-max"),
        ("combmnz", "minmax", "mnz", "min-max"),
        ("combmax", "minmax", "max", "min-max"),
        ("combsum", "zscore", "sum", "zmuv"),
        ("combsum", "sum", "sum", "sum"),
        ("combsum", "rank", "sum", "rank"),
        ("rrf", "minmax", "rrf", None),
    ]
    # ranx in a subprocess without numba's JIT (its compilation alone takes minutes)
    jobs = {
        str(i): {"op": "fuse", "runs": raw, "qrels": None, "args": {"norm": rn, "method": rm}}
        for i, (_, _, rm, rn) in enumerate(cases)
    }
    results = ranx_results(jobs)
    for i, (method, norm, _, _) in enumerate(cases):
        mine = fuse(ours, method, norm=norm, depth=None).to_dict()
        other = results[str(i)]["run"]
        assert set(mine) == set(other)
        for qid in mine:
            assert mine[qid] == pytest.approx(dict(other[qid]), rel=1e-9, abs=1e-12), (
                method,
                norm,
            )
