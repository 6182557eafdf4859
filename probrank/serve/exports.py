"""Exports of the stored judgements.

* :func:`jsonl_lines`: one JSON object per stored event in commit order
  (:meth:`~probrank.serve.store.Judgement.to_json`: id, annotator, question, round, the left and
  right candidate ids, the choice, the winner and loser ids, the commit time, and for undo:
  ``choice`` ``"undo"`` with ``retracts`` naming the judgement taken back, whose own line has
  ``retracted: true`` and ``retracted_by``). The CSV export (``/export.csv``) has the same
  columns.
* :func:`prefs_lines`: trec_eval's preference format (``trec_eval -R prefs``), one line per
  document: ``qid ujg ujsubg docno rel_level``. The judgement group (``ujg``) is the annotator,
  the sub-group (``ujsubg``) the judgement id, so each judgement is one sub-group of two
  documents: the preferred one at level 2 and the other at 1; "both bad / can't tell" puts
  both at 0 (no preference, neither relevant). The server gives it the answers that stand
  only (no undo events, no retracted judgements).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from probrank.serve.store import Judgement

__all__ = ["jsonl_lines", "prefs_lines"]


def jsonl_lines(judgements: Iterable[Judgement]) -> Iterator[str]:
    """One JSON line (with its newline) per judgement."""
    for judgement in judgements:
        yield json.dumps(judgement.to_json(), ensure_ascii=False) + "\n"


def prefs_lines(judgements: Iterable[Judgement]) -> Iterator[str]:
    """Two trec_eval ``prefs`` lines (with newlines) per judgement."""
    for j in judgements:
        if j.winner is None:
            levels = {j.left_id: 0, j.right_id: 0}
        elif j.winner == j.left:
            levels = {j.left_id: 2, j.right_id: 1}
        else:
            levels = {j.right_id: 2, j.left_id: 1}
        for docno, level in levels.items():
            yield f"{j.qid} {j.annotator} {j.id} {docno} {level}\n"
