"""The judging of ``probrank serve --pool``: which document each annotator sees next, graded
answers, undo, progress.

The annotators of a project share each topic's pool: a document is judged once (the first
standing answer is the judgement; :class:`~probrank.serve.pool_store.PoolStore` refuses a
second), and every judgement informs the choice of the next document for everyone.

**The next document** of a topic comes from the pooling strategy
(:mod:`probrank.pooling.strategies`, default ``bayesian``), started afresh on the topic's pool
and the standing judgements whenever an annotator needs a document
(:meth:`~probrank.pooling.strategies.base.Strategy.start` continues from any judgements, with
the project's seed), so the choice is a function of the judgements alone: an undo, a restart
or another annotator's answer change it exactly as they change the judgements. That costs
milliseconds on pools of hundreds of documents (the ``bayesian`` strategy refits its relevance
model, a Laplace approximation by Newton's method, at each choice; since documents come one
at a time, it explores every fifth document of a topic uniformly, ``explore_by_count``, and
the model's predictive P(relevant) of each explored document, made when it was drawn, is
stored with the judgements: :meth:`PoolService.explored_check` tests the model on them; an
explored document left unjudged past its reservation and chosen later by the acquisition
enters the check with that earlier prediction). A
document shown to an annotator is reserved for them for :data:`LEASE_SECONDS` (a reload shows
it again; others get the strategy's next choice meanwhile). After an undo the retracted
document is shown again to the annotator who took it back.

Grades are :data:`GRADES` (0 not relevant, 1 relevant, 2 highly relevant); the strategies
count grades >= :data:`LEVEL` as relevant.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from probrank.exceptions import InputDataError
from probrank.pooling.checks import ExploredCheck, check_explored
from probrank.pooling.pool import Judgements
from probrank.pooling.strategies import make_strategy
from probrank.serve.errors import BadRequest, Conflict, NotFound
from probrank.serve.pool_source import PoolTopic, topics_digest
from probrank.serve.pool_store import AlreadyJudged, PoolJudgement, PoolStore

__all__ = [
    "GRADES",
    "LEASE_SECONDS",
    "LEVEL",
    "PoolReceipt",
    "PoolService",
    "PoolState",
    "PoolSubmission",
    "check_grade",
    "check_judgement_id",
]

GRADES: tuple[tuple[int, str], ...] = (
    (0, "Not relevant"),
    (1, "Relevant"),
    (2, "Highly relevant"),
)
"""The grades an annotator gives, with their labels (keys ``0``, ``1``, ``2`` on the page)."""

LEVEL = 1
"""Grades >= ``LEVEL`` are relevant for the strategies (as ``trec_eval -l``)."""

LEASE_SECONDS = 600.0
"""How long a document shown to an annotator stays reserved for them."""

_JUDGEMENT_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")


def check_judgement_id(value: str) -> str:
    """``value`` if it is a valid client judgement id (8-64 of ``A-Z a-z 0-9 _ -``), else
    :class:`~probrank.serve.errors.BadRequest`."""
    if not isinstance(value, str) or not _JUDGEMENT_ID.fullmatch(value):
        raise BadRequest(f"judgement id {str(value)[:80]!r} is not 8 to 64 of A-Z a-z 0-9 _ -")
    return value


def check_grade(value: str) -> int:
    """The grade ``value`` names (one of :data:`GRADES`), else
    :class:`~probrank.serve.errors.BadRequest`."""
    allowed = [grade for grade, _ in GRADES]
    if not (value.isascii() and value.isdigit() and len(value) <= 3) or int(value) not in allowed:
        raise BadRequest(f"grade must be one of {', '.join(map(str, allowed))}, got {value[:40]!r}")
    return int(value)


@dataclass(frozen=True)
class PoolSubmission:
    """A graded answer as the page posts it.

    Attributes:
        id: The client-generated judgement id.
        annotator: Who judges.
        qid: The topic.
        docno: The document judged.
        grade: Its grade.
    """

    id: str
    annotator: str
    qid: str
    docno: str
    grade: int


@dataclass(frozen=True)
class PoolState:
    """What an annotator's page of a topic shows.

    Attributes:
        qid: The topic.
        docno: The document to judge (None when none is left for this annotator).
        judged: The topic's standing answers (every annotator's).
        relevant: Of those, answers with a grade >= :data:`LEVEL`.
        pool: Documents in the topic's pool.
        mine: The annotator's own standing answers on the topic.
        last: Id of the annotator's last standing answer on the topic (what undo takes back).
        done: Whether the topic is finished (pool judged, or the budget reached).
        reason: Why there is no document ("" when there is one).
    """

    qid: str
    docno: str | None
    judged: int
    relevant: int
    pool: int
    mine: int
    last: str | None
    done: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The state as JSON."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class PoolReceipt:
    """The answer to a submission or an undo: the stored event, whether it was stored before,
    and the page's next state."""

    judgement: PoolJudgement
    duplicate: bool
    state: PoolState


