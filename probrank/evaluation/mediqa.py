"""MEDIQA 2019 Task 3 (answer filtering and re-ranking): the official evaluator's semantics.

Reimplemented, not imported: the official AIcrowd script (``Eval_Scripts`` of
abachaa/MEDIQA2019) reads files with pandas, mixes tabs and spaces and crashes on questions
without a correct answer, so it cannot be a dependency. Its semantics, checked against the
published CHiQA baseline on the test key (accuracy 0.5167, MRR 0.8950, Spearman 0.3150), are:

* Submission rows are deduplicated on (question, answer), keeping the first; a row's position
  within its question is its order in the file (every submitted row counts, whatever its label).
* **accuracy** = submitted (question, answer, label) rows that appear in the key / rows of the
  key; rows the submission lacks are wrong.
* **precision** = submitted rows labelled 1 that the key labels 1 / submitted rows labelled 1.
* **MRR**: per key question, 1 / position of the first submitted row that is labelled 1 *and*
  correct in the key; 0 if there is none; averaged over the key's questions.
* **spearman_official**: per question, the answers labelled 1 and correct, in submission order,
  and the same answers in key order, are passed *as ID strings* to ``scipy.stats.spearmanr``,
  which ranks strings alphabetically (``1_Answer10`` before ``1_Answer2``). A question with one
  such answer gives NaN and is dropped; one with none counts as 0 (the script starts from
  rho = 0); the mean runs over the questions not dropped, and is 0 when none is left.
* **spearman**: the textbook coefficient, beside it: the same answers' positions in the
  submission against their positions in the key (the reference ranking), questions with fewer
  than two such answers dropped.

Where the official script would divide by zero (no row labelled 1 for precision, an empty key)
the value is NaN and a :class:`~probrank.exceptions.NumericsWarning` is issued.

Key files: ``question_id,answer_id,label`` per line; the test key has a header line, the
validation key none (both read). Submissions are written without a header, labels as ``1``/``0``.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from probrank.data._io import atomic_write, read_text_lines
from probrank.exceptions import InputDataError, NumericsWarning

__all__ = [
    "MediqaRow",
    "mediqa_scores",
    "read_mediqa_rows",
    "write_mediqa_submission",
]

_HEADER = ("question_id", "answer_id", "label")


@dataclass(frozen=True)
class MediqaRow:
    """One line of a key or a submission."""

    question_id: str
    answer_id: str
    label: int


def read_mediqa_rows(path: str | os.PathLike[str]) -> list[MediqaRow]:
    """Read a key or submission CSV (``question_id,answer_id,label``; optional header line).

    Raises:
        InputDataError: wrong column count, a label other than 0/1, or no row at all.
    """
    path = Path(path)
    rows = []
    for number, text in enumerate(read_text_lines(path), start=1):
        line = text.strip()
        if not line:
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            raise InputDataError(
                f"expected 3 comma-separated columns, found {len(parts)}: {line[:80]!r}",
                path=path,
                line=number,
            )
        if number == 1 and tuple(parts) == _HEADER:
            continue
        if parts[2] not in ("0", "1"):
            raise InputDataError(f"label {parts[2]!r} is not 0 or 1", path=path, line=number)
        rows.append(MediqaRow(parts[0], parts[1], int(parts[2])))
    if not rows:
        raise InputDataError("no rows", path=path)
    return rows


def write_mediqa_submission(path: str | os.PathLike[str], rows: Iterable[MediqaRow]) -> None:
    """Write rows atomically in the official submission format (no header, rank order)."""
    with atomic_write(path) as out:
        for row in rows:
            out.write(f"{row.question_id},{row.answer_id},{int(row.label)}\n")


def _nan(what: str) -> float:
    warnings.warn(
        f"{what} is undefined (division by zero); returning NaN", NumericsWarning, stacklevel=3
    )
    return math.nan


def _rank_correlation(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson correlation of two rank vectors without ties (Spearman's closed form,
    ``1 - 6 sum d^2 / (n (n^2 - 1))``); NaN for fewer than two."""
    n = len(a)
    if n < 2:
        return math.nan
    d2 = sum((x - y) ** 2 for x, y in zip(a, b, strict=True))
    return 1.0 - 6.0 * d2 / (n * (n * n - 1))


