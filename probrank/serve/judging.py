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
rounds run one at a time (a lock per session); sessions of different annotators run in
parallel. After a restart, :meth:`JudgingService.rebuild` replays every stored judgement in
commit order into fresh sessions, checking at each round that the session offers the very pair
the database holds: the posteriors are the ones the annotators saw.

The ranking of a question (:meth:`JudgingService.ranking`) is one annotator's session posterior
or, for all annotators together, a fresh posterior updated with every preference stored for the
question (kept up to date incrementally).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gpytorch.distributions import MultivariateNormal

from probrank.acquisition.pairs import ExhaustedPairsError
from probrank.exceptions import InputDataError
from probrank.interactive.session import InteractiveSession
from probrank.posteriors.protocol import PreferenceModel
from probrank.serve.errors import BadRequest, Conflict
from probrank.serve.project import Project
from probrank.serve.store import Choice, Judgement, JudgementStore, StaleRoundError

__all__ = [
    "JudgingService",
    "Ranking",
    "Receipt",
    "RoundState",
    "Submission",
    "best_probabilities",
    "check_annotator",
    "check_judgement_id",
]

_NAME = re.compile(r"[^\W_][\w.@-]{0,39}")
_JUDGEMENT_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
_Z90 = 1.6448536269514722  # standard normal 95% quantile: a central 90% interval


def check_annotator(name: str) -> str:
    """``name`` if it is a valid annotator name (1-40 letters, digits, ``_ . @ -``, starting
    with a letter or digit), else :class:`~probrank.serve.errors.BadRequest`."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BadRequest(
            f"annotator name {str(name)[:60]!r} is not valid: 1 to 40 letters, digits or "
            "_ . @ -, starting with a letter or digit"
        )
    return name


def check_judgement_id(value: str) -> str:
    """``value`` if it is a valid client judgement id (8-64 of ``A-Z a-z 0-9 _ -``)."""
    if not isinstance(value, str) or not _JUDGEMENT_ID.fullmatch(value):
        raise BadRequest(f"judgement id {str(value)[:80]!r} is not 8 to 64 of A-Z a-z 0-9 _ -")
    return value


@functools.lru_cache(maxsize=64)
def _noise(draws: int, n: int) -> np.ndarray:
    """The standard normal `draws x n` matrix of :func:`best_probabilities` (seed 0), made once
    per size (read-only)."""
    noise = np.random.default_rng(0).standard_normal((draws, n))
    noise.setflags(write=False)
    return noise


def best_probabilities(posterior: MultivariateNormal, *, draws: int = 2000) -> list[float]:
    """Monte Carlo probability that each candidate has the highest utility.

    Args:
        posterior: Joint posterior over `n` candidates.
        draws: Joint draws (seeded: the same posterior gives the same numbers).

    Returns:
        `n` probabilities summing to 1.
    """
    mean = posterior.mean.detach().to(torch.float64).reshape(-1).cpu().numpy()
    covariance = posterior.covariance_matrix.detach().to(torch.float64).cpu().numpy()
    values, vectors = np.linalg.eigh((covariance + covariance.T) / 2)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    noise = _noise(draws, mean.shape[0])
    winners = (mean + noise @ root.T).argmax(axis=1)
    counts = np.bincount(winners, minlength=mean.shape[0])
    return [float(c) / draws for c in counts]


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
        round: Answers so far (judgements and ties): the round the next answer is for.
        judgements: Preferences so far.
        ties: "Both bad / can't tell" answers so far.
        num_pairs: Unordered pairs of the question's candidates.
        pair: ``(left, right)`` candidate indices to show, None when done.
        done: No pair is left or the budget is reached.
        reason: Why the question is done ("" while it is not).
        top: The candidate with the highest posterior mean.
        confidence: Posterior probability that ``top`` is the best candidate.
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
        }


@dataclass(frozen=True)
class Receipt:
    """The acknowledgement of a committed judgement and the state after it."""

    judgement: Judgement
    duplicate: bool
    state: RoundState


@dataclass(frozen=True)
class Ranking:
    """A question's candidates under a posterior (lists indexed by candidate).

    Attributes:
        qid: The question.
        annotator: Whose session, or None for all annotators' preferences together.
        judgements: Preferences the posterior has learnt.
        order: Candidate indices by posterior mean, best first.
        mean: Posterior mean utilities.
        lower: Lower ends of the central 90% credible intervals.
        upper: Upper ends.
        best: Probability that each candidate is the best.
    """

    qid: str
    annotator: str | None
    judgements: int
    order: list[int]
    mean: list[float]
    lower: list[float]
    upper: list[float]
    best: list[float]


def _ranking(
    posterior: MultivariateNormal, qid: str, annotator: str | None, judgements: int
) -> Ranking:
    mean = posterior.mean.detach().to(torch.float64).reshape(-1)
    sd = posterior.variance.detach().to(torch.float64).reshape(-1).clamp_min(0.0).sqrt()
    order = torch.sort(mean, descending=True, stable=True).indices.tolist()
    return Ranking(
        qid=qid,
        annotator=annotator,
        judgements=judgements,
        order=[int(i) for i in order],
        mean=mean.tolist(),
        lower=(mean - _Z90 * sd).tolist(),
        upper=(mean + _Z90 * sd).tolist(),
        best=best_probabilities(posterior),
    )


class _Live:
    """One annotator's session on one question, with its lock and counts."""

    def __init__(self, session: InteractiveSession) -> None:
        self.session = session
        self.lock = threading.Lock()
        self.judgements = 0
        self.ties = 0


