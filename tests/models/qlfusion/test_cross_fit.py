"""QLFusion's cross-fitting: folds over topics and held-out weights."""

from __future__ import annotations

from probrank.models.qlfusion.cross_fit import make_folds


def test_folds_partition_topics() -> None:
    folds = make_folds(23, 10, seed=3)
    flat = sorted(i for f in folds for i in f)
    assert flat == list(range(23))
    assert {len(f) for f in folds} == {2, 3}
