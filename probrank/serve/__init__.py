"""The judging web application: annotators judge "which answer is better?" pairs chosen live by
the interactive ranker (``probrank serve``; the optional extra ``probrank[serve]``).

* :mod:`~probrank.serve.store`: the SQLite (WAL) judgement database, one transaction per
  judgement, idempotent client judgement ids, the project's token;
* :mod:`~probrank.serve.project`: the questions, the :class:`~probrank.models.InteractiveRanker`
  and the session settings; :mod:`~probrank.serve.sources`: where they come from (a named data
  set, a JSONL / CSV file, TREC topics + run + documents; a saved or warm-started ranker);
* :mod:`~probrank.serve.judging`: every annotator's sessions, the judgement round, the replay
  after a restart, rankings with credible intervals;
* :mod:`~probrank.serve.agreement`: Krippendorff's alpha and Cohen's kappa on repeated pairs;
* :mod:`~probrank.serve.exports`: JSON lines and trec_eval's preference format;
* :mod:`~probrank.serve.app`: the Starlette routes and pages (:func:`create_app`);
* :mod:`~probrank.serve.server`: binding, the printed address, uvicorn (:func:`serve`).

Only :mod:`~probrank.serve.app` and :func:`serve` need the extra's packages (Starlette,
uvicorn, Jinja2); they are imported on use.
"""

from __future__ import annotations

from typing import Any

from probrank.serve.judging import JudgingService, Ranking, RoundState, Submission
from probrank.serve.project import Project
from probrank.serve.server import DEFAULT_DB, DEFAULT_PORT, ServeOptions, serve
from probrank.serve.store import Choice, Judgement, JudgementStore

__all__ = [
    "DEFAULT_DB",
    "DEFAULT_PORT",
    "Choice",
    "Judgement",
    "JudgementStore",
    "JudgingService",
    "Project",
    "Ranking",
    "RoundState",
    "ServeOptions",
    "Submission",
    "create_app",
    "serve",
]


def __getattr__(name: str) -> Any:
    if name == "create_app":  # Starlette and Jinja2 load only when the app is made
        from probrank.serve.app import create_app

        return create_app
    raise AttributeError(f"module 'probrank.serve' has no attribute {name!r}")
