"""The simulation loop."""

from __future__ import annotations

import pytest
import torch

from probrank.acquisition.select import Strategy
from probrank.exceptions import InputDataError
from probrank.interactive.metrics import ranking_curves
from probrank.interactive.simulate import simulate
from probrank.interactive.users import Response, SimulatedUser
from probrank.posteriors.bradley_terry import BradleyTerryLaplace

UTILITIES = [0.1, 2.0, -0.4, 1.1, 0.7, -1.0]


def exchangeable() -> BradleyTerryLaplace:
    return BradleyTerryLaplace(torch.zeros(6), torch.eye(6))


@pytest.mark.parametrize("strategy", list(Strategy))
def test_rounds_rankings_and_determinism(strategy: Strategy) -> None:
    traces = [
        simulate(exchangeable, SimulatedUser(UTILITIES, 0.3, seed=1), strategy, rounds=4, seed=2)
        for _ in range(2)
    ]
    trace = traces[0]
    assert len(trace.rankings) == 5 and len(trace.pairs) == 4 and len(trace.round_seconds) == 4
    assert trace.rankings[0] == list(range(6))  # an exchangeable prior: ties by index
    assert all(sorted(r) == list(range(6)) for r in trace.rankings)
    assert all(w in p for w, p in zip(trace.winners, trace.pairs, strict=True))
    assert len({(min(p), max(p)) for p in trace.pairs}) == 4
    assert trace.rankings == traces[1].rankings and trace.pairs == traces[1].pairs
    assert not trace.stopped_early


def test_a_near_noiseless_user_over_all_pairs_gives_the_true_order() -> None:
    user = SimulatedUser(UTILITIES, temperature=1e-3, seed=0)
    trace = simulate(exchangeable, user, "ei", rounds=20, seed=0)
    assert trace.stopped_early and len(trace.winners) == 15
    assert len(trace.rankings) == 21 and trace.rankings[-1] == trace.rankings[15]
    truth = sorted(range(6), key=lambda i: -UTILITIES[i])
    assert trace.rankings[-1] == truth
    grades = [2, 4, 1, 3, 3, 1]
    curves = ranking_curves(trace.rankings, grades)
    assert curves["accuracy"][-1] == 1.0 and curves["ndcg@5"][-1] == pytest.approx(1.0)


def test_ei_finds_the_best_answer_quickly_with_an_informative_prior() -> None:
    # prior mean points the wrong way for the top two; a few EI questions fix it
    prior = torch.tensor([0.0, 0.5, 0.0, 0.8, 0.0, 0.0], dtype=torch.float64)

    def model() -> BradleyTerryLaplace:
        return BradleyTerryLaplace(prior, 0.5 * torch.eye(6, dtype=torch.float64))

    user = SimulatedUser(UTILITIES, temperature=1e-3, seed=0)
    trace = simulate(model, user, "ei", rounds=2, seed=0)
    assert trace.rankings[0][0] == 3 and trace.rankings[-1][0] == 1


def test_skips_and_quits_are_honoured() -> None:
    class Scripted:
        def __init__(self) -> None:
            self.replies = [Response.SKIP, Response.FIRST, Response.QUIT]

        def judge(self, first: int, second: int) -> Response:
            return self.replies.pop(0)

    trace = simulate(exchangeable, Scripted(), "random", rounds=3, seed=0)
    assert len(trace.winners) == 1 and trace.stopped_early and len(trace.rankings) == 4
    with pytest.raises(InputDataError, match="rounds"):
        simulate(exchangeable, Scripted(), "ei", rounds=-1)
