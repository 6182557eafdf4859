"""Judging sessions over the database: the round's checks, ties, budgets, the deterministic
rebuild after a restart, pooled rankings and the confidence in the top answer."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
import torch
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator

from probrank.exceptions import InputDataError
from probrank.models.interactive import InteractiveRanker, InteractiveRankerSettings, WarmStart
from probrank.nn.siamese import SiameseUtilityNet
from probrank.serve.errors import BadRequest, Conflict, NotFound
from probrank.serve.judging import (
    JudgingService,
    Submission,
    best_probabilities,
    check_annotator,
    check_judgement_id,
)
from probrank.serve.store import Choice
from tests.serve.conftest import make_service


def _answer(service: JudgingService, annotator: str, qid: str, choice: Choice | None = None):
    """Answer the offered pair (default: the candidate with the lower index is better)."""
    state = service.state(annotator, qid)
    assert state.pair is not None
    left, right = state.pair
    if choice is None:
        choice = Choice.LEFT if left < right else Choice.RIGHT
    submission = Submission(uuid.uuid4().hex, annotator, qid, state.round, left, right, choice)
    return service.submit(submission)


def test_a_round_stores_learns_and_offers_a_new_pair(service: JudgingService) -> None:
    before = service.state("ann", "q1")
    prior_mean = service.ranking("q1", "ann").mean
    receipt = _answer(service, "ann", "q1")
    assert not receipt.duplicate
    assert receipt.state.round == 1 and receipt.state.judgements == 1
    assert receipt.state.pair is not None and set(receipt.state.pair) != set(before.pair)
    assert service.store.count() == 1
    stored = service.store.judgements()[0]
    assert (stored.left, stored.right) == before.pair
    assert stored.left_id == f"c{before.pair[0]}"
    assert service.ranking("q1", "ann").mean != pytest.approx(prior_mean)


def test_checks_of_a_round(service: JudgingService) -> None:
    state = service.state("ann", "q1")
    left, right = state.pair
    with pytest.raises(NotFound):
        service.state("ann", "no-such-question")
    with pytest.raises(Conflict, match="out of date"):
        service.submit(Submission("stale-round-1", "ann", "q1", 3, left, right, Choice.LEFT))
    others = [(i, j) for i in range(5) for j in range(5) if i != j and {i, j} != {left, right}]
    with pytest.raises(BadRequest, match="not offered"):
        service.submit(Submission("forged-pair-1", "ann", "q1", 0, *others[0], Choice.LEFT))
    with pytest.raises(BadRequest, match="not offered"):  # the offered pair, swapped sides
        service.submit(Submission("swapped-pair", "ann", "q1", 0, right, left, Choice.LEFT))
    first = Submission("double-click", "ann", "q1", 0, left, right, Choice.RIGHT)
    receipt = service.submit(first)
    again = service.submit(first)  # a retry: acknowledged again, stored once
    assert again.duplicate and again.judgement == receipt.judgement
    assert again.state.round == 1 and service.store.count() == 1
    with pytest.raises(Conflict, match="another answer"):
        service.submit(Submission("double-click", "ann", "q1", 0, left, right, Choice.LEFT))
    assert service.store.count() == 1


def test_ties_learn_nothing_and_are_not_offered_again(service: JudgingService) -> None:
    before = service.ranking("q1", "ann")
    state = service.state("ann", "q1")
    receipt = _answer(service, "ann", "q1", Choice.TIE)
    assert receipt.state.ties == 1 and receipt.state.judgements == 0
    assert service.ranking("q1", "ann").mean == pytest.approx(before.mean, abs=1e-12)
    offered = {tuple(sorted(state.pair))}
    while not (current := service.state("ann", "q1")).done:
        pair = tuple(sorted(current.pair))
        assert pair not in offered
        offered.add(pair)
        _answer(service, "ann", "q1")
    assert len(offered) == 10 and "every pair" in current.reason
    with pytest.raises(Conflict, match="done"):
        service.submit(Submission("after-done-1", "ann", "q1", current.round, 0, 1, Choice.LEFT))


def test_budget_of_judgements(questions_file: Path, serve_model: Path, tmp_path: Path) -> None:
    service = make_service(questions_file, serve_model, tmp_path / "j.sqlite", rounds=2)
    _answer(service, "ann", "q1", Choice.TIE)  # ties do not use up the budget
    _answer(service, "ann", "q1")
    state = _answer(service, "ann", "q1").state
    assert state.done and state.judgements == 2 and "2 judgements" in state.reason
    assert not service.state("bob", "q1").done
    service.store.close()


def test_restart_rebuilds_every_posterior_exactly(
    questions_file: Path, serve_model: Path, tmp_path: Path
) -> None:
    db = tmp_path / "j.sqlite"
    first = make_service(questions_file, serve_model, db)
    for round_ in range(4):
        _answer(first, "ann", "q1", Choice.TIE if round_ == 2 else None)
        _answer(first, "bob", "q1", Choice.RIGHT)
    _answer(first, "ann", "q2")
    live = {
        key: (first.state(*key), first.ranking(key[1], key[0]))
        for key in [("ann", "q1"), ("bob", "q1"), ("ann", "q2")]
    }
    pooled = first.ranking("q1")
    first.store.close()

    second = make_service(questions_file, serve_model, db)
    assert second.rebuild() == 9
    for (annotator, qid), (state, ranking) in live.items():
        assert second.state(annotator, qid) == state  # same round, counts and next pair
        again = second.ranking(qid, annotator)
        assert again.order == ranking.order
        torch.testing.assert_close(torch.tensor(again.mean), torch.tensor(ranking.mean))
        torch.testing.assert_close(torch.tensor(again.upper), torch.tensor(ranking.upper))
    torch.testing.assert_close(torch.tensor(second.ranking("q1").mean), torch.tensor(pooled.mean))
    second.store.close()


def test_concurrent_rounds_give_the_states_a_serial_replay_gives(
    questions_file: Path, serve_model: Path, tmp_path: Path
) -> None:
    """12 sessions judged at once on as many threads (their rounds take turns at the CPU, their
    commits group): each acknowledged state is the one a fresh service rebuilds from the
    database one session at a time (same round, counts, next pair and confidence)."""
    db = tmp_path / "j.sqlite"
    service = make_service(questions_file, serve_model, db)
    keys = [(f"a{k}", qid) for k in range(6) for qid in ("q1", "q2")]
    last: dict[tuple[str, str], object] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(keys))

    def work(annotator: str, qid: str) -> None:
        try:
            start.wait()
            for number in range(4):
                receipt = _answer(service, annotator, qid, Choice.TIE if number == 2 else None)
            last[(annotator, qid)] = receipt.state
            assert service.state(annotator, qid) == receipt.state
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=key) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == [] and len(last) == len(keys)
    assert service.store.count() == 4 * len(keys)
    assert sorted(j.seq for j in service.store.judgements()) == list(range(1, 4 * len(keys) + 1))
    service.store.close()
    again = make_service(questions_file, serve_model, db)
    for key, state in last.items():
        assert again.state(*key) == state
    again.store.close()


def test_a_database_of_another_model_is_refused(
    questions_file: Path, serve_model: Path, tmp_path: Path, tiny_encoder
) -> None:
    db = tmp_path / "j.sqlite"
    first = make_service(questions_file, serve_model, db)
    _answer(first, "ann", "q1")
    first.store.close()
    settings = InteractiveRankerSettings()
    net = SiameseUtilityNet(128, settings.warm_start.hidden, seed=7)
    other = InteractiveRanker.from_warm_start(
        WarmStart(net=net, members=[net]), settings, encoder=tiny_encoder
    )
    other.save(tmp_path / "other")
    second = make_service(questions_file, tmp_path / "other", db)
    with pytest.raises(InputDataError, match="prior differs") as error:
        second.rebuild()
    assert str(db) in str(error.value)
    second.store.close()


def _same_ranking(one, other) -> None:
    assert one.order == other.order and one.judgements == other.judgements
    torch.testing.assert_close(torch.tensor(one.mean), torch.tensor(other.mean))
    torch.testing.assert_close(torch.tensor(one.upper), torch.tensor(other.upper))


def test_evicted_sessions_are_rebuilt_with_the_same_posterior_and_pair(
    questions_file: Path, serve_model: Path, tmp_path: Path
) -> None:
    service = make_service(questions_file, serve_model, tmp_path / "j.sqlite", max_sessions=2)
    for round_ in range(4):
        _answer(service, "ann", "q1", Choice.TIE if round_ == 1 else None)
    state, ranking = service.state("ann", "q1"), service.ranking("q1", "ann")
    for name in ("bob", "carol", "dave"):  # three more sessions: ann's is dropped
        _answer(service, name, "q2")
    assert service.sessions() == 2 and service.evictions >= 2
    assert ("ann", "q1") not in service._live
    assert service.state("ann", "q1") == state  # rebuilt from the database
    _same_ranking(service.ranking("q1", "ann"), ranking)
    # the reference: a session fed the same answers directly, never evicted
    project = service.project
    item = project.question("q1")
    session = project.ranker.session(
        item.query, item.candidates, seed=project.seed, features=project.features("q1"),
        strategy=project.strategy,
    )  # fmt: skip
    for judgement in service.store.judgements(qid="q1", annotator="ann"):
        assert session.next_pair() == (judgement.left, judgement.right)
        if judgement.winner is None:
            session.skip()
        else:
            session.record(judgement.winner, judgement.loser)
    assert session.next_pair() == state.pair
    torch.testing.assert_close(
        torch.tensor(ranking.mean, dtype=torch.float64),
        session.posterior().mean.detach().double().reshape(-1),
    )
    service.store.close()


def test_undo_takes_back_the_last_answer(
    questions_file: Path, serve_model: Path, tmp_path: Path
) -> None:
    db = tmp_path / "j.sqlite"
    service = make_service(questions_file, serve_model, db)
    with pytest.raises(Conflict, match="no answer of yours"):
        service.undo("ann", "q1", jid="undo-nothing", round=0)
    _answer(service, "ann", "q1")
    _answer(service, "ann", "q1", Choice.RIGHT)
    before, ranking = service.state("ann", "q1"), service.ranking("q1", "ann")
    last = _answer(service, "ann", "q1").judgement
    with pytest.raises(Conflict, match="out of date"):
        service.undo("ann", "q1", jid="undo-stale-1", round=2)
    receipt = service.undo("ann", "q1", jid="undo-event-1", round=3)
    assert receipt.judgement.retracts == last.id and not receipt.duplicate
    after = receipt.state
    assert after.round == 4 and after.answers == 2 and after.judgements == 2
    assert after.pair == before.pair and after.top == before.top  # the next pair follows
    _same_ranking(service.ranking("q1", "ann"), ranking)  # and the posterior
    assert service.undo("ann", "q1", jid="undo-event-1", round=3).duplicate  # a retry
    assert [j.live for j in service.store.judgements()] == [True, True, False, False]
    assert service.counts()["ann"] == {"q1": 2}
    _answer(service, "ann", "q1", Choice.TIE)  # judging goes on after the undo
    state = service.state("ann", "q1")
    service.store.close()
    again = make_service(questions_file, serve_model, db)  # nothing replayed at start
    assert again.sessions() == 0
    assert again.state("ann", "q1") == state
    again.store.close()


def test_pooled_ranking_learns_every_annotators_preferences(service: JudgingService) -> None:
    for _ in range(3):
        _answer(service, "ann", "q1")
        _answer(service, "bob", "q1", Choice.RIGHT)
    _answer(service, "bob", "q1", Choice.TIE)
    pooled = service.ranking("q1")
    assert pooled.annotator is None and pooled.judgements == 6
    project = service.project
    model = project.ranker.preference_model(project.features("q1"), seed=project.seed)
    for judgement in service.store.judgements(qid="q1"):
        if judgement.winner is not None:
            model.update(judgement.winner, judgement.loser)
    torch.testing.assert_close(
        torch.tensor(pooled.mean, dtype=torch.float64),
        model.posterior().mean.detach().double().reshape(-1),
    )
    assert service.counts() == {"ann": {"q1": 3}, "bob": {"q1": 4}}


def test_consistent_judgements_put_the_preferred_answer_first(service: JudgingService) -> None:
    while not service.state("ann", "q2").done:
        _answer(service, "ann", "q2")  # candidate 0 beats every other
    ranking = service.ranking("q2", "ann")
    assert ranking.order[0] == 0
    assert ranking.best[0] == max(ranking.best)
    assert service.state("ann", "q2").top == 0


def test_the_confidence_is_drawn_outside_the_cpu_turn(
    service: JudgingService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state's pair, posterior and top are computed in a turn (the round's turn, for a
    POST); its confidence (NumPy draws) after it, under the session's lock only; a state
    computed already is answered without a turn."""
    from probrank.serve import judging

    held: list[tuple[int, bool]] = []
    real = judging.best_probabilities

    def spy(posterior):  # type: ignore[no-untyped-def]
        live = service._live[("ann", "q1")]
        held.append((service._turns._holders, live.lock.locked()))
        return real(posterior)

    monkeypatch.setattr(judging, "best_probabilities", spy)
    first = service.state("ann", "q1")
    receipt = _answer(service, "ann", "q1")
    assert held == [(0, True), (0, True)]  # no turn held, the session locked
    acquire = service._turns.acquire
    monkeypatch.setattr(service._turns, "acquire", lambda: pytest.fail("a turn was taken"))
    assert service.state("ann", "q1") == receipt.state  # the page after the POST
    monkeypatch.setattr(service._turns, "acquire", acquire)
    assert 0.0 < first.confidence <= 1.0 and len(held) == 2


