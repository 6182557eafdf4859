"""Agreement between annotators on the pairs that more than one of them judged.

An item is an unordered pair of candidates of one question; an annotator's answer to it is
coded as one of three nominal categories: the candidate with the lower index is better, the one
with the higher index is better, or "both bad / can't tell" (a tie). Which side a candidate was
shown on does not matter. Every annotator answers an item at most once (one session per
annotator and question).

:func:`agreement` reports, over the items judged by at least two annotators, the share of
identical answers, Krippendorff's alpha (nominal, every annotator; the ``krippendorff``
package) and Cohen's kappa for each pair of annotators over the items both judged
(closed form, as scikit-learn's ``cohen_kappa_score``; every pair at once with matrix
products). A statistic that is undefined (fewer than two items, or a single category
used throughout) is None.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from probrank.serve.store import Choice, Judgement

__all__ = ["Agreement", "PairAgreement", "agreement", "code_answer"]

CATEGORIES = ("lower", "higher", "tie")
"""The coded answers to an unordered pair (lower / higher index better, tie)."""


def code_answer(judgement: Judgement) -> tuple[tuple[str, int, int], str]:
    """The item ``(qid, low, high)`` a judgement answers and its category."""
    low, high = sorted((judgement.left, judgement.right))
    if judgement.choice is Choice.TIE:
        category = "tie"
    else:
        category = "lower" if judgement.winner == low else "higher"
    return (judgement.qid, low, high), category


@dataclass(frozen=True)
class PairAgreement:
    """Two annotators on the items both judged."""

    first: str
    second: str
    items: int
    observed: float
    kappa: float | None


@dataclass(frozen=True)
class Agreement:
    """Agreement over the items judged by at least two annotators.

    Attributes:
        items: Items judged by two annotators or more.
        answers: Answers to those items.
        observed: Share of pairs of answers to an item that are identical (None: no item).
        alpha: Krippendorff's alpha, nominal (None: undefined).
        pairs: Cohen's kappa per pair of annotators that share at least one item.
    """

    items: int
    answers: int
    observed: float | None
    alpha: float | None
    pairs: list[PairAgreement] = field(default_factory=list)


def _defined(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _kappa(observed: float, chance: float, items: int) -> float | None:
    """Cohen's kappa from the observed and the chance agreement (as scikit-learn's
    ``cohen_kappa_score``; None for fewer than 2 items or a chance agreement of 1)."""
    if items < 2 or chance >= 1.0:
        return None  # one category throughout: undefined
    return (observed - chance) / (1.0 - chance)


def _alpha(
    table: dict[tuple[str, int, int], dict[str, str]], annotators: list[str]
) -> float | None:
    import krippendorff

    data = np.full((len(annotators), len(table)), np.nan)
    row = {name: i for i, name in enumerate(annotators)}
    for column, answers in enumerate(table.values()):
        for name, category in answers.items():
            data[row[name], column] = CATEGORIES.index(category)
    try:
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore")
            value = krippendorff.alpha(
                reliability_data=data,
                level_of_measurement="nominal",
                value_domain=list(range(len(CATEGORIES))),
            )
    except ValueError:  # fewer than two values or categories to compare
        return None
    return _defined(float(value))


def agreement(judgements: Iterable[Judgement]) -> Agreement:
    """Agreement statistics of the stored judgements (see the module docstring)."""
    answers: dict[tuple[str, int, int], dict[str, str]] = {}
    for judgement in judgements:
        item, category = code_answer(judgement)
        answers.setdefault(item, {})[judgement.annotator] = category
    shared = {item: by for item, by in answers.items() if len(by) >= 2}
    if not shared:
        return Agreement(items=0, answers=0, observed=None, alpha=None)
    annotators = sorted({name for by in shared.values() for name in by})
    # annotators x items codes (-1: not judged), then every pair of annotators at once:
    # items in common, identical answers, and each one's categories on the common items
    row = {name: i for i, name in enumerate(annotators)}
    codes = np.full((len(annotators), len(shared)), -1)
    for column, by in enumerate(shared.values()):
        for name, category in by.items():
            codes[row[name], column] = CATEGORIES.index(category)
    present = (codes >= 0).astype(np.float64)
    onehot = [(codes == k).astype(np.float64) for k in range(len(CATEGORIES))]
    common = present @ present.T
    agree = sum(o @ o.T for o in onehot)
    margins = [o @ present.T for o in onehot]  # [a, b]: a's answers k on items shared with b
    chance_counts = sum(m * m.T for m in margins)
    upper = np.triu_indices(len(annotators), k=1)
    same, total = float(agree[upper].sum()), float(common[upper].sum())
    pairs = []
    for a, b in zip(*upper, strict=True):
        n = int(np.rint(common[a, b]))
        if n == 0:
            continue
        observed = float(agree[a, b]) / n
        kappa = _kappa(observed, float(chance_counts[a, b]) / (n * n), n)
        pairs.append(PairAgreement(annotators[a], annotators[b], n, observed, kappa))
    return Agreement(
        items=len(shared),
        answers=sum(len(by) for by in shared.values()),
        observed=same / total,
        alpha=_alpha(shared, annotators),
        pairs=pairs,
    )
