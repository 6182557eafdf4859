"""An interactive ranking session over one question's candidates, durable and resumable.

Notebook use::

    model = BradleyTerryLaplace.from_features(features, prior_mean=cosine_scores)
    session = InteractiveSession(model, strategy="ei", seed=0, log_path="tq5.jsonl")
    a, b = session.next_pair()     # ask the user about candidates a and b
    session.record(a, b)           # the user preferred a; durable once this returns
    session.best(), session.ranking()
    ...
    session = InteractiveSession.resume("tq5.jsonl", lambda: BradleyTerryLaplace.from_features(
        features, prior_mean=cosine_scores))

Determinism. The pair offered at round ``r`` (``r`` = judgements + skips so far) is a pure
function of the seed, ``r``, the model's posterior and the pairs asked: a stochastic strategy
draws from a generator seeded with ``SeedSequence([seed, r])``. Calling :meth:`next_pair` twice
without recording returns the same pair, and a resumed session offers exactly the pair the
interrupted one would have offered.

Durability. With a ``log_path`` every judgement and skip is appended to a JSONL log, flushed and
fsynced before :meth:`~InteractiveSession.record` / :meth:`~InteractiveSession.skip` return, i.e.
before the next pair can be offered (:mod:`probrank.interactive.log` describes the format, the
atomic creation and how a torn last line is handled). :meth:`~InteractiveSession.resume` replays the
log into a fresh model from the same factory and checks that the factory rebuilds the same prior (a
fingerprint of the prior mean and covariance is in the header).

One writer per log. A session holds an exclusive lock on its log from creation (or
:meth:`~InteractiveSession.resume`) until :meth:`~InteractiveSession.close`; a second session on the
same log, in another process or in this one, is refused with
:class:`~probrank.exceptions.InputDataError` ``session log <path> is in use by another probrank
process (pid N)``. The lock dies with the process.

Repeats. Each unordered pair is judged at most once: :meth:`~InteractiveSession.record` of a pair
that already has a judgement (in either order) raises :class:`~probrank.exceptions.InputDataError`
and writes nothing, so the posterior never counts one comparison twice by accident (a re-run
notebook cell, say). A skipped pair may still be judged. A log line that judges a pair a second time
is corruption, and :meth:`~InteractiveSession.resume` refuses it naming the file and line
(:func:`~probrank.interactive.log.read_log`), so a resumed session is always the state the live one
had.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import hashlib
import json
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import numpy as np
import torch
from gpytorch.distributions import MultivariateNormal

from probrank.acquisition.pairs import ExhaustedPairsError, candidate_index
from probrank.acquisition.select import PairStrategy, Strategy, resolve_strategy, select_pair
from probrank.exceptions import InputDataError
from probrank.interactive.log import LogContents, SessionLog
from probrank.interactive.users import Response, User
from probrank.posteriors.protocol import PreferenceModel

__all__ = ["InteractiveSession", "posterior_fingerprint", "round_generator"]


def posterior_fingerprint(posterior: MultivariateNormal) -> str:
    """SHA-256 of a posterior's mean and covariance rounded to 9 decimals (float64)."""
    mean = posterior.mean.detach().to("cpu", torch.float64).numpy()
    covariance = posterior.covariance_matrix.detach().to("cpu", torch.float64).numpy()
    digest = hashlib.sha256()
    for array in (mean, covariance):
        digest.update(str(array.shape).encode())
        digest.update((np.round(array, 9) + 0.0).tobytes())
    return digest.hexdigest()


def round_generator(seed: int, round_: int) -> torch.Generator:
    """The generator a session uses at round ``round_``: seeded by ``SeedSequence([seed, r])``."""
    state = np.random.SeedSequence([seed, round_]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state))


