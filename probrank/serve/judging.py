"""Judging sessions of many annotators over one project, backed by the judgement database.

Each annotator has one :class:`~probrank.interactive.session.InteractiveSession` per question
(built by the project's :class:`~probrank.models.InteractiveRanker`, all from the same seed, no
session log: the database is the log). A judgement round (:meth:`JudgingService.submit`) is:

1. checks: the judgement id (a known id with the same answer is acknowledged again, with
   another answer refused), the round (a stale form is refused), the pair (only the offered
   pair is accepted);
2. the judgement is committed to the database in its own transaction;
3. the session learns it (``record``; "both bad / can't tell" is ``skip``: no preference, the
   pair is not offered again) and the next pair is chosen.

The answer is sent only after step 2, so every acknowledged judgement is on disk. A session's
rounds run one at a time (a lock per session). The CPU-bound work of the rounds of all
sessions (step 3, states and rankings) is done one thread at a time, first come first served
(:class:`~probrank.serve.turns.Turns`): threads that computed at once only took turns at the
GIL at random, which made the tail of many annotators long. A round waiting for its commit's
fsync (step 2) holds no turn, so the next round computes meanwhile and judgements that arrive
together are committed together; nor does the confidence in the top answer (NumPy draws,
mostly without the GIL), computed after the turn under the session's lock only.

Sessions are made on first use and rebuilt from the database: the stored answers of that
annotator on that question that stand (not taken back by an undo) are replayed in commit order
into a fresh session, checking at each step that the session offers the very pair the database
holds, so the posteriors are the ones the annotators saw. Nothing is replayed at start (a
restart over 10,000 judgements answers at once; each session is rebuilt when it is first
asked for), and at most ``max_sessions`` sessions (:data:`DEFAULT_MAX_SESSIONS`) are kept:
the least recently used one is dropped (never one in use) and rebuilt, identical, when it is
asked for again. An undo (:meth:`JudgingService.undo`) is an event of its own; the session is
rebuilt from the answers that still stand, so the posterior and the next pair are the ones
before the retracted answer.

The ranking of a question (:meth:`JudgingService.ranking`) is one annotator's session posterior
or, for all annotators together, a fresh posterior updated with every preference stored for the
question (kept up to date incrementally).
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probrank.acquisition.pairs import ExhaustedPairsError
from probrank.exceptions import InputDataError
from probrank.interactive.session import InteractiveSession
from probrank.posteriors.protocol import PreferenceModel
from probrank.serve.errors import BadRequest, Conflict
from probrank.serve.identity import check_name
from probrank.serve.limits import CPU_TURNS, DEFAULT_MAX_SESSIONS
from probrank.serve.project import Project
from probrank.serve.ranking import Ranking, _ranking, best_probabilities
from probrank.serve.store import Choice, Judgement, JudgementStore, StaleRoundError
from probrank.serve.turns import Turns

if TYPE_CHECKING:
    from gpytorch.distributions import MultivariateNormal

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "JudgingService",
    "Ranking",
    "Receipt",
    "RoundState",
    "Submission",
    "best_probabilities",
    "check_annotator",
    "check_judgement_id",
]


_JUDGEMENT_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")


def check_annotator(name: str) -> str:
    """``name`` NFC-normalised if it is a valid annotator name
    (:func:`~probrank.serve.identity.check_name`), else
    :class:`~probrank.serve.errors.BadRequest`."""
    try:
        return check_name(name)
    except InputDataError as exc:
        raise BadRequest(exc.reason) from None


def check_judgement_id(value: str) -> str:
    """``value`` if it is a valid client judgement id (8-64 of ``A-Z a-z 0-9 _ -``)."""
    if not isinstance(value, str) or not _JUDGEMENT_ID.fullmatch(value):
        raise BadRequest(f"judgement id {str(value)[:80]!r} is not 8 to 64 of A-Z a-z 0-9 _ -")
    return value


@dataclass(frozen=True)
class Submission:
    """An answer as the page posts it."""

    id: str
    annotator: str
    qid: str
    round: int
    left: int
    right: int
    choice: Choice


@dataclass(frozen=True)
class RoundState:
    """Where an annotator stands on one question.

    Attributes:
        qid: The question.
        annotator: The annotator.
        round: Events so far (answers and undos): the round the next event is for.
        judgements: Preferences so far.
        ties: "Both bad / can't tell" answers so far.
        num_pairs: Unordered pairs of the question's candidates.
        pair: ``(left, right)`` candidate indices to show, None when done.
        done: No pair is left or the budget is reached.
        reason: Why the question is done ("" while it is not).
        top: The candidate with the highest posterior mean.
        confidence: Posterior probability that ``top`` is the best candidate.
        answers: Answers that stand (judgements and ties).
        can_undo: Whether an answer can be taken back.
    """

    qid: str
    annotator: str
    round: int
    judgements: int
    ties: int
    num_pairs: int
    pair: tuple[int, int] | None
    done: bool
    reason: str
    top: int
    confidence: float
    answers: int = 0
    can_undo: bool = False

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``pair`` as a list or null)."""
        return {
            "qid": self.qid,
            "annotator": self.annotator,
            "round": self.round,
            "judgements": self.judgements,
            "ties": self.ties,
            "num_pairs": self.num_pairs,
            "pair": None if self.pair is None else list(self.pair),
            "done": self.done,
            "reason": self.reason,
            "top": self.top,
            "confidence": self.confidence,
            "answers": self.answers,
            "can_undo": self.can_undo,
        }


