"""A held-out check of the relevance model: the uniformly explored documents, scored before they
were judged.

The ``bayesian`` strategy judges a share of each topic's batch (``explore_share``) uniformly at
random among the topic's unjudged documents. When it chooses them, the model has not seen
them: their posterior predictive P(relevant) at that moment is a prediction about a random
sample of exactly the documents whose relevance the estimates extrapolate (the unjudged ones),
free of the acquisition's choice (which judges where the model expects relevance to matter).
Once judged, the relevant documents found among them test that prediction without the full
qrels: in ``probrank pool simulate``'s output (``estimates.json``'s ``explored``), or from the
selector a judging loop keeps
(:meth:`~probrank.pooling.strategies.bayesian.BayesianSelector.explored_check`; ``pool next``
starts afresh at each call and keeps no predictions).

:class:`ExploredRecord` keeps the predictions (per explored item, the P(relevant) of every
posterior draw of the fit that chose it); :meth:`ExploredRecord.check` compares the relevant
documents found among the judged ones with their predictive distribution
(:class:`ExploredCheck`). Within a batch the documents share the fit's parameter draws, so
their count is a mixture over the draws of sums of Bernoullis; batches are predicted one after
another (each conditions on the ones before), so their counts add independently. No library
offers that distribution; it is sampled (Monte Carlo, seeded), which is why it is written here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from probrank.pooling.pool import Judgements

__all__ = ["ExploredCheck", "ExploredRecord"]

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
        judged = [(b, item, p) for item, (b, p) in self._items.items() if judgements.judged[item]]
        if not judged:
            return None
        rng = np.random.default_rng(seed)
        items = np.array([item for _, item, _ in judged])
        found = int(np.sum(judgements.grades[items] >= level))
        expected = float(sum(p.mean() for _, _, p in judged))
        batches: dict[int, list[np.ndarray]] = {}
        for b, _, p in judged:
            batches.setdefault(b, []).append(p)
        counts = np.zeros(REPLICATES, dtype=np.int64)
        for columns in batches.values():
            probabilities = np.column_stack(columns)  # s x m
            draw = rng.integers(len(probabilities), size=REPLICATES)
            counts += (rng.random((REPLICATES, probabilities.shape[1])) < probabilities[draw]).sum(
                axis=1
            )
        lower, upper = np.quantile(counts, [0.05, 0.95])
        tail = (1 + min(np.sum(counts <= found), np.sum(counts >= found))) / (1 + REPLICATES)
        return ExploredCheck(
            documents=len(items),
            expected=expected,
            found=found,
            lower=float(lower),
            upper=float(upper),
            p_value=float(min(1.0, 2.0 * tail)),
        )
