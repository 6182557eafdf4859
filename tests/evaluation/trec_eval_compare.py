"""Helpers that evaluate one qrels/run pair with probrank and with a trec_eval 10.0 binary and
compare every value, per topic and ``all``: to the printed digits (the released binary) or bit
for bit (the binary built to print ``%.17g``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from probrank.data import Qrels, Run
from probrank.evaluation import Evaluator
from probrank.evaluation.trec_eval.reference import parse_output, run_reference

# Every measure probrank offers that trec_eval has, in trec_eval's spelling, split into the
# groups that one trec_eval call can take (a family takes one parameter list per call). rbp
# runs alone: trec_eval 10 starts its min/max scan of the gains from uninitialised variables,
# so after some other measures (ndcg) it prints a different value (see formulas.py).
MEASURE_GROUPS: tuple[tuple[str, ...], ...] = (
    (
        "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
        "infAP", "recip_rank", "iprec_at_recall", "P", "recall", "success", "ndcg",
        "ndcg_cut", "map_cut", "set_P", "set_recall", "set_F", "set_map", "unj",
    ),
    (
        "P.1,3,7,2000", "recall.2,7", "success.2,3", "ndcg_cut.1,3,23", "map_cut.3,7",
        "unj.1,3", "iprec_at_recall..05,.25,.33,.75,.95", "set_F.0.5",
    ),
    ("rbp",),
    ("rbp.p=0.5",),
)  # fmt: skip
OPTIONS: tuple[tuple[str, ...], ...] = ((), ("-c",), ("-l", "2"), ("-M", "100"))


def options_to_kwargs(options: Sequence[str]) -> dict[str, object]:
    """trec_eval's ``-c``, ``-l L`` and ``-M D`` as :class:`Evaluator` keyword arguments."""
    kwargs: dict[str, object] = {"all_queries": "-c" in options}
    if "-l" in options:
        kwargs["relevance_level"] = int(options[list(options).index("-l") + 1])
    if "-M" in options:
        kwargs["depth"] = int(options[list(options).index("-M") + 1])
    return kwargs


def printed(value: float, count: bool) -> str:
    """A value as trec_eval prints it (``%6.4f``, counts ``%ld``)."""
    return f"{int(value)}" if count else f"{value:6.4f}"


def compare_with_binary(
    binary: Path,
    qrels: Qrels | Path,
    run: Run | Path,
    qrels_path: Path,
    run_path: Path,
    measures: Sequence[str],
    options: Sequence[str] = (),
    *,
    precise: bool,
) -> int:
    """Assert that probrank and ``binary`` agree on every value; return how many were checked.

    Args:
        binary: The trec_eval binary.
        qrels: The qrels as probrank reads them (or their path).
        run: The run as probrank reads it (or its path).
        qrels_path: The qrels file given to the binary.
        run_path: The run file given to the binary.
        measures: trec_eval measure names (each one ``-m``).
        options: trec_eval options (``-c``, ``-l L``, ``-M D``).
        precise: ``binary`` prints ``%.17g``: compare the values exactly.
    """
    args = [*options, "-q"]
    for name in measures:
        args += ["-m", name]
    done = run_reference(binary, qrels_path, run_path, *args)
    assert done.returncode == 0, done.stderr
    expected = parse_output(done.stdout)
    evaluator = Evaluator(qrels, list(measures), **options_to_kwargs(options))  # type: ignore[arg-type]
    values = evaluator.per_query(run)
    totals = evaluator.aggregate(values)
    assert set(expected) - {"all"} == set(values)
    checked = 0
    for qid, row in expected.items():
        ours = totals if qid == "all" else values[qid]
        for name, text in row.items():
            if name == "runid":
                continue
            count = evaluator.is_count(name)
            if precise and not count:
                assert ours[name] == float(text), (qid, name, repr(ours[name]), text)
            else:
                assert printed(ours[name], count) == text, (qid, name, ours[name], text)
            checked += 1
    return checked + _check_judged(qrels, run, evaluator.names, expected, options)


def _check_judged(qrels, run, names, expected, options) -> int:  # type: ignore[no-untyped-def]
    """``Judged@k`` (not a trec_eval measure) against trec_eval's ``unj_k``: in the top k,
    judged + unjudged documents = min(k, num_ret), so Judged@k = (min(k, num_ret) - unj_k * k)
    / k, per topic."""
    cuts = [int(name[len("unj_") :]) for name in names if name.startswith("unj_")]
    if not cuts:
        return 0
    evaluator = Evaluator(
        qrels, [*(f"Judged@{k}" for k in cuts), "NumRet"], **options_to_kwargs(options)
    )  # type: ignore[arg-type]
    values = evaluator.per_query(run)
    checked = 0
    for qid, row in expected.items():
        if qid == "all":
            continue
        for k in cuts:
            unjudged = round(float(row[f"unj_{k}"]) * k)
            judged = min(k, int(values[qid]["NumRet"])) - unjudged
            assert values[qid][f"Judged@{k}"] == judged / k, (qid, k, values[qid], row)
            checked += 1
    return checked
