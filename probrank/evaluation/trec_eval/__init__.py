"""trec_eval 10.0 in double precision: measure names, rankings, formulas and the evaluation loop.

Written here rather than taken from a library because none computes trec_eval 10.0: ir-measures
hands these measures to pytrec_eval, which embeds trec_eval 9 and stores scores as C ``float``
(so scores that differ beyond float32 tie, and ``iprec_at_recall`` uses 9's truncation rule),
and it can crash the process on a topic whose grades are all negative; ranx and trectools break
ties differently. Each formula follows the C source of trec_eval 10.0 line by line and is tested
against the trec_eval binary built from ``../shared/reference``.
"""

from probrank.evaluation.trec_eval.engine import TopicValues, TrecEvalEngine
from probrank.evaluation.trec_eval.names import (
    FAMILIES,
    Aggregate,
    MeasureSpec,
    measure_help,
    parse_measure_names,
)

__all__ = [
    "FAMILIES",
    "Aggregate",
    "MeasureSpec",
    "TopicValues",
    "TrecEvalEngine",
    "measure_help",
    "parse_measure_names",
]
