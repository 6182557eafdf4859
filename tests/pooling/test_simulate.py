from __future__ import annotations

import numpy as np
import pytest

from probrank.data.trec import Qrels
from probrank.exceptions import InputDataError
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.simulate import (
    next_documents,
    parse_budget,
    read_runs,
    resolve_budgets,
    simulate,
)
from probrank.pooling.strategies import STRATEGIES, Bayesian, StrategyName, make_strategy
from tests.pooling.conftest import synthetic_collection


def test_budgets() -> None:
    assert parse_budget("5%") == ("share", 0.05)
    assert parse_budget("12") == ("count", 12.0)
    assert resolve_budgets(["10%", "3", "10%"], 100) == [3, 10]
    for bad in ["0", "-1", "5 %", "abc", "150%"]:
        with pytest.raises(InputDataError):
            resolve_budgets([bad], 100)
    with pytest.raises(InputDataError, match="over the pool"):
        resolve_budgets(["101"], 100)


def test_registry_and_unknown_strategy() -> None:
    assert set(STRATEGIES) == set(StrategyName)
    with pytest.raises(InputDataError, match="strategy must be one of"):
        make_strategy("nope")


@pytest.mark.parametrize("name", [s.value for s in StrategyName])
def test_every_strategy_simulates(name: str) -> None:
    qrels, runs = synthetic_collection(seed=0)
    result = simulate(qrels, runs, name, ["10%", "50%"], seed=1, pool_depth=20, level=2)
    assert [b.judgements for b in result.budgets] == resolve_budgets(
        ["10%", "50%"], result.pool.num_items
    )
    assert len(set(result.judgements.order)) == len(result.judgements.order)
    last = result.budgets[-1]
    assert -1.0 <= last.tau_map <= 1.0 and last.rmse_map >= 0
    assert last.relevant_found == int(np.sum(result.judgements.grades >= 2))


def test_bayesian_budgets_carry_the_explored_check() -> None:
    qrels, runs = synthetic_collection(seed=0)
    strategy = Bayesian(warmup_per_topic=2, explore_share=0.5, batch_share=0.1)
    result = simulate(qrels, runs, strategy, ["10%", "50%"], seed=1, pool_depth=20, level=2)
    last = result.budgets[-1].explored
    assert last is not None and last.documents > 0
    judged = result.judgements
    entry = result.budgets[-1].to_json()["explored"]
    assert entry == last.to_json()
    assert entry["found"] <= entry["documents"] <= len(judged) // 2
    depth = simulate(qrels, runs, "depth-k", ["10%"], seed=1, pool_depth=20, level=2)
    assert depth.budgets[0].explored is None and depth.budgets[0].to_json()["explored"] is None


def test_next_documents_explore_by_count_with_the_bayesian_strategy() -> None:
    qrels, runs = synthetic_collection(seed=0)
    pool = Pool.from_runs(runs, depth=20)
    grades = pool.grades_from(qrels)
    # 9 judged per topic: one more each crosses 10, a multiple of 1 / 0.2
    first = np.concatenate([pool.topic_items(t)[:9] for t in range(pool.num_topics)])
    judged = Judgements(pool)
    judged.add(first, grades[first])
    partial = judged.to_qrels()
    chosen = next_documents(runs, partial, "bayesian", 4, seed=0, pool_depth=20, level=2)
    for by_count, explored in ((True, 4), (False, 0)):  # one per topic: per batch, none
        selector = Bayesian(explore_by_count=by_count).start(pool, judged, level=2, seed=0)
        items = selector.propose(4)
        assert len(selector.explored) == explored
        if by_count:
            assert chosen == [(pool.topics[pool.item_topic[i]], str(pool.docs[i])) for i in items]


def test_empty_qrels_is_an_error() -> None:
    _, runs = synthetic_collection()
    with pytest.raises(InputDataError, match="judge no document"):
        simulate(Qrels({}), runs, "depth-k", ["5%"])


def test_next_documents_skip_the_judged() -> None:
    _qrels, runs = synthetic_collection()
    first = next_documents(runs, None, "depth-k", 4, pool_depth=20)
    judged = Qrels({t: {d: 0} for t, d in first})
    second = next_documents(runs, judged, "depth-k", 4, pool_depth=20)
    assert not set(first) & set(second)


@pytest.mark.integration
def test_dl2021_depth_k_one_percent(shared_data) -> None:
    import glob

    folder = shared_data / "pooling" / "trec-dl-2021-passage"
    runs = read_runs(sorted(glob.glob(str(folder / "runs" / "*.gz"))))
    qrels = Qrels.read(folder / "qrels.txt")
    result = simulate(qrels, runs, "depth-k", ["1%"], level=2)
    assert result.pool.num_items == 56630
    budget = result.budgets[0]
    assert budget.judgements == 566
    assert 0.7 < budget.tau_map < 0.9
    # the full qrels' values, as trec_eval gives them (data/README.md)
    names = list(result.pool.run_names)
    assert result.truth["map"][names.index("Fast_ForwardP_2")] == pytest.approx(0.2003, abs=5e-5)
