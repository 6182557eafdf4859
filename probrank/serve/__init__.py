"""The judging web application: annotators judge "which answer is better?" pairs chosen live by
the interactive ranker (``probrank serve``; the optional extra ``probrank[serve]``).

* :mod:`~probrank.serve.store`: the SQLite (WAL) judgement database, one transaction per
  judgement, idempotent client judgement ids, undo events; :mod:`~probrank.serve.schema`:
  opening, checking (another application's file is refused untouched) and migrating it;
* :mod:`~probrank.serve.identity`, :mod:`~probrank.serve.annotators`: annotators' names
  (NFC, look-alikes refused), their links and the admin link (``probrank annotators``);
* :mod:`~probrank.serve.project`: the questions, the :class:`~probrank.models.InteractiveRanker`
  and the session settings; :mod:`~probrank.serve.sources`: where they come from (a named data
  set, a JSONL / CSV file, TREC topics + run + documents; a saved or warm-started ranker);
* :mod:`~probrank.serve.startup`: the ranker and features prepared in the background;
* :mod:`~probrank.serve.judging`: every annotator's sessions (rebuilt from the database on
  first use, at most ``max_sessions`` kept), the judgement round, undo;
  :mod:`~probrank.serve.ranking`: rankings with credible intervals;
* :mod:`~probrank.serve.agreement`: Krippendorff's alpha and Cohen's kappa on repeated pairs;
* :mod:`~probrank.serve.exports`: JSON lines and trec_eval's preference format;
* :mod:`~probrank.serve.app`: the Starlette routes and pages (:func:`create_app`);
  :mod:`~probrank.serve.http`: the header-read timeout, bounded forms, Markdown instructions;
* :mod:`~probrank.serve.server`: checks, binding, the printed links, uvicorn (:func:`serve`);
* ``probrank serve --pool``, graded judging of single documents chosen by a pooling strategy:
  :mod:`~probrank.serve.pool_source` (runs, topics, texts), :mod:`~probrank.serve.pool_store`
  (graded judgements, qrels export), :mod:`~probrank.serve.pool_judging` (the next document,
  undo, progress), :mod:`~probrank.serve.pool_app` (the pages),
  :mod:`~probrank.serve.pool_server` (``serve_pool``).

Only :mod:`~probrank.serve.app` and :func:`serve` need the extra's packages (Starlette,
uvicorn, Jinja2); every name here is imported on use (torch loads in the background, after the
server has bound its address and printed its links).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DEFAULT_DB",
    "DEFAULT_PORT",
    "AnnotatorRegistry",
    "Choice",
    "Judgement",
    "JudgementStore",
    "JudgingService",
    "Project",
    "Ranking",
    "RoundState",
    "ServeSettings",
    "Submission",
    "create_app",
    "serve",
]

_WHERE = {
    "DEFAULT_DB": "server",
    "DEFAULT_PORT": "server",
    "ServeSettings": "server",
    "serve": "server",
    "AnnotatorRegistry": "annotators",
    "Choice": "store",
    "Judgement": "store",
    "JudgementStore": "store",
    "JudgingService": "judging",
    "Ranking": "judging",
    "RoundState": "judging",
    "Submission": "judging",
    "Project": "project",
    "create_app": "app",
}


def __getattr__(name: str) -> Any:
    # every name loads on use: the server binds and prints its address before torch loads
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'probrank.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(f"probrank.serve.{module}"), name)