def test_best_probabilities() -> None:
    clear = MultivariateNormal(torch.tensor([0.0, 6.0, 0.5]), torch.eye(3))
    probabilities = best_probabilities(clear)
    assert sum(probabilities) == pytest.approx(1.0)
    assert probabilities[1] > 0.99
    assert best_probabilities(clear) == probabilities  # seeded
    even = best_probabilities(MultivariateNormal(torch.zeros(4), torch.eye(4)), draws=8000)
    assert all(abs(p - 0.25) < 0.03 for p in even)
    # perfectly correlated candidates: the higher mean always wins
    covariance = torch.ones(2, 2, dtype=torch.float64) + 1e-8 * torch.eye(2, dtype=torch.float64)
    tied = MultivariateNormal(torch.tensor([0.0, 0.1], dtype=torch.float64), covariance)
    assert best_probabilities(tied)[1] > 0.99
    # singular (no Cholesky factor): the eigendecomposition's square root is used instead
    singular = MultivariateNormal(
        torch.tensor([0.0, 0.1], dtype=torch.float64),
        DenseLinearOperator(torch.ones(2, 2, dtype=torch.float64)),
    )
    assert best_probabilities(singular) == [0.0, 1.0]


@pytest.mark.parametrize("name", ["ann", "Zoë", "a.b-c_d@lab", "x" * 40])
def test_valid_annotator_names(name: str) -> None:
    assert check_annotator(name) == name


@pytest.mark.parametrize("name", ["", " ann", "an n", "-ann", "_ann", "x" * 41, "a/b", "<b>"])
def test_invalid_annotator_names(name: str) -> None:
    with pytest.raises(BadRequest, match="annotator name"):
        check_annotator(name)


@pytest.mark.parametrize("value", ["short", "x" * 65, "has space 123", "ünïcode-id-1"])
def test_invalid_judgement_ids(value: str) -> None:
    with pytest.raises(BadRequest, match="judgement id"):
        check_judgement_id(value)