@dataclass(frozen=True)
class Receipt:
    """The acknowledgement of a committed judgement and the state after it."""

    judgement: Judgement
    duplicate: bool
    state: RoundState


_TRIM_EVERY = 64
"""Evictions between two returns of freed memory to the system (:func:`_release_memory`)."""


def _release_memory() -> None:
    """Give freed heap memory back to the system (glibc's ``malloc_trim``; nothing elsewhere):
    without it the process keeps the peak of dropped sessions' memory."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class _Live:
    """One annotator's session on one question, with its lock and counts."""

    def __init__(self, session: InteractiveSession) -> None:
        self.session = session
        self.lock = threading.Lock()
        self.judgements = 0
        self.ties = 0
        self.events = 0
        self.stack: list[Judgement] = []
        self.shown: RoundState | None = None  # the state after the last event (computed once)


class _Pooled:
    """All annotators' preferences on one question, in commit order."""

    def __init__(self, model: PreferenceModel) -> None:
        self.model = model
        self.seq = 0
        self.judgements = 0


Key = tuple[str, str]
_Facts = tuple[tuple[int, int] | None, str, "MultivariateNormal", int]
"""What a state needs of its session: next pair, why none, posterior, top candidate."""


class JudgingService:
    """The annotators' sessions of a project over its judgement database.

    Args:
        project: The questions and the ranker.
        store: The database (its project identity is checked, or set on first use).
        max_sessions: Sessions kept in memory (least recently used ones are dropped and
            rebuilt from the database when asked for again).

    Raises:
        InputDataError: the database belongs to another project, or a bad ``max_sessions``.
    """

    def __init__(
        self, project: Project, store: JudgementStore, *, max_sessions: int = DEFAULT_MAX_SESSIONS
    ) -> None:
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise InputDataError(f"max_sessions must be a positive integer, got {max_sessions!r}")
        store.check_project(project.identity())
        self.project = project
        self.store = store
        self.max_sessions = max_sessions
        self._live: OrderedDict[Key, _Live] = OrderedDict()
        self._building: dict[Key, threading.Lock] = {}
        self._pooled: dict[str, _Pooled] = {}
        self._create = threading.Lock()
        self._pool = threading.Lock()
        self._turns = Turns(CPU_TURNS)  # after a session's lock, never before
        self.evictions = 0

    # -- sessions ---------------------------------------------------------------------------

    def rebuild(self, progress: Callable[[int], None] | None = None) -> int:
        """Replay every stored judgement into its annotator's session (at start).

        Args:
            progress: Called with the number of judgements replayed per session.

        Returns:
            The number of judgements replayed.

        Raises:
            InputDataError: a stored round the model does not replay (another model or
                settings than the judgements were made with).
        """
        keys = dict.fromkeys((j.annotator, j.qid) for j in self.store.judgements(live=True))
        total = 0
        for annotator, qid in keys:
            with self._locked(annotator, qid) as live:
                total += live.session.round
                if progress is not None:
                    progress(live.session.round)
        return total

    def sessions(self) -> int:
        """Sessions in memory now."""
        return len(self._live)

    def _session(self, annotator: str, qid: str) -> _Live:
        key = (annotator, qid)
        with self._create:
            live = self._live.get(key)
            if live is not None:
                self._live.move_to_end(key)
                return live
            building = self._building.setdefault(key, threading.Lock())
        with building:  # one build per session at a time; others wait and reuse it
            with self._create:
                live = self._live.get(key)
            if live is None:
                live = self._build(annotator, qid)
                self._insert(key, live)
        return live

    def _insert(self, key: Key, live: _Live) -> None:
        with self._create:
            self._live[key] = live
            self._live.move_to_end(key)
            extra = len(self._live) - self.max_sessions
            before = self.evictions
            for old in list(self._live)[:-1]:
                if extra <= 0:
                    break
                if not self._live[old].lock.locked():  # never one in use
                    del self._live[old]
                    self.evictions += 1
                    extra -= 1
        if self.evictions // _TRIM_EVERY > before // _TRIM_EVERY:
            _release_memory()

    def _locked(self, annotator: str, qid: str) -> _SessionLock:
        return _SessionLock(self, annotator, qid)

    def _build(self, annotator: str, qid: str) -> _Live:
        project = self.project
        item = project.question(qid)
        session = project.ranker.session(
            item.query,
            item.candidates,
            seed=project.seed,
            features=project.features(qid),
            strategy=project.strategy,
        )
        events = self.store.judgements(qid=qid, annotator=annotator)
        stored = [judgement for judgement in events if judgement.live]
        if not self.store.check_prior(qid, session.prior_fingerprint):
            raise InputDataError(
                f"question {qid!r}: the model's prior differs from the one the stored "
                "judgements were made with (another model or encoder?); start the server as "
                "before or use another --db",
                path=self.store.path,
            )
        live = _Live(session)
        live.events = len(events)
        for judgement in stored:
            pair = self._offer(session)
            if pair != (judgement.left, judgement.right):
                raise InputDataError(
                    f"annotator {annotator!r}, question {qid!r}, round {judgement.round}: the "
                    f"model offers {pair} but the database holds ({judgement.left}, "
                    f"{judgement.right}); the judgements were made with another model",
                    path=self.store.path,
                )
            self._apply(live, judgement)
            live.stack.append(judgement)
        return live

    @staticmethod
    def _offer(session: InteractiveSession) -> tuple[int, int] | None:
        try:
            return session.next_pair()
        except ExhaustedPairsError:
            return None

    @staticmethod
    def _apply(live: _Live, judgement: Judgement) -> None:
        if judgement.winner is None or judgement.loser is None:
            live.session.skip()
            live.ties += 1
        else:
            live.session.record(judgement.winner, judgement.loser)
            live.judgements += 1

    def _done(self, live: _Live) -> tuple[tuple[int, int] | None, str]:
        rounds = self.project.rounds
        if rounds is not None and live.judgements >= rounds:
            return None, f"you have made the {rounds} judgements asked for this question"
        pair = self._offer(live.session)
        if pair is None:
            return None, "every pair of this question has been answered"
        return pair, ""

    def _facts(self, live: _Live) -> _Facts:
        """The next pair (or why none), the posterior and its top candidate: the session's
        CPU-bound part of a state, computed in a turn."""
        pair, reason = self._done(live)
        return pair, reason, live.session.posterior(), live.session.best()

    def _state(
        self, live: _Live, annotator: str, qid: str, facts: _Facts | None = None
    ) -> RoundState:
        """The state after ``live``'s last event, computed once. The caller holds the
        session's lock and no turn: the facts are computed in a turn (or given by a caller
        that computed them in its own), the confidence after it (NumPy draws, mostly without
        the GIL, need no turn: the next round computes meanwhile)."""
        shown = live.shown
        if shown is not None and shown.round == live.events:  # e.g. the page after a POST
            return shown
        if facts is None:
            with self._turns:
                facts = self._facts(live)
        pair, reason, posterior, top = facts
        probabilities = best_probabilities(posterior)
        n = live.session.num_candidates
        shown = live.shown = RoundState(
            qid=qid,
            annotator=annotator,
            round=live.events,
            judgements=live.judgements,
            ties=live.ties,
            num_pairs=n * (n - 1) // 2,
            pair=pair,
            done=pair is None,
            reason=reason,
            top=top,
            confidence=probabilities[top],
            answers=live.judgements + live.ties,
            can_undo=bool(live.stack),
        )
        return shown

    def state(self, annotator: str, qid: str) -> RoundState:
        """Where ``annotator`` stands on question ``qid`` (its session is made on first use).

        Raises:
            NotFound: an unknown question.
        """
        self.project.question(qid)
        with self._locked(annotator, qid) as live:
            return self._state(live, annotator, qid)

    # -- the judgement round ------------------------------------------------------------------

    def submit(self, submission: Submission) -> Receipt:
        """Check, store (committed), learn, and choose the next pair.

        Raises:
            NotFound: an unknown question.
            Conflict: a judgement id used for another answer, a stale round, or a question
                that is done.
            BadRequest: a pair other than the one offered.
        """
        s = submission
        item = self.project.question(s.qid)
        if s.choice is Choice.UNDO:
            raise BadRequest("an undo is not an answer: use the undo button")
        with self._locked(s.annotator, s.qid) as live:
            earlier = self.store.get(s.id)
            if earlier is not None:
                return self._again(live, earlier, s)
            pair, reason = self._done(live)
            if pair is None:
                raise Conflict(f"question {s.qid!r} is done: {reason}")
            if s.round != live.events:
                raise Conflict(
                    f"this page is out of date: it answers round {s.round + 1}, but "
                    f"{live.events} answers are stored (another tab?); reload the page"
                )
            if (s.left, s.right) != pair:
                raise BadRequest(
                    f"the pair ({s.left}, {s.right}) was not offered in round {s.round + 1} "
                    f"of question {s.qid!r}"
                )
            judgement = Judgement(
                id=s.id,
                annotator=s.annotator,
                qid=s.qid,
                round=s.round,
                left=s.left,
                right=s.right,
                left_id=item.candidate_ids[s.left],
                right_id=item.candidate_ids[s.right],
                choice=s.choice,
            )
            stored, created = self._record(judgement)  # no turn held while it commits
            if not created:  # the same id, committed meanwhile for another session
                return self._again(live, stored, s)
            with self._turns:
                try:
                    self._apply(live, stored)
                    live.events += 1
                    live.stack.append(stored)
                except BaseException:
                    self._forget(s.annotator, s.qid)  # rebuilt from the database
                    raise
                facts = self._facts(live)  # in the same turn
            return Receipt(stored, False, self._state(live, s.annotator, s.qid, facts))

    def _record(self, judgement: Judgement) -> tuple[Judgement, bool]:
        try:
            return self.store.record(judgement)
        except StaleRoundError as exc:
            self._forget(judgement.annotator, judgement.qid)  # out of step: rebuild it
            raise Conflict(exc.reason) from None

    def _forget(self, annotator: str, qid: str) -> None:
        with self._create:
            self._live.pop((annotator, qid), None)

    def undo(self, annotator: str, qid: str, *, jid: str, round: int) -> Receipt:
        """Take back ``annotator``'s last answer on ``qid`` that stands: an undo event is
        committed (nothing deleted), the session is rebuilt from the answers that stand.

        Args:
            annotator: Who takes it back (only their own answers).
            qid: The question.
            jid: The client's id of the undo event (a retry with the same id is harmless).
            round: The round the page showed (a stale page is refused).

        Raises:
            NotFound: an unknown question.
            Conflict: nothing to take back, a stale page, or an id used for something else.
        """
        self.project.question(qid)
        with self._locked(annotator, qid) as live:
            earlier = self.store.get(jid)
            if earlier is not None:
                if earlier.choice is not Choice.UNDO or earlier.annotator != annotator:
                    raise Conflict(f"judgement id {jid!r} was used for another answer already")
                return Receipt(earlier, True, self._state(live, annotator, qid))
            if round != live.events:
                raise Conflict(
                    "this page is out of date (another tab?); reload it before taking an "
                    "answer back"
                )
            if not live.stack:
                raise Conflict(f"there is no answer of yours on question {qid!r} to take back")
            target = live.stack[-1]
            event = Judgement(
                id=jid,
                annotator=annotator,
                qid=qid,
                round=live.events,
                left=target.left,
                right=target.right,
                left_id=target.left_id,
                right_id=target.right_id,
                choice=Choice.UNDO,
                retracts=target.id,
            )
            stored, created = self._record(event)
            if not created:
                raise Conflict(f"judgement id {jid!r} was used for another answer already")
            fresh = self._build(annotator, qid)
            with fresh.lock:
                self._insert((annotator, qid), fresh)
                return Receipt(stored, False, self._state(fresh, annotator, qid))

    def _again(self, live: _Live, earlier: Judgement, s: Submission) -> Receipt:
        candidate = Judgement(s.id, s.annotator, s.qid, s.round, s.left, s.right, "", "", s.choice)
        if not earlier.same_answer(candidate):  # another round, session or choice
            raise Conflict(f"judgement id {s.id!r} was used for another answer already")
        return Receipt(earlier, True, self._state(live, s.annotator, s.qid))

    # -- rankings -----------------------------------------------------------------------------

    def ranking(self, qid: str, annotator: str | None = None) -> Ranking:
        """The candidates of ``qid`` by posterior mean with 90% credible intervals.

        Args:
            qid: The question.
            annotator: Whose session; None: every annotator's preferences together.

        Raises:
            NotFound: an unknown question.
        """
        self.project.question(qid)
        if annotator is not None:
            with self._locked(annotator, qid) as live, self._turns:
                return _ranking(live.session.posterior(), qid, annotator, live.judgements)
        with self._pool:
            pooled = self._pooled.get(qid)
            new = self.store.judgements(qid=qid, after=pooled.seq if pooled else 0)
            if pooled is None or any(j.choice is Choice.UNDO for j in new):
                features = self.project.features(qid)  # (re)built from the answers that stand
                model = self.project.ranker.preference_model(features, seed=self.project.seed)
                pooled = self._pooled[qid] = _Pooled(model)
                new = self.store.judgements(qid=qid)
            with self._turns:
                for judgement in new:
                    if judgement.live and judgement.winner is not None:
                        if judgement.loser is not None:
                            pooled.model.update(judgement.winner, judgement.loser)
                            pooled.judgements += 1
                    pooled.seq = judgement.seq
                return _ranking(pooled.model.posterior(), qid, None, pooled.judgements)

    def counts(self) -> dict[str, dict[str, int]]:
        """Per annotator, the answers that stand per question (one query)."""
        return self.store.counts()


class _SessionLock:
    """``with`` a session locked, the one in the service's table (an evicted or replaced one
    is never used: the lock is taken again on the current one)."""

    def __init__(self, service: JudgingService, annotator: str, qid: str) -> None:
        self.service = service
        self.key = (annotator, qid)
        self.live: _Live | None = None

    def __enter__(self) -> _Live:
        service = self.service
        while True:
            live = service._session(*self.key)
            live.lock.acquire()
            with service._create:
                current = service._live.get(self.key)
            if current is live:
                self.live = live
                return live
            live.lock.release()

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.lock.release()
