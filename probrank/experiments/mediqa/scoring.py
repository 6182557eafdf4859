"""Scoring MEDIQA 2019 Task 3 predictions with the official metrics, and their noise.

:func:`submission` turns per-answer scores and 0/1 labels into official submission rows;
:class:`MediqaScorer` scores them against one split's key
(:func:`~probrank.evaluation.mediqa.mediqa_scores`), on the whole split or on a bootstrap
resample of its questions.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from probrank.data.datasets.mediqa import MediqaList
from probrank.evaluation.mediqa import MediqaRow, mediqa_scores
from probrank.exceptions import InputDataError, NumericsWarning

__all__ = ["MEASURES", "MediqaScorer", "plain_qid", "submission"]

MEASURES = ("accuracy", "precision", "MRR", "spearman_official", "spearman")
"""The official Task 3 measures, in the order they are printed."""


def plain_qid(qid: str) -> str:
    """A loader qid without its file prefix (``test:12`` -> ``12``), as the keys write it."""
    return qid.split(":")[-1]


def submission(
    lists: Sequence[MediqaList],
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    positives_first: bool = False,
    question_id: Callable[[str], str] = plain_qid,
) -> dict[str, list[MediqaRow]]:
    """Rows per question in predicted rank order.

    Args:
        lists: The questions, in the order their answers appear in ``scores``.
        scores: `n` ranking scores (higher first; ties by CHiQA's SystemRank).
        labels: `n` 0/1 predicted labels.
        positives_first: Put the answers labelled 1 before those labelled 0 (each group by
            score), as a filter-then-rank system submits them.
        question_id: Maps a list's qid to the submission's question id.

    Returns:
        ``{question id: rows}``.

    Raises:
        InputDataError: ``scores`` or ``labels`` do not have one entry per answer.
    """
    total = sum(len(item) for item in lists)
    if len(scores) != total or len(labels) != total:
        raise InputDataError(f"{total} answers but {len(scores)} scores and {len(labels)} labels")
    rows, start = {}, 0
    for item in lists:
        n = len(item)

        def order_key(i: int, start: int = start, item: MediqaList = item) -> tuple:
            first = -int(labels[start + i]) if positives_first else 0
            return (first, -float(scores[start + i]), item.system_ranks[i])

        order = sorted(range(n), key=order_key)
        qid = question_id(item.qid)
        rows[qid] = [MediqaRow(qid, item.candidate_ids[i], int(labels[start + i])) for i in order]
        start += n
    return rows


class MediqaScorer:
    """Scores submissions of one split against its official key, or a bootstrap resample.

    Args:
        lists: The split's questions (the key's rows of other questions are ignored).
        key: The official key rows; None: a key made from the lists' own labels in
            ReferenceRank order, under their full qids (for training questions, whose two
            files reuse question numbers).
    """

    def __init__(self, lists: Sequence[MediqaList], key: Sequence[MediqaRow] | None = None):
        self.lists = list(lists)
        self.question_id: Callable[[str], str] = plain_qid
        if key is None:
            self.question_id = str
            key = [
                MediqaRow(item.qid, item.candidate_ids[i], item.labels[i])
                for item in lists
                for i in sorted(range(len(item)), key=lambda i: item.reference_ranks[i])
            ]
        qids = {self.question_id(item.qid) for item in lists}
        self.key: dict[str, list[MediqaRow]] = {}
        for row in key:
            if row.question_id in qids:
                self.key.setdefault(row.question_id, []).append(row)
        if not self.key:
            raise InputDataError("the key has no row for any of the questions")

    def _submission(
        self, scores: np.ndarray, labels: np.ndarray, positives_first: bool
    ) -> dict[str, list[MediqaRow]]:
        return submission(
            self.lists,
            scores,
            labels,
            positives_first=positives_first,
            question_id=self.question_id,
        )

    def __call__(
        self,
        scores: np.ndarray,
        labels: np.ndarray,
        sample: Sequence[str] | None = None,
        *,
        positives_first: bool = False,
    ) -> dict[str, float]:
        """Official scores of one prediction (``sample``: question ids, repeats allowed)."""
        return self._score_rows(self._submission(scores, labels, positives_first), sample)

    def _score_rows(
        self, rows: dict[str, list[MediqaRow]], sample: Sequence[str] | None
    ) -> dict[str, float]:
        chosen = list(self.key) if sample is None else list(sample)
        key_rows, sub_rows = [], []
        for j, qid in enumerate(chosen):
            name = qid if sample is None else f"{j}:{qid}"  # a resampled question is new
            key_rows += [MediqaRow(name, r.answer_id, r.label) for r in self.key[qid]]
            sub_rows += [MediqaRow(name, r.answer_id, r.label) for r in rows.get(qid, [])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumericsWarning)
            return mediqa_scores(key_rows, sub_rows)

    def bootstrap_sd(
        self,
        scores: np.ndarray,
        labels: np.ndarray,
        *,
        draws: int = 1000,
        seed: int = 0,
        positives_first: bool = False,
    ) -> dict[str, float]:
        """Standard deviation of each measure over ``draws`` resamples of the questions
        (NaN resamples left out; NaN when every one is)."""
        rng = np.random.default_rng(seed)
        qids = list(self.key)
        values: dict[str, list[float]] = {m: [] for m in MEASURES}
        rows = self._submission(scores, labels, positives_first)
        for _ in range(draws):
            sample = [qids[i] for i in rng.integers(len(qids), size=len(qids))]
            got = self._score_rows(rows, sample)
            for m in MEASURES:
                if not math.isnan(got[m]):
                    values[m].append(got[m])
        return {m: float(np.std(v)) if v else math.nan for m, v in values.items()}

    def paired_bootstrap(
        self,
        first: tuple[np.ndarray, np.ndarray],
        second: tuple[np.ndarray, np.ndarray],
        *,
        measures: Sequence[str] = ("accuracy", "MRR"),
        draws: int = 1000,
        seed: int = 0,
    ) -> dict[str, float]:
        """Paired bootstrap of ``first - second`` over resamples of the questions.

        Args:
            first: ``(scores, labels)`` of one system, each `n`.
            second: ``(scores, labels)`` of another.
            measures: Measures to compare.
            draws: Resamples.
            seed: Seed of the resampling.

        Returns:
            ``{"<measure> diff": observed difference, "<measure> diff sd": its bootstrap
            standard deviation, "<measure> P(diff > 0)": share of resamples where first wins}``.
        """
        rng = np.random.default_rng(seed)
        qids = list(self.key)
        rows_a = self._submission(*first, False)
        rows_b = self._submission(*second, False)
        whole_a, whole_b = self._score_rows(rows_a, None), self._score_rows(rows_b, None)
        diffs: dict[str, list[float]] = {m: [] for m in measures}
        for _ in range(draws):
            sample = [qids[i] for i in rng.integers(len(qids), size=len(qids))]
            got_a, got_b = self._score_rows(rows_a, sample), self._score_rows(rows_b, sample)
            for m in measures:
                diffs[m].append(got_a[m] - got_b[m])
        out: dict[str, float] = {}
        for m in measures:
            values = np.array(diffs[m])
            out[f"{m} diff"] = whole_a[m] - whole_b[m]
            out[f"{m} diff sd"] = float(np.nanstd(values))
            out[f"{m} P(diff > 0)"] = float(np.mean(values > 0))
        return out