class _Topic:
    """One topic's judgements (rebuilt from the database on first use) and reservations."""

    def __init__(self, topic: PoolTopic) -> None:
        self.topic = topic
        self.lock = threading.Lock()
        self.judgements: Judgements | None = None
        self.standing: list[PoolJudgement] = []
        self.reserved: dict[str, tuple[int, float]] = {}  # annotator -> (item, expiry)


class PoolService:
    """The judging of a pooling project: topics, strategy and database.

    Args:
        topics: The topics with their pools (:func:`~probrank.serve.pool_source.load_pool_topics`).
        store: The open database.
        strategy: The pooling strategy's name (:class:`~probrank.pooling.StrategyName`).
        seed: Seed of the strategy's choices.
        rounds: Judgements per topic (every annotator's together) before it is done; None:
            the whole pool.
        source: A name of the runs for the pages.
        clock: Seconds, for the reservations (default :func:`time.monotonic`).

    Raises:
        InputDataError: no topics, a topic twice, an unknown strategy, a bad ``rounds``, or a
            database made for other topics or by the pairwise pages.
    """

    def __init__(
        self,
        topics: Sequence[PoolTopic],
        store: PoolStore,
        *,
        strategy: str = "bayesian",
        seed: int = 0,
        rounds: int | None = None,
        source: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not topics:
            raise InputDataError("there is no topic to judge")
        qids = [topic.qid for topic in topics]
        if len(set(qids)) != len(qids):
            raise InputDataError("a topic appears twice")
        if rounds is not None and (isinstance(rounds, bool) or rounds < 1):
            raise InputDataError(f"--rounds must be a positive integer, got {rounds!r}")
        self.strategy = make_strategy(strategy).for_fresh_starts()  # one document at a time
        self.topics = tuple(topics)
        self.store = store
        self.seed = int(seed)
        self.rounds = rounds
        self.source = source
        self.clock = clock
        self._topics = {topic.qid: _Topic(topic) for topic in self.topics}
        store.base.check_project({"mode": "pool", "topics": topics_digest(self.topics)})

    # -- topics and their judgements ------------------------------------------------------------

    def topic(self, qid: str) -> PoolTopic:
        """The topic ``qid`` (:class:`~probrank.serve.errors.NotFound` if there is none)."""
        found = self._topics.get(qid)
        if found is None:
            raise NotFound(f"there is no topic {qid[:80]!r}")
        return found.topic

    def next_qid(self, qid: str) -> str:
        """The topic after ``qid`` (the first after the last)."""
        order = [topic.qid for topic in self.topics]
        return order[(order.index(qid) + 1) % len(order)]

    def _loaded(self, entry: _Topic) -> Judgements:
        """The topic's judgements, read from the database on first use (lock held)."""
        if entry.judgements is None:
            return self._reload(entry)
        return entry.judgements

    def _reload(self, entry: _Topic) -> Judgements:
        pool = entry.topic.pool
        judgements = Judgements(pool)
        entry.standing = self.store.judgements(qid=entry.topic.qid, live=True)
        for row in entry.standing:
            item = pool.item(entry.topic.qid, row.docno)
            if item is not None and row.grade is not None:  # a document of another pool stays
                judgements.add([item], [row.grade])
        entry.judgements = judgements
        return judgements

    def _done(self, entry: _Topic) -> str:
        """Why the topic is finished ("" if it is not)."""
        judgements = self._loaded(entry)
        if self.rounds is not None and len(entry.standing) >= self.rounds:
            return f"the topic's budget of {self.rounds} judgements is reached"
        if judgements.judged.all():
            return "every document of the topic's pool has been judged"
        return ""

    def _next_item(self, entry: _Topic, annotator: str) -> int | None:
        """The item to show ``annotator`` (reserved for them), or None (lock held)."""
        judgements = self._loaded(entry)
        now = self.clock()
        entry.reserved = {
            name: (item, expiry)
            for name, (item, expiry) in entry.reserved.items()
            if expiry > now and not judgements.judged[item]
        }
        mine = entry.reserved.get(annotator)
        if mine is not None:
            entry.reserved[annotator] = (mine[0], now + LEASE_SECONDS)
            return mine[0]
        others = {item for name, (item, _) in entry.reserved.items() if name != annotator}
        left = int((~judgements.judged).sum())
        if left == 0:
            return None
        selector = self.strategy.start(entry.topic.pool, judgements, level=LEVEL, seed=self.seed)
        proposed = selector.propose(min(left, len(others) + 1)).tolist()
        explored = selector.explored_predictions()
        unjudged = np.flatnonzero(~judgements.judged).tolist()
        for item in [*proposed, *unjudged]:  # the pool's order when the strategy runs short
            if item not in others:
                entry.reserved[annotator] = (int(item), now + LEASE_SECONDS)
                if item in explored:  # drawn uniformly: keep the model's prediction of it
                    docno = str(entry.topic.pool.docs[item])
                    self.store.record_prediction(
                        entry.topic.qid, docno, float(explored[item].mean())
                    )
                return int(item)
        return None

    def _state(self, entry: _Topic, annotator: str) -> PoolState:
        """The page's state for ``annotator`` (lock held)."""
        judgements = self._loaded(entry)
        done = self._done(entry)
        item = None if done else self._next_item(entry, annotator)
        reason = done
        if not done and item is None:
            reason = "the topic's other documents are being judged by other annotators right now"
        mine = [row for row in entry.standing if row.annotator == annotator]
        graded = judgements.grades[judgements.judged]
        return PoolState(
            qid=entry.topic.qid,
            docno=None if item is None else str(entry.topic.pool.docs[item]),
            judged=len(entry.standing),
            relevant=int((graded >= LEVEL).sum()),
            pool=entry.topic.pool.num_items,
            mine=len(mine),
            last=mine[-1].id if mine else None,
            done=bool(done),
            reason=reason,
        )

    # -- the requests ---------------------------------------------------------------------------

    def state(self, annotator: str, qid: str) -> PoolState:
        """What ``annotator``'s page of topic ``qid`` shows (reserving its document)."""
        self.topic(qid)
        entry = self._topics[qid]
        with entry.lock:
            return self._state(entry, annotator)

    def submit(self, submission: PoolSubmission) -> PoolReceipt:
        """Store a graded answer (committed when this returns) and choose the next document.

        Raises:
            NotFound: an unknown topic.
            BadRequest: a document outside the topic's pool, a grade not in :data:`GRADES`, a
                judgement id already used for another answer.
            Conflict: the document was judged already, or the topic is done.
        """
        topic = self.topic(submission.qid)
        entry = self._topics[submission.qid]
        item = topic.pool.item(topic.qid, submission.docno)
        if item is None:
            raise BadRequest(
                f"document {submission.docno[:80]!r} is not in the pool of topic {topic.qid!r}"
            )
        if submission.grade not in [grade for grade, _ in GRADES]:
            raise BadRequest(f"grade {submission.grade} is not one of the page's grades")
        event = PoolJudgement(
            id=submission.id,
            annotator=submission.annotator,
            qid=submission.qid,
            docno=submission.docno,
            grade=submission.grade,
        )
        with entry.lock:
            judgements = self._loaded(entry)
            earlier = self.store.get(submission.id)
            if earlier is None:
                reason = self._done(entry)
                if reason:
                    raise Conflict(f"topic {topic.qid!r} is done: {reason}")
                if judgements.judged[item]:
                    raise Conflict(
                        f"document {submission.docno!r} of topic {topic.qid!r} was judged "
                        "already (by another annotator?)"
                    )
            stored, created = self._record(event)
            if not created and (stored.docno, stored.grade, stored.annotator) != (
                event.docno,
                event.grade,
                event.annotator,
            ):
                raise BadRequest(f"judgement id {event.id!r} was used for another answer")
            if created:
                judgements.add([item], [submission.grade])
                entry.standing.append(stored)
                entry.reserved.pop(submission.annotator, None)
            return PoolReceipt(stored, not created, self._state(entry, submission.annotator))

    def undo(self, annotator: str, qid: str, *, jid: str, target: str) -> PoolReceipt:
        """Take back ``annotator``'s last standing answer on ``qid`` (an undo event); the
        retracted document is shown to them again.

        Args:
            annotator: Who takes back.
            qid: The topic.
            jid: The undo event's client-generated id.
            target: The id of the answer the page offered to take back.

        Raises:
            Conflict: nothing to take back, or ``target`` is no longer the last answer.
        """
        topic = self.topic(qid)
        entry = self._topics[qid]
        with entry.lock:
            self._loaded(entry)
            earlier = self.store.get(jid)
            if earlier is not None:
                if earlier.retracts != target or earlier.annotator != annotator:
                    raise BadRequest(f"judgement id {jid!r} was used for another event")
                return PoolReceipt(earlier, True, self._state(entry, annotator))
            mine = [row for row in entry.standing if row.annotator == annotator]
            if not mine:
                raise Conflict(f"you have no answer on topic {qid!r} to take back")
            if mine[-1].id != target:
                raise Conflict("this page is out of date: your last answer is another one")
            last = mine[-1]
            event = PoolJudgement(
                id=jid, annotator=annotator, qid=qid, docno=last.docno, grade=None,
                retracts=last.id,
            )  # fmt: skip
            stored, _ = self._record(event)
            self._reload(entry)
            item = topic.pool.item(qid, last.docno)
            if item is not None:
                entry.reserved = {
                    name: held for name, held in entry.reserved.items() if held[0] != item
                }
                entry.reserved[annotator] = (item, self.clock() + LEASE_SECONDS)
            return PoolReceipt(stored, False, self._state(entry, annotator))

    def _record(self, event: PoolJudgement) -> tuple[PoolJudgement, bool]:
        try:
            return self.store.record(event)
        except AlreadyJudged as exc:
            raise Conflict(exc.reason) from None

    # -- progress ---------------------------------------------------------------------------

    def progress(self) -> list[dict[str, Any]]:
        """Per topic: ``qid``, ``pool`` (size), ``judged``, ``relevant``, ``done``,
        ``annotators`` (standing answers per annotator), and the judged explored documents:
        ``explored`` (how many), ``explored_relevant`` and ``explored_expected`` (the sum of
        their predictions)."""
        out = []
        for topic in self.topics:
            entry = self._topics[topic.qid]
            with entry.lock:
                judgements = self._loaded(entry)
                graded = judgements.grades[judgements.judged]
                by: dict[str, int] = {}
                for row in entry.standing:
                    by[row.annotator] = by.get(row.annotator, 0) + 1
                predicted, relevant = self._explored(entry)
                out.append(
                    {
                        "qid": topic.qid,
                        "pool": topic.pool.num_items,
                        "judged": len(entry.standing),
                        "relevant": int((graded >= LEVEL).sum()),
                        "done": bool(self._done(entry)),
                        "annotators": by,
                        "explored": len(predicted),
                        "explored_relevant": int(relevant.sum()),
                        "explored_expected": float(predicted.sum()),
                    }
                )
        return out

    def _explored(self, entry: _Topic) -> tuple[np.ndarray, np.ndarray]:
        """The topic's judged explored documents: their predictions and whether they were
        judged relevant, `m` each (lock held)."""
        self._loaded(entry)
        stored = self.store.predictions(qid=entry.topic.qid)
        pairs = [
            (stored[(row.qid, row.docno)], row.grade is not None and row.grade >= LEVEL)
            for row in entry.standing
            if (row.qid, row.docno) in stored
        ]
        return (
            np.array([p for p, _ in pairs], dtype=np.float64),
            np.array([r for _, r in pairs], dtype=bool),
        )

    def explored_check(self) -> ExploredCheck | None:
        """The held-out check of the strategy's relevance model over every topic
        (:func:`~probrank.pooling.checks.check_explored`): the relevant documents found
        among the judged documents it drew uniformly, against its predictions of them made
        when it drew them (one fit per document: independent Bernoullis). None before any
        explored document is judged (and for a strategy that does not explore)."""
        predicted, relevant = [], []
        for topic in self.topics:
            entry = self._topics[topic.qid]
            with entry.lock:
                p, r = self._explored(entry)
            predicted.append(p)
            relevant.append(r)
        return check_explored(
            [(np.concatenate(predicted)[None, :], np.concatenate(relevant))], seed=self.seed
        )