class _Pooled:
    """All annotators' preferences on one question, in commit order."""

    def __init__(self, model: PreferenceModel) -> None:
        self.model = model
        self.seq = 0
        self.judgements = 0


class JudgingService:
    """The annotators' sessions of a project over its judgement database.

    Args:
        project: The questions and the ranker.
        store: The database (its project identity is checked, or set on first use).

    Raises:
        InputDataError: the database belongs to another project.
    """

    def __init__(self, project: Project, store: JudgementStore) -> None:
        store.check_project(project.identity())
        self.project = project
        self.store = store
        self._live: dict[tuple[str, str], _Live] = {}
        self._pooled: dict[str, _Pooled] = {}
        self._create = threading.Lock()
        self._pool = threading.Lock()

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
        keys = dict.fromkeys((j.annotator, j.qid) for j in self.store.judgements())
        total = 0
        for annotator, qid in keys:
            live = self._session(annotator, qid)
            total += live.session.round
            if progress is not None:
                progress(live.session.round)
        return total

    def _session(self, annotator: str, qid: str) -> _Live:
        key = (annotator, qid)
        live = self._live.get(key)
        if live is not None:
            return live
        with self._create:
            live = self._live.get(key)
            if live is None:
                live = self._build(annotator, qid)
                self._live[key] = live
        return live

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
        stored = self.store.judgements(qid=qid, annotator=annotator)
        if not self.store.check_prior(qid, session.prior_fingerprint):
            raise InputDataError(
                f"question {qid!r}: the model's prior differs from the one the stored "
                "judgements were made with (another model or encoder?); start the server as "
                "before or use another --db",
                path=self.store.path,
            )
        live = _Live(session)
        for judgement in stored:
            pair = self._offer(session)
            if judgement.round != session.round or pair != (judgement.left, judgement.right):
                raise InputDataError(
                    f"annotator {annotator!r}, question {qid!r}, round {judgement.round}: the "
                    f"model offers {pair} but the database holds ({judgement.left}, "
                    f"{judgement.right}); the judgements were made with another model",
                    path=self.store.path,
                )
            self._apply(live, judgement)
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

    def _state(self, live: _Live, annotator: str, qid: str) -> RoundState:
        pair, reason = self._done(live)
        session = live.session
        probabilities = best_probabilities(session.posterior())
        top = session.best()
        n = session.num_candidates
        return RoundState(
            qid=qid,
            annotator=annotator,
            round=session.round,
            judgements=live.judgements,
            ties=live.ties,
            num_pairs=n * (n - 1) // 2,
            pair=pair,
            done=pair is None,
            reason=reason,
            top=top,
            confidence=probabilities[top],
        )

    def state(self, annotator: str, qid: str) -> RoundState:
        """Where ``annotator`` stands on question ``qid`` (its session is made on first use).

        Raises:
            NotFound: an unknown question.
        """
        self.project.question(qid)
        live = self._session(annotator, qid)
        with live.lock:
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
        live = self._session(s.annotator, s.qid)
        with live.lock:
            earlier = self.store.get(s.id)
            if earlier is not None:
                return self._again(live, earlier, s)
            pair, reason = self._done(live)
            if pair is None:
                raise Conflict(f"question {s.qid!r} is done: {reason}")
            if s.round != live.session.round:
                raise Conflict(
                    f"this page is out of date: it answers round {s.round + 1}, but "
                    f"{live.session.round} answers are stored (another tab?); reload the page"
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
            try:
                stored, created = self.store.record(judgement)
            except StaleRoundError as exc:
                raise Conflict(exc.reason) from None
            if not created:  # the same id, committed meanwhile for another session
                return self._again(live, stored, s)
            try:
                self._apply(live, stored)
            except BaseException:
                self._live.pop((s.annotator, s.qid), None)  # rebuilt from the database
                raise
            return Receipt(stored, False, self._state(live, s.annotator, s.qid))

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
            live = self._session(annotator, qid)
            with live.lock:
                return _ranking(live.session.posterior(), qid, annotator, live.judgements)
        with self._pool:
            pooled = self._pooled.get(qid)
            if pooled is None:
                features = self.project.features(qid)
                model = self.project.ranker.preference_model(features, seed=self.project.seed)
                pooled = self._pooled[qid] = _Pooled(model)
            for judgement in self.store.judgements(qid=qid, after=pooled.seq):
                if judgement.winner is not None and judgement.loser is not None:
                    pooled.model.update(judgement.winner, judgement.loser)
                    pooled.judgements += 1
                pooled.seq = judgement.seq
            return _ranking(pooled.model.posterior(), qid, None, pooled.judgements)

    def counts(self) -> dict[str, dict[str, int]]:
        """Per annotator, the number of answers per question (from the database)."""
        table: dict[str, dict[str, int]] = {name: {} for name in self.store.annotators()}
        for judgement in self.store.judgements():
            row = table.setdefault(judgement.annotator, {})
            row[judgement.qid] = row.get(judgement.qid, 0) + 1
        return table
