"""A held-out check of the relevance model: the uniformly explored documents, scored before they
were judged.

The ``bayesian`` strategy judges a share of each topic's batch (``explore_share``) uniformly at
random among the topic's unjudged documents. When it chooses them, the model has not seen
them: their posterior predictive P(relevant) at that moment is a prediction about a random
sample of exactly the documents whose relevance the estimates extrapolate (the unjudged ones),
free of the acquisition's choice (which judges where the model expects relevance to matter).
Once judged, the relevant documents found among them test that prediction without the full
qrels: in ``probrank pool simulate``'s output (``estimates.json``'s ``explored``), from the
selector a judging loop keeps
(:meth:`~probrank.pooling.strategies.bayesian.BayesianSelector.explored_check`), from the
predictions ``pool next --predictions`` keeps between its calls
(:mod:`probrank.pooling.predictions`, ``probrank pool check``), and on the judging page's
admin page (:meth:`probrank.serve.pool_judging.PoolService.explored_check`), all through
:func:`check_explored`.

:class:`ExploredRecord` keeps the predictions (per explored item, the P(relevant) of every
posterior draw of the fit that chose it); :meth:`ExploredRecord.check` compares the relevant
documents found among the judged ones with their predictive distribution
(:class:`ExploredCheck`). Within a batch the documents share the fit's parameter draws, so
their count is a mixture over the draws of sums of Bernoullis; batches are predicted one after
another (each conditions on the ones before), so their counts add independently. No library
offers that distribution; it is sampled (Monte Carlo, seeded), which is why it is written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from probrank.pooling.pool import Judgements

__all__ = ["ExploredCheck", "ExploredRecord", "check_explored"]

REPLICATES = 4000
"""Monte Carlo replicates of the predictive distribution of the count."""


@dataclass(frozen=True)
class ExploredCheck:
    """The relevant documents found among the judged explored ones against their predictive
    distribution.

    Attributes:
        documents: Explored documents judged so far.
        expected: Relevant documents the model expected among them (sum of their predictive
            P(relevant) when chosen).
        found: Relevant documents found among them.
        lower: 5% quantile of the predictive distribution of ``found``.
        upper: 95% quantile of it.
        p_value: Two-sided predictive p-value of ``found``: twice the smaller tail, at most 1,
            as the Monte Carlo estimate ``(1 + replicates in the tail) / (1 + replicates)``
            (so never 0; its floor is ``2 / (1 + REPLICATES)``). Small when the model's
            predictions of the unjudged documents are off.
    """

    documents: int
    expected: float
    found: int
    lower: float
    upper: float
    p_value: float

    @property
    def ratio(self) -> float:
        """``found / expected`` (NaN when nothing was expected)."""
        return self.found / self.expected if self.expected > 0 else float("nan")

    def to_json(self) -> dict[str, Any]:
        """``{"documents", "expected", "found", "lower", "upper", "p_value"}``."""
        return {
            "documents": self.documents,
            "expected": self.expected,
            "found": self.found,
            "lower": self.lower,
            "upper": self.upper,
            "p_value": self.p_value,
        }


class ExploredRecord:
    """The predictions of the explored documents, made when they were chosen."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[int, np.ndarray]] = {}
        self._batches = 0

    def __len__(self) -> int:
        return len(self._items)

    def add(self, items: np.ndarray, probabilities: np.ndarray) -> None:
        """Record one batch's explored items with their predictive P(relevant) per draw.

        Args:
            items: The explored items, `m`.
            probabilities: P(relevant) of each item under each posterior draw of the fit that
                chose them, `s x m`. An item proposed again before it is judged keeps its
                newest prediction (still made before its judgement).
        """
        items = np.asarray(items, dtype=np.int64)
        probabilities = np.asarray(probabilities, dtype=np.float64)
        if probabilities.ndim != 2 or probabilities.shape[1] != len(items):
            raise ValueError("probabilities must be s x m for m items")
        for j, item in enumerate(items.tolist()):
            self._items[item] = (self._batches, probabilities[:, j])
        self._batches += 1

    def check(
        self, judgements: Judgements, *, level: int, seed: int | np.random.Generator = 0
    ) -> ExploredCheck | None:
        """Compare the relevant documents found among the judged explored items with their
        predictive distribution (None when no explored item is judged yet).

        Args:
            judgements: The judgements (grades >= ``level`` are relevant).
            level: The relevance level.
            seed: Seed or generator of the Monte Carlo draws.
        """
        batches: dict[int, tuple[list[np.ndarray], list[bool]]] = {}
        for item, (b, p) in self._items.items():
            if judgements.judged[item]:
                columns, relevant = batches.setdefault(b, ([], []))
                columns.append(p)
                relevant.append(bool(judgements.grades[item] >= level))
        return check_explored(
            [
                (np.column_stack(columns), np.array(relevant))
                for columns, relevant in batches.values()
            ],
            seed=seed,
        )

    def predictions(self) -> dict[int, np.ndarray]:
        """The newest prediction of every recorded item: item -> P(relevant) per draw, `s`."""
        return {item: p for item, (_, p) in self._items.items()}


def check_explored(
    batches: Sequence[tuple[np.ndarray, np.ndarray]], *, seed: int | np.random.Generator = 0
) -> ExploredCheck | None:
    """The relevant documents found among judged explored documents against their predictive
    distribution (None when there is none).

    Args:
        batches: Per batch (documents predicted by one fit), ``(probabilities, relevant)``:
            P(relevant) of its `m` documents under each of the fit's `s` draws, `s x m`, and
            whether each was judged relevant, `m` (bool). A batch of one draw (`1 x m`) is `m`
            independent Bernoullis: predictions made one document per fit (the judging page's)
            can be passed as one such batch of their predictive means.
        seed: Seed or generator of the Monte Carlo draws.
    """
    batches = [
        (np.asarray(p, dtype=np.float64), np.asarray(r, dtype=bool))
        for p, r in batches
        if np.size(r)
    ]
    for probabilities, relevant in batches:
        if probabilities.ndim != 2 or relevant.shape != (probabilities.shape[1],):
            raise ValueError("each batch must be (s x m probabilities, m relevant)")
    if not batches:
        return None
    rng = np.random.default_rng(seed)
    found = int(sum(relevant.sum() for _, relevant in batches))
    expected = float(sum(probabilities.mean(axis=0).sum() for probabilities, _ in batches))
    counts = np.zeros(REPLICATES, dtype=np.int64)
    for probabilities, _ in batches:
        draw = rng.integers(len(probabilities), size=REPLICATES)
        counts += (rng.random((REPLICATES, probabilities.shape[1])) < probabilities[draw]).sum(
            axis=1
        )
    lower, upper = np.quantile(counts, [0.05, 0.95])
    tail = (1 + min(np.sum(counts <= found), np.sum(counts >= found))) / (1 + REPLICATES)
    return ExploredCheck(
        documents=int(sum(len(relevant) for _, relevant in batches)),
        expected=expected,
        found=found,
        lower=float(lower),
        upper=float(upper),
        p_value=float(min(1.0, 2.0 * tail)),
    )
