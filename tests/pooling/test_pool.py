from __future__ import annotations

import numpy as np
import pytest

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.pooling.pool import Judgements, Pool


def _runs() -> list[Run]:
    a = Run({"1": {"a": 3.0, "b": 2.0, "c": 1.0}, "2": {"x": 1.0}}, name="A")
    b = Run({"1": {"b": 3.0, "d": 2.0, "a": 1.0}}, name="B")
    return [a, b]


def test_pool_arrays() -> None:
    pool = Pool.from_runs(_runs(), depth=3)
    assert pool.topics == ("1", "2")
    assert pool.num_items == 5
    assert list(pool.docs) == ["a", "b", "c", "d", "x"]
    a, b, c, d, _x = range(5)
    assert pool.rankings[0, 0].tolist() == [a, b, c]
    assert pool.rankings[1, 0].tolist() == [b, d, a]
    assert pool.rankings[1, 1].tolist() == [-1, -1, -1]
    assert pool.ranks[:, a].tolist() == [1, 3]
    assert pool.ranks[:, d].tolist() == [0, 2]
    assert pool.topic_start.tolist() == [0, 4, 5]


def test_pool_depth_cuts() -> None:
    pool = Pool.from_runs(_runs(), depth=1)
    assert sorted(pool.docs.tolist()) == ["a", "b", "x"]


def test_bad_pools() -> None:
    with pytest.raises(InputDataError, match="at least one run"):
        Pool.from_runs([])
    with pytest.raises(InputDataError, match="distinct"):
        Pool.from_runs([_runs()[0], _runs()[0]])


def test_judgements_order_and_qrels(tmp_path) -> None:
    pool = Pool.from_runs(_runs(), depth=3)
    judged = Judgements(pool)
    judged.add(np.array([3, 0]), np.array([2, 0]))
    with pytest.raises(InputDataError, match="twice"):
        judged.add([3], [1])
    assert judged.to_qrels().as_dict() == {"1": {"d": 2, "a": 0}}
    path = tmp_path / "judged.qrels"
    judged.write(str(path))
    assert path.read_text().splitlines() == ["1 0 d 2", "1 0 a 0"]
    back = Judgements.from_qrels(pool, Qrels.read(path))
    assert back.order == [3, 0]
    assert pool.grades_from({"1": {"b": 1}}).tolist() == [0, 1, 0, 0, 0]
    assert pool.unpooled_relevant({"1": {"zz": 2, "a": 2}}, 1).tolist() == [1, 0]
