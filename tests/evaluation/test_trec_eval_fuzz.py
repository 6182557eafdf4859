"""Hypothesis fuzz test: generated qrels and runs evaluated by probrank and by the trec_eval
10.0 binary (printing ``%.17g``), every measure compared bit for bit, per topic and ``all``.

The runs are made to be hard: exact ties, near-ties one ulp apart (``nextafter``), duplicate
scores, scores above 2**24 that differ by less than 1, huge (1e300) and tiny (5e-324)
magnitudes, negative and zero scores, non-ASCII and digit-only docnos and query ids (ties are
broken by ``strcmp``), negative grades, topics that are all non-relevant, topics only in the
qrels or only in the run, with and without ``-c``, ``-l`` and ``-M``.

Where trec_eval 10.0 cannot be the reference, the harness applies what probrank documents:

* without ``-c``, trec_eval 10 quits when the qrels hold a topic the run lacks; probrank
  evaluates the topics both have, which is trec_eval on the qrels restricted to those topics;
* trec_eval 10 crashes (SIGSEGV) on a topic whose grades are all -2 or below; probrank
  evaluates it as a topic without relevant documents. Such topics are left out of the
  binary's qrels, checked against their documented values, and shown not to change any
  other topic's values.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probrank.data import Qrels, Run
from probrank.evaluation import Evaluator
from probrank.exceptions import InputDataError
from tests.evaluation.trec_eval_compare import MEASURE_GROUPS, compare_with_binary

QIDS = ["1", "2", "10", "q", "\u00e9"]
DOCS = ["a", "b", "c", "ab", "B", "0", "10", "9", "d\u00e9", "\u4e2d", "z-1", "z_1"]
OPTION_SETS = [
    (),
    ("-c",),
    ("-l", "2"),
    ("-l", "0"),
    ("-M", "3"),
    ("-c", "-l", "2", "-M", "2"),
]
BASES = [0.0, 1.0, -1.0, 3.28, 2.0**24, 1e300, -1e300, 5e-324, 1e-300, 0.1 + 0.2, 123456.789]


@st.composite
def scores(draw) -> float:
    """A score near a few shared values, so that ties and near-ties are common."""
    kind = draw(st.sampled_from(["base", "ulp", "offset", "free", "int"]))
    base = draw(st.sampled_from(BASES))
    if kind == "base":
        return base
    if kind == "ulp":
        value = base
        for _ in range(draw(st.integers(1, 2))):
            value = math.nextafter(value, draw(st.sampled_from([math.inf, -math.inf])))
        return value
    if kind == "offset":  # above 2**24, distinct as doubles, equal as float32
        return 2.0**24 + draw(st.sampled_from([0.25, 0.5, 0.75, 1.0]))
    if kind == "int":
        return float(draw(st.integers(-3, 3)))
    return draw(st.floats(-1e6, 1e6, allow_nan=False, width=64))


@st.composite
def cases(draw):
    topics = draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=4, unique=True))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid in topics:
        where = draw(st.sampled_from(["both", "both", "both", "qrels", "run"]))
        if where != "run":
            low = draw(st.sampled_from([-3, -3, -1, 0]))  # -1: some topics all non-relevant
            judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(low, 3), min_size=1))
            qrels[qid] = judged
        if where != "qrels":
            run[qid] = draw(
                st.dictionaries(st.sampled_from(DOCS), scores(), min_size=1, max_size=12)
            )
    if not run:
        run[topics[0]] = {"a": 1.0}
    if not qrels:
        qrels[topics[0]] = {"a": 1}
    return qrels, run, draw(st.sampled_from(OPTION_SETS))


def _write(folder: Path, qrels: dict, run: dict) -> tuple[Path, Path]:
    qrels_path, run_path = folder / "qrels", folder / "run"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()),
        encoding="utf-8",
    )
    run_path.write_text(
        "".join(
            f"{q} Q0 {d} {i} {s!r} fuzz\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(docs.items())
        ),
        encoding="utf-8",
    )
    return qrels_path, run_path


ZERO_WITHOUT_RELEVANT = {
    "map", "gm_map", "Rprec", "bpref", "infAP", "recip_rank", "ndcg", "num_rel",
    "num_rel_ret", "set_P", "set_recall", "set_F", "set_map", "rbp", "P_5", "recall_5",
    "success_1", "ndcg_cut_5", "map_cut_5", "iprec_at_recall_0.00",
}  # fmt: skip


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases())
def test_fuzz_against_trec_eval(trec_eval_precise, tmp_path_factory, case):
    qrels, run, options = case
    folder = tmp_path_factory.mktemp("fuzz")
    # trec_eval 10 segfaults on a topic whose grades are all <= -2: not given to it
    crashing = {q for q, docs in qrels.items() if max(docs.values()) <= -2}
    given_qrels = {q: d for q, d in qrels.items() if q not in crashing}
    if "-c" not in options:  # trec_eval 10 quits on a qrels topic the run lacks
        given_qrels = {q: d for q, d in given_qrels.items() if q in run}
    full = Qrels(qrels)
    if not given_qrels:
        if not any(q in run for q in qrels) and "-c" not in options:
            with pytest.raises(InputDataError, match="share no query"):
                Evaluator(full, ["map"]).per_query(Run(run))
        return
    qrels_path, run_path = _write(folder, given_qrels, run)
    ours_qrels, ours_run = Qrels(given_qrels), Run(run)
    for group in MEASURE_GROUPS:
        compare_with_binary(
            trec_eval_precise, ours_qrels, ours_run, qrels_path, run_path, group, options,
            precise=True,
        )  # fmt: skip
    if crashing:
        kwargs = {"depth": 3} if "-M" in options else {}
        measures = list(MEASURE_GROUPS[0])
        alone = Evaluator(ours_qrels, measures, **kwargs).per_query(ours_run)
        together = Evaluator(full, measures, **kwargs).per_query(ours_run)
        for qid, row in together.items():
            if qid in crashing:
                assert all(row[name] == 0.0 for name in ZERO_WITHOUT_RELEVANT if name in row)
                assert row["num_ret"] == min(len(run[qid]), kwargs.get("depth", 10**9))
            else:
                assert row == alone[qid]