def _official_spearman(submitted: list[str], reference: list[str]) -> float:
    """scipy's Spearman on ID strings (alphabetical ranks); NaN for fewer than two."""
    if len(submitted) < 2:
        return math.nan
    if len(set(submitted)) == len(submitted) and set(submitted) == set(reference):
        # the same distinct IDs in two orders (always so here): no ties, closed form
        rank = {answer: r for r, answer in enumerate(sorted(submitted))}
        return _rank_correlation([rank[x] for x in submitted], [rank[x] for x in reference])
    a = stats.rankdata(np.array(submitted, dtype=object).astype(str))
    b = stats.rankdata(np.array(reference, dtype=object).astype(str))
    return float(np.corrcoef(a, b)[0, 1])


def mediqa_scores(key: Sequence[MediqaRow], submission: Sequence[MediqaRow]) -> dict[str, float]:
    """Official MEDIQA 2019 Task 3 scores of a submission (see the module docstring).

    Args:
        key: The answer key's rows, in reference rank order within each question.
        submission: Submitted rows, in predicted rank order within each question.

    Returns:
        ``{"accuracy", "precision", "MRR", "spearman_official", "spearman"}``.
    """
    seen: set[tuple[str, str]] = set()
    rows: list[MediqaRow] = []
    for row in submission:
        if (row.question_id, row.answer_id) not in seen:
            seen.add((row.question_id, row.answer_id))
            rows.append(row)
    key_entries = {(r.question_id, r.answer_id, r.label) for r in key}
    correct: dict[str, list[str]] = {}
    questions: list[str] = []
    for r in key:
        if r.question_id not in correct:
            correct[r.question_id] = []
            questions.append(r.question_id)
        if r.label == 1:
            correct[r.question_id].append(r.answer_id)
    by_question: dict[str, list[MediqaRow]] = {}
    for r in rows:
        by_question.setdefault(r.question_id, []).append(r)

    matched = sum(1 for r in rows if (r.question_id, r.answer_id, r.label) in key_entries)
    accuracy = matched / len(key) if key else _nan("accuracy")
    predicted = [r for r in rows if r.label == 1]
    hits = sum(1 for r in predicted if r.answer_id in correct.get(r.question_id, ()))
    precision = hits / len(predicted) if predicted else _nan("precision")

    reciprocal, official, textbook = [], [], []
    for qid in questions:
        good = set(correct[qid])
        submitted_correct: list[str] = []
        first = 0.0
        for position, r in enumerate(by_question.get(qid, []), start=1):
            if r.label == 1 and r.answer_id in good:
                if not submitted_correct:
                    first = 1.0 / position
                submitted_correct.append(r.answer_id)
        reciprocal.append(first)
        in_key_order = [a for a in correct[qid] if a in submitted_correct]
        rho = _official_spearman(submitted_correct, in_key_order) if submitted_correct else 0.0
        if not math.isnan(rho):
            official.append(rho)
        if len(submitted_correct) >= 2:
            position_of = {a: i for i, a in enumerate(submitted_correct)}
            positions = [position_of[a] for a in in_key_order]
            if len(set(positions)) == len(positions):  # distinct: the closed form is exact
                textbook.append(_rank_correlation(positions, range(len(positions))))
            else:  # a key that repeats an answer
                rho = stats.spearmanr(positions, range(len(positions))).statistic
                textbook.append(float(rho))
    mrr = float(np.mean(reciprocal)) if questions else _nan("MRR")
    spearman_official = float(np.mean(official)) if official else 0.0
    spearman = float(np.mean(textbook)) if textbook else _nan("spearman")
    return {
        "accuracy": accuracy,
        "precision": precision,
        "MRR": mrr,
        "spearman_official": spearman_official,
        "spearman": spearman,
    }
