from __future__ import annotations

import numpy as np

from probrank.data.trec import Run
from probrank.pooling.pool import Judgements, Pool
from probrank.pooling.strategies import MoveToFront


def test_mtf_stays_on_a_run_while_it_finds_relevant_documents() -> None:
    a = Run({"1": {f"a{i}": 10.0 - i for i in range(1, 5)}}, name="A")
    b = Run({"1": {f"b{i}": 10.0 - i for i in range(1, 5)}}, name="B")
    grades = {"a1": 1, "a2": 1, "a3": 0, "a4": 1, "b1": 0, "b2": 0, "b3": 1, "b4": 1}
    pool = Pool.from_runs([a, b], depth=4)
    judged = Judgements(pool)
    selector = MoveToFront().start(pool, judged, seed=0)
    selector.tiebreak[0] = [0, 1]  # ties go to A: hand-checkable
    selector.current[0] = selector._best(0)
    order = []
    while True:
        items = selector.propose(1)
        if len(items) == 0:
            break
        doc = str(pool.docs[items[0]])
        judged.add(items, [grades[doc]])
        selector.observe(items, np.array([grades[doc]]))
        order.append(doc)
    # A until its first non-relevant (a3), then B (priority 0 > -1) until b1 fails; tie at -1
    # goes to A (a4 relevant: stays), A is exhausted, then B to its end
    assert order == ["a1", "a2", "a3", "b1", "a4", "b2", "b3", "b4"]
