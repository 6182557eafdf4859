"""Candidate indices and judgements: the validation every posterior, strategy and user shares."""

from __future__ import annotations

import operator

from probrank.exceptions import InputDataError

__all__ = ["candidate_index", "judgement"]


def candidate_index(value: object, n: int) -> int:
    """``value`` as a candidate index in ``[0, n)`` (ints, numpy ints, integer 0-d tensors).

    Raises:
        InputDataError: Not an integer (bools and floats are refused) or out of range.
    """
    if isinstance(value, bool):
        raise InputDataError(f"candidate index must be an integer, got {value!r}")
    try:
        result = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InputDataError(f"candidate index must be an integer, got {value!r}") from None
    if not 0 <= result < n:
        raise InputDataError(f"candidate index {result} out of range for {n} candidates")
    return result


def judgement(winner: object, loser: object, n: int) -> tuple[int, int]:
    """``(winner, loser)`` as two different candidate indices in ``[0, n)``.

    Raises:
        InputDataError: Indices out of range, not integers, or equal.
    """
    w, ell = candidate_index(winner, n), candidate_index(loser, n)
    if w == ell:
        raise InputDataError(f"winner and loser must differ, got {w} twice")
    return w, ell
