"""Agreement on repeated pairs, checked against the textbook formulas computed here."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from probrank.serve.agreement import CATEGORIES, agreement, code_answer
from probrank.serve.store import Choice, Judgement


def _judgement(annotator: str, qid: str, left: int, right: int, choice: Choice) -> Judgement:
    return Judgement(
        f"{annotator}-{qid}-{left}-{right}", annotator, qid, 0, left, right,
        f"c{left}", f"c{right}", choice,
    )  # fmt: skip


def _random_answers(annotators: list[str], items: int, seed: int, missing: float):
    rng = random.Random(seed)
    judgements = []
    for item in range(items):
        low, high = sorted(rng.sample(range(6), 2))
        truth = rng.choice(CATEGORIES)
        for name in annotators:
            if rng.random() < missing:
                continue
            answer = truth if rng.random() < 0.7 else rng.choice(CATEGORIES)
            left, right = (low, high) if rng.random() < 0.5 else (high, low)
            better = {"lower": low, "higher": high}.get(answer)
            choice = (
                Choice.TIE if better is None else Choice.LEFT if better == left else Choice.RIGHT
            )
            judgements.append(_judgement(name, f"q{item}", left, right, choice))
    return judgements


def _kappa(first: list[str], second: list[str]) -> float:
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    one, two = Counter(first), Counter(second)
    expected = sum(one[c] * two[c] for c in CATEGORIES) / n**2
    return (observed - expected) / (1 - expected)


def _alpha(units: list[list[str]]) -> float:
    """Krippendorff's nominal alpha from the coincidence matrix (units with >= 2 values)."""
    coincidence: Counter[tuple[str, str]] = Counter()
    for values in units:
        m = len(values)
        for a, b in itertools.permutations(range(m), 2):
            coincidence[(values[a], values[b])] += 1 / (m - 1)
    totals = Counter()
    for (c, _), weight in coincidence.items():
        totals[c] += weight
    n = sum(totals.values())
    observed = sum(w for (c, k), w in coincidence.items() if c != k)
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k) / (n - 1)
    return 1 - observed / expected


def test_the_side_a_candidate_was_shown_on_does_not_matter() -> None:
    a = _judgement("ann", "q1", 0, 3, Choice.LEFT)
    b = _judgement("bob", "q1", 3, 0, Choice.RIGHT)
    c = _judgement("cat", "q1", 3, 0, Choice.TIE)
    assert code_answer(a) == code_answer(b) == (("q1", 0, 3), "lower")
    assert code_answer(c) == (("q1", 0, 3), "tie")
    result = agreement([a, b])
    assert result.items == 1 and result.observed == pytest.approx(1.0)
    assert result.alpha is None  # a single category: undefined
    assert result.pairs[0].kappa is None


def test_kappa_and_alpha_match_the_formulas() -> None:
    judgements = _random_answers(["ann", "bob", "cat"], items=60, seed=3, missing=0.25)
    result = agreement(judgements)
    by_item: dict[tuple[str, int, int], dict[str, str]] = {}
    for judgement in judgements:
        item, category = code_answer(judgement)
        by_item.setdefault(item, {})[judgement.annotator] = category
    shared = [by for by in by_item.values() if len(by) >= 2]
    assert result.items == len(shared)
    assert result.answers == sum(len(by) for by in shared)
    assert result.alpha == pytest.approx(_alpha([list(by.values()) for by in shared]), abs=1e-9)
    assert len(result.pairs) == 3
    for pair in result.pairs:
        common = [by for by in shared if pair.first in by and pair.second in by]
        first = [by[pair.first] for by in common]
        second = [by[pair.second] for by in common]
        assert pair.items == len(common)
        assert pair.kappa == pytest.approx(_kappa(first, second), abs=1e-9)
    assert 0.2 < result.alpha < 0.9  # 70% shared truth: moderate agreement


def test_no_repeated_pair_means_no_statistic() -> None:
    judgements = [
        _judgement("ann", "q1", 0, 1, Choice.LEFT),
        _judgement("bob", "q1", 0, 2, Choice.LEFT),
    ]
    result = agreement(judgements)
    assert (result.items, result.observed, result.alpha, result.pairs) == (0, None, None, [])
