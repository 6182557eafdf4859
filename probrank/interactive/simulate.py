"""Simulated interaction: a preference model, a strategy and a (simulated) user, round by round.

:func:`~probrank.interactive.simulate` runs one question: the ranking before any judgement, then
after each of ``rounds`` judgements; :func:`simulate_session` does the same with a session
already built (the interactive experiments' inner loop, on sessions of
:class:`~probrank.models.InteractiveRanker`: accuracy and NDCG@5 after 0, 1, 2, 4, 10
interactions; the median seconds per round).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from probrank.acquisition.pairs import ExhaustedPairsError
from probrank.acquisition.select import PairStrategy, Strategy
from probrank.exceptions import InputDataError
from probrank.interactive.session import InteractiveSession
from probrank.interactive.users import Response, User
from probrank.posteriors.protocol import PreferenceModel

__all__ = ["SimulationTrace", "simulate", "simulate_session"]


@dataclass(frozen=True)
class SimulationTrace:
    """What happened in one simulated session.

    Attributes:
        rankings: ``rounds + 1`` rankings (candidate indices, best first): before any judgement,
            then after each. If the session stopped early (every pair asked, or the user quit),
            the last ranking is repeated up to ``rounds + 1`` entries.
        pairs: The pair offered at each judgement, as offered.
        winners: The candidate preferred at each judgement.
        round_seconds: Wall-clock seconds per judgement spent choosing the pair, updating the
            model and re-ranking (posteriors that compute lazily pay there); the user's time
            excluded.
        stopped_early: Whether fewer than ``rounds`` judgements were made.
    """

    rankings: list[list[int]]
    pairs: list[tuple[int, int]]
    winners: list[int]
    round_seconds: list[float]
    stopped_early: bool


def simulate(
    model_factory: Callable[[], PreferenceModel],
    user: User,
    strategy: str | Strategy | PairStrategy = Strategy.EI,
    rounds: int = 10,
    seed: int = 0,
) -> SimulationTrace:
    """Run one simulated session of ``rounds`` judgements.

    Args:
        model_factory: Builds the fresh preference model over the question's candidates.
        user: Answers each pair (e.g. :class:`~probrank.interactive.users.SimulatedUser`; its
            own generator advances with every judgement, so build a fresh one per run for
            reproducible results). A skip does not count as a round; a quit ends the session.
        strategy: Pair-selection strategy (name or callable).
        rounds: Number of judgements (>= 0).
        seed: Seed of the session's stochastic strategies.

    Returns:
        The :class:`SimulationTrace`.
    """
    _check_rounds(rounds)
    return simulate_session(
        InteractiveSession(model_factory(), strategy=strategy, seed=seed), user, rounds
    )


def _check_rounds(rounds: object) -> None:
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0:
        raise InputDataError(f"rounds must be a non-negative integer, got {rounds!r}")


def simulate_session(session: InteractiveSession, user: User, rounds: int = 10) -> SimulationTrace:
    """Run ``rounds`` judgements of ``session`` (e.g. one built by
    :meth:`probrank.models.InteractiveRanker.session`) with a (simulated) ``user``.

    Args:
        session: A session, usually fresh (its strategy and seed choose the pairs); the
            first ranking of the trace is its ranking when the call starts.
        user: Answers each pair (see :func:`simulate`).
        rounds: Number of judgements (>= 0).

    Returns:
        The :class:`SimulationTrace`.
    """
    _check_rounds(rounds)
    rankings = [session.ranking()]
    pairs: list[tuple[int, int]] = []
    winners: list[int] = []
    seconds: list[float] = []
    while len(winners) < rounds:
        start = time.perf_counter()
        try:
            first, second = session.next_pair()
        except ExhaustedPairsError:
            break
        elapsed = time.perf_counter() - start
        response = Response(user.judge(first, second))
        if response is Response.SKIP:
            session.skip()
            continue
        if response is Response.QUIT:
            break
        winner, loser = (first, second) if response is Response.FIRST else (second, first)
        start = time.perf_counter()
        session.record(winner, loser)
        ranking = session.ranking()
        seconds.append(elapsed + time.perf_counter() - start)
        pairs.append((first, second))
        winners.append(winner)
        rankings.append(ranking)
    stopped_early = len(winners) < rounds
    rankings.extend([rankings[-1]] * (rounds + 1 - len(rankings)))
    return SimulationTrace(
        rankings=rankings,
        pairs=pairs,
        winners=winners,
        round_seconds=seconds,
        stopped_early=stopped_early,
    )