class InteractiveSession:
    """Ask pairwise questions about one question's `n` candidates and rank them.

    Args:
        model: The preference model (:class:`~probrank.posteriors.protocol.PreferenceModel`),
            freshly built: its current posterior is the prior the log records.
        strategy: A :class:`~probrank.acquisition.select.Strategy` name or any pair strategy
            callable (a custom one must be passed again to :meth:`resume`).
        seed: Non-negative seed for the stochastic strategies.
        log_path: Where to create the durable JSONL log (must not exist); it stays locked
            until :meth:`close`. None keeps the session in memory only.
        metadata: JSON-serialisable facts stored in the log header (question id, data set,
            model configuration, ...).
    """

    def __init__(
        self,
        model: PreferenceModel,
        *,
        strategy: str | Strategy | PairStrategy = Strategy.EI,
        seed: int = 0,
        log_path: str | os.PathLike[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._setup(model, strategy, seed)
        self.metadata = dict(metadata or {})
        self._log: SessionLog | None = None
        if log_path is not None:
            header = {
                "seed": self.seed,
                "strategy": self.strategy_name,
                "strategy_repr": repr(self._strategy),
                "num_candidates": self.num_candidates,
                "prior_fingerprint": self.prior_fingerprint,
                "model": repr(model),
                "metadata": self.metadata,
                "created": datetime.now(timezone.utc).isoformat(),
            }
            try:
                json.dumps(header, allow_nan=False)
            except (TypeError, ValueError) as error:
                raise InputDataError(f"metadata is not JSON-serialisable: {error}") from None
            self._log = SessionLog.create(log_path, header)

    def _setup(
        self, model: PreferenceModel, strategy: str | Strategy | PairStrategy, seed: int
    ) -> None:
        if not isinstance(model, PreferenceModel):
            raise InputDataError("model needs posterior() and update(winner, loser) methods")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputDataError(f"seed must be a non-negative integer, got {seed!r}")
        self.model = model
        self._strategy = resolve_strategy(strategy)
        self.strategy_name: str | None = (
            Strategy(strategy.lower()).value if isinstance(strategy, str) else None
        )
        self.seed = seed
        prior = model.posterior()
        if prior.mean.dim() != 1 or prior.mean.shape[0] < 2:
            raise InputDataError(
                f"model posterior must be over n >= 2 candidates, got {tuple(prior.mean.shape)}"
            )
        self.num_candidates = int(prior.mean.shape[0])
        self.prior_fingerprint = posterior_fingerprint(prior)
        self._events: list[dict[str, Any]] = []
        self._asked: set[tuple[int, int]] = set()
        self._judged: dict[tuple[int, int], int] = {}  # unordered pair -> round judged
        self._pending: tuple[int, int] | None = None
        self._log = None

    # -- resume ----------------------------------------------------------------------------

    @classmethod
    def resume(
        cls,
        log_path: str | os.PathLike[str],
        model_factory: Callable[[], PreferenceModel],
        *,
        strategy: PairStrategy | None = None,
    ) -> InteractiveSession:
        """Rebuild a session from its log and keep appending to it.

        Args:
            log_path: The session's JSONL log. A torn last line is dropped and cut off
                (:class:`~probrank.interactive.log.TornLogWarning`).
            model_factory: Builds the same fresh model the session started with.
            strategy: Only for a session that used a custom (unnamed) strategy.

        Raises:
            InputDataError: Malformed log (a pair judged twice included), a log that another
                session holds, a factory whose prior differs from the logged one, or a
                missing/conflicting strategy.
        """
        log = SessionLog.reopen(log_path)  # locks, then reads (a torn line is cut off)
        try:
            session = cls._replay(log_path, log.contents, model_factory, strategy)
        except BaseException:
            log.close()  # releases the lock
            raise
        session._log = log
        return session

    @classmethod
    def _replay(
        cls,
        log_path: str | os.PathLike[str],
        contents: LogContents,
        model_factory: Callable[[], PreferenceModel],
        strategy: PairStrategy | None,
    ) -> InteractiveSession:
        header = contents.header
        name = header.get("strategy")
        if name is None and strategy is None:
            raise InputDataError(
                "the session used a custom strategy: pass it as strategy=", path=log_path
            )
        if name is not None and strategy is not None:
            raise InputDataError(
                f"the session's strategy is {name!r}; do not pass another", path=log_path
            )
        seed = header.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputDataError(f"bad seed {seed!r} in header", path=log_path, line=1)
        session = cls.__new__(cls)
        session._setup(model_factory(), strategy if strategy is not None else str(name), seed)
        session.metadata = dict(header.get("metadata") or {})
        if session.num_candidates != header["num_candidates"]:
            logged = header["num_candidates"]
            raise InputDataError(
                f"model has {session.num_candidates} candidates, the log {logged}", path=log_path
            )
        if session.prior_fingerprint != header.get("prior_fingerprint"):
            raise InputDataError(
                "model_factory builds a different prior than the one this log was written with",
                path=log_path,
            )
        for event in contents.events:
            session._apply(event)
        return session

    # -- the loop ----------------------------------------------------------------------------

    @property
    def round(self) -> int:
        """Number of events (judgements and skips) so far."""
        return len(self._events)

    @property
    def judgements(self) -> list[tuple[int, int]]:
        """``(winner, loser)`` judgements in order."""
        return [(e["winner"], e["loser"]) for e in self._events if e["type"] == "judgement"]

    @property
    def num_judgements(self) -> int:
        """Number of judgements so far (the judgement events of the log, when logged)."""
        return sum(1 for event in self._events if event["type"] == "judgement")

    @property
    def events(self) -> list[dict[str, Any]]:
        """All logged events in order (copies)."""
        return [dict(e) for e in self._events]

    @property
    def asked(self) -> frozenset[tuple[int, int]]:
        """Unordered pairs ``(low, high)`` judged or skipped so far."""
        return frozenset(self._asked)

    @property
    def remaining_pairs(self) -> int:
        n = self.num_candidates
        return n * (n - 1) // 2 - len(self._asked)

    @property
    def log_path(self) -> str | None:
        return None if self._log is None else str(self._log.path)

    def posterior(self) -> MultivariateNormal:
        """The model's current joint posterior over the `n` candidates."""
        return self.model.posterior()

    def next_pair(self) -> tuple[int, int]:
        """The pair to show next (the same pair until it is recorded or skipped).

        Raises:
            ExhaustedPairsError: Every pair has been asked.
        """
        if self._pending is None:
            generator = round_generator(self.seed, self.round)
            self._pending = select_pair(self.posterior(), self._asked, self._strategy, generator)
        return self._pending

    def record(self, winner: int, loser: int) -> None:
        """Record that ``winner`` was preferred to ``loser`` (durable when this returns).

        Raises:
            InputDataError: The same candidate twice, an index out of range, or a pair that
                already has a judgement (in either order): nothing is written then.
        """
        w, loser_index = self._pair(winner, loser)
        previous = self._judged.get((min(w, loser_index), max(w, loser_index)))
        if previous is not None:
            earlier = self._events[previous]
            raise InputDataError(
                f"candidates {w} and {loser_index} were judged already in round {previous} "
                f"({earlier['winner']} preferred to {earlier['loser']}); a session records one "
                "judgement per pair",
                path=self.log_path,
            )
        event = {
            "type": "judgement",
            "round": self.round,
            "winner": w,
            "loser": loser_index,
            "offered": None if self._pending is None else list(self._pending),
            "time": time.time(),
        }
        self._write(event)
        self._apply(event)

    def skip(self) -> None:
        """Skip the pair offered by :meth:`next_pair`; it is not offered again.

        Raises:
            InputDataError: No pair is being offered.
        """
        if self._pending is None:
            raise InputDataError("no pair is being offered; call next_pair() first")
        event = {
            "type": "skip",
            "round": self.round,
            "pair": list(self._pending),
            "time": time.time(),
        }
        self._write(event)
        self._apply(event)

    def best(self) -> int:
        """The candidate with the highest posterior mean (lowest index on ties)."""
        return int(torch.argmax(self.posterior().mean).item())

    def ranking(self) -> list[int]:
        """All candidates by posterior mean, best first (ties by index)."""
        mean = self.posterior().mean.detach().cpu()
        return [int(i) for i in torch.sort(mean, descending=True, stable=True).indices]

    def run(self, user: User, rounds: int | None = None) -> int:
        """Ask ``user`` until ``rounds`` judgements, a quit, or no pair is left.

        Returns:
            The number of judgements recorded by this call.
        """
        done = 0
        while rounds is None or done < rounds:
            try:
                first, second = self.next_pair()
            except ExhaustedPairsError:
                break
            response = Response(user.judge(first, second))
            if response is Response.FIRST:
                self.record(first, second)
            elif response is Response.SECOND:
                self.record(second, first)
            elif response is Response.SKIP:
                self.skip()
                continue
            else:
                break
            done += 1
        return done

    def close(self) -> None:
        """Close the log and release its lock (the session can still be inspected, not
        extended)."""
        if self._log is not None:
            self._log.close()

    def __enter__(self) -> InteractiveSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        strategy = self.strategy_name or repr(self._strategy)
        return (
            f"InteractiveSession(n={self.num_candidates}, round={self.round}, "
            f"strategy={strategy}, seed={self.seed}, log={self.log_path!r})"
        )

    # -- internals -------------------------------------------------------------------------

    def _pair(self, first: int, second: int) -> tuple[int, int]:
        i = candidate_index(first, self.num_candidates)
        j = candidate_index(second, self.num_candidates)
        if i == j:
            raise InputDataError(f"a judgement needs two different candidates, got {i} twice")
        return i, j

    def _write(self, event: dict[str, Any]) -> None:
        if self._log is not None:
            self._log.append(event)

    def _apply(self, event: dict[str, Any]) -> None:
        if event["type"] == "judgement":
            winner, loser = event["winner"], event["loser"]
            self.model.update(winner, loser)
            self._judged[(min(winner, loser), max(winner, loser))] = len(self._events)
        else:
            winner, loser = event["pair"]
        self._asked.add((min(winner, loser), max(winner, loser)))
        self._events.append(dict(event))
        self._pending = None
