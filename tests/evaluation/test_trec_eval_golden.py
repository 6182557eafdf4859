"""Golden checks: probrank's measures against trec_eval's own expected outputs, to the 4
decimals trec_eval prints (``../shared/data/trec_eval``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from probrank.evaluation import evaluate_per_query
from probrank.evaluation.measures import per_query_values

pytestmark = pytest.mark.integration

# trec_eval name -> ir-measures name, for every measure probrank exposes that trec_eval prints.
# Not here: iprec_at_recall (pytrec_eval embeds trec_eval 9's rule, and trec_eval 10 counts a
# recall cut-off as reached one relevant document earlier: 301 at 0.10 gives 0.2096 vs 0.2098).
TREC_TO_IR = {
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    "map": "AP",
    "Rprec": "Rprec",
    "bpref": "Bpref",
    "recip_rank": "RR",
    "infAP": "infAP",
    "ndcg": "nDCG",
    "rbp": "RBP(p=0.9)",
    "set_P": "SetP",
    "set_recall": "SetR",
    "set_F": "SetF",
    **{f"P_{k}": f"P@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)},
    **{f"recall_{k}": f"R@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)},
    **{f"ndcg_cut_{k}": f"nDCG@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)},
    **{f"map_cut_{k}": f"AP@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)},
    **{f"success_{k}": f"Success@{k}" for k in (1, 5, 10)},
    **{f"unj_{k}": f"Judged@{k}" for k in (5, 10, 20)},
}
COUNTS = {"num_ret", "num_rel", "num_rel_ret"}


def read_expected(path: Path, unjudged: bool) -> dict[str, dict[str, str]]:
    """``{query or 'all': {trec_eval measure: printed value}}`` from a trec_eval output file.

    ``unj_k`` (trec_eval's unjudged fraction) is compared with 1 - Judged@k only where asked:
    with -c a query without results scores 0 on both, so the two cannot agree there.
    """
    table: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        name, qid, value = (part.strip() for part in line.split("\t"))
        if name in TREC_TO_IR and (unjudged or not name.startswith("unj_")):
            table.setdefault(qid, {})[name] = value
    return table


def printed(trec_name: str, value: float) -> str:
    if trec_name.startswith("unj_"):  # trec_eval prints unjudged; ir-measures gives judged
        value = 1.0 - value
    return f"{round(value)}" if trec_name in COUNTS else f"{value:.4f}"


def check(expected: dict[str, dict[str, str]], frame, totals: dict[str, float]) -> None:
    checked = 0
    for qid, row in expected.items():
        for trec_name, want in row.items():
            ir_name = TREC_TO_IR[trec_name]
            got = totals[ir_name] if qid == "all" else frame.loc[qid, ir_name]
            assert printed(trec_name, got) == want, (qid, trec_name, got, want)
            checked += 1
    assert checked > 100


def aggregate(frame, parsed) -> dict[str, float]:
    out = {}
    for name, measure in parsed:
        agg = measure.aggregator()
        for value in frame[name]:
            agg.add(value)
        out[name] = agg.result()
    return out


@pytest.mark.parametrize(
    ("expected_file", "qrels_file", "run_file", "options", "unjudged"),
    [
        ("out.test.aq", "qrels.test", "results.test", {}, True),
        ("out.test.aqc", "qrels.test", "results.trunc", {"all_queries": True}, False),
        ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}, True),
    ],
)
def test_per_query_and_all_match_trec_eval(
    shared_data, expected_file, qrels_file, run_file, options, unjudged
):
    folder = shared_data / "trec_eval"
    expected = read_expected(folder / expected_file, unjudged)
    measures = list(dict.fromkeys(TREC_TO_IR.values()))
    values, parsed = per_query_values(folder / qrels_file, folder / run_file, measures, **options)
    frame = evaluate_per_query(folder / qrels_file, folder / run_file, measures, **options)
    assert set(frame.index) == {q for q in expected if q != "all"}
    check(expected, frame, aggregate(frame, parsed))
    assert values.keys() == set(frame.index)


def test_default_measures_reproduce_out_test(shared_data):
    """The headline figures of ``out.test`` (trec_eval's default measures)."""
    from probrank.evaluation import evaluate

    folder = shared_data / "trec_eval"
    got = evaluate(
        folder / "qrels.test",
        folder / "results.test",
        ["AP", "Rprec", "Bpref", "RR", "P@5", "P@10", "P@100"],
    )
    want = {
        "AP": "0.1785",
        "Rprec": "0.2174",
        "Bpref": "0.1981",
        "RR": "0.4064",
        "P@5": "0.2667",
        "P@10": "0.3000",
        "P@100": "0.2467",
    }
    assert {k: f"{v:.4f}" for k, v in got.items()} == want


def test_depth_option_equals_truncated_run(shared_data):
    from probrank.data import Qrels, Run
    from probrank.evaluation import evaluate

    folder = shared_data / "trec_eval"
    qrels, run = Qrels.read(folder / "qrels.test"), Run.read(folder / "results.test")
    cut = evaluate(qrels, run, ["AP", "NumRet", "P@100"], depth=50)
    assert cut["NumRet"] == 150
    assert cut == evaluate(qrels, run.truncate(50), ["AP", "NumRet", "P@100"])
    assert cut["AP"] < evaluate(qrels, run, ["AP"])["AP"]


def test_robust03_reference_figures(shared_data):
    from probrank.evaluation import evaluate

    folder = shared_data / "fusion" / "robust03"
    qrels = folder / "qrels.txt"
    got = evaluate(qrels, folder / "runs" / "input.pircRBa1.gz", ["AP", "P@10", "nDCG@10"])
    assert {k: round(v, 4) for k, v in got.items()} == {
        "AP": 0.3101,
        "P@10": 0.4540,
        "nDCG@10": 0.4572,
    }
    other = evaluate(qrels, folder / "runs" / "input.aplrob03a.gz", ["AP", "P@10"])
    assert {k: round(v, 4) for k, v in other.items()} == {"AP": 0.2998, "P@10": 0.4510}


def test_queries_missing_from_the_run_are_left_out_without_c(shared_data):
    from probrank.evaluation import evaluate

    folder = shared_data / "trec_eval"
    plain = evaluate(folder / "qrels.test", folder / "results.trunc", ["AP", "NumQ"])
    complete = evaluate(
        folder / "qrels.test", folder / "results.trunc", ["AP", "NumQ"], all_queries=True
    )
    assert plain["NumQ"] == 2 and complete["NumQ"] == 3
    assert complete["AP"] == pytest.approx(plain["AP"] * 2 / 3, rel=1e-12)
