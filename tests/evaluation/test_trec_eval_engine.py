"""trec_eval 10 semantics on small closed-form cases: double-precision order, -M, -c, Judged@k,
IPrec's lround rule, topics without relevant documents, and the validation of options."""

from __future__ import annotations

import math

import pytest

from probrank.data import Qrels, Run
from probrank.evaluation import Evaluator, evaluate, evaluate_per_query
from probrank.evaluation.measures import per_query_values
from probrank.exceptions import InputDataError


def test_scores_that_tie_in_float32_do_not_tie():
    # as doubles, "a" (not relevant) ranks first; as float32 they tie and docno "z" would win
    qrels = {"q": {"z": 1}, "r": {"z": 1}}
    run = {
        "q": {"a": 3.2800000000000002, "z": 3.28},
        "r": {"a": 16777217.0, "z": 16777216.5},  # above 2**24, less than 1 apart
    }
    values = evaluate(qrels, run, ["RR", "P@1"])
    assert values == {"RR": 0.5, "P@1": 0.0}
    tied = {"q": {"a": 3.28, "z": 3.28}, "r": {"a": 7.0, "z": 7.0}}  # true ties: docno desc
    assert evaluate(qrels, tied, ["RR"]) == {"RR": 1.0}


def test_depth_cuts_the_double_precision_order():
    qrels = {"q": {"b": 1}}
    run = {"q": {"a": 0.1 + 0.2, "b": 0.30000000000000004 + 1e-17, "c": 0.3}}
    # 0.1 + 0.2 == 0.30000000000000004: "b" ties with "a" and wins by docno; "c" is below
    assert evaluate(qrels, run, ["NumRet", "NumRelRet"], depth=1) == {
        "NumRet": 1.0,
        "NumRelRet": 1.0,
    }
    run["q"]["a"] = math.nextafter(run["q"]["a"], math.inf)  # one ulp above: "a" first
    assert evaluate(qrels, run, ["NumRelRet"], depth=1) == {"NumRelRet": 0.0}


def test_judged_divides_by_k_even_when_fewer_are_retrieved():
    qrels = {"q": {"a": 1, "b": 0, "c": -1}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0, "x": 0.5}}
    values = evaluate(qrels, run, ["Judged@2", "Judged@10", "Unjudged@10", "P@10"])
    assert values == {"Judged@2": 1.0, "Judged@10": 0.2, "Unjudged@10": 0.2, "P@10": 0.1}


def test_complete_counts_missing_topics_as_trec_eval_10():
    qrels = {"q": {"a": 1}, "missing": {"a": 2, "b": 1, "c": 0}}
    run = {"q": {"a": 1.0, "x": 0.5}}
    names = ["NumQ", "NumRet", "NumRel", "AP", "Judged@5", "Unjudged@5", "P@5"]
    plain = evaluate(qrels, run, names)
    complete, _ = per_query_values(qrels, run, names, all_queries=True)
    assert complete["missing"] == {
        "NumQ": 1.0,
        "NumRet": 0.0,
        "NumRel": 2.0,
        "AP": 0.0,
        "Judged@5": 0.0,
        "Unjudged@5": 0.0,
        "P@5": 0.0,
    }
    totals = evaluate(qrels, run, names, all_queries=True)
    assert plain["NumQ"] == 1.0 and totals["NumQ"] == 2.0
    assert totals["AP"] == plain["AP"] / 2 and totals["NumRel"] == 3.0
    # with -c, trec_eval's num_rel total counts grades > 0 whatever -l is
    assert evaluate(qrels, run, ["NumRel"], all_queries=True, relevance_level=2) == {"NumRel": 3.0}
    assert evaluate(qrels, run, ["NumRel"], relevance_level=2) == {"NumRel": 0.0}


def test_the_stand_in_document_of_a_missing_topic_is_trec_eval_10s():
    qrels = {"q": {"a": 1}, "missing": {"ceci_nest_pas_un_docno": 1}}
    values, _ = per_query_values(qrels, {"q": {"a": 1.0}}, ["NumRelRet", "RR"], all_queries=True)
    assert values["missing"] == {"NumRelRet": 1.0, "RR": 1.0}


def test_topics_without_relevant_documents_are_safe_and_isolated():
    base = {"q": {"a": 2, "b": 0}}
    run = {"q": {"a": 1.0, "b": 2.0}, "neg": {"a": 1.0, "c": 0.5}, "zero": {"a": 1.0}}
    names = ["AP", "nDCG", "nDCG@5", "RBP", "IPrec@0.5", "Bpref", "infAP", "Rprec", "NumRel",
             "Unjudged@2", "Judged@2", "GMAP", "SetF"]  # fmt: skip
    alone, _ = per_query_values(base, run, names)
    qrels = {**base, "neg": {"a": -2, "b": -5}, "zero": {"a": 0, "b": 0}}
    together, _ = per_query_values(qrels, run, names)
    assert together["q"] == alone["q"]
    for qid, unjudged, judged in (("neg", 1.0, 0.0), ("zero", 0.0, 0.5)):
        row = together[qid]
        assert row["Unjudged@2"] == unjudged and row["Judged@2"] == judged
        assert all(v == 0.0 for k, v in row.items() if k not in ("Unjudged@2", "Judged@2"))


def test_iprec_rounds_the_recall_point_with_lround():
    # 7 relevant, 2 retrieved at ranks 1 and 5: recall 0.2 -> lround(1.4) = 1 relevant
    # document (trec_eval 9 / pytrec_eval: int(1.4 + 0.9) = 2), so the best precision from
    # rank 1 on, 1.0 (trec_eval 9: 0.4); recall 0.3 -> lround(2.1) = 2 -> 0.4
    qrels = {"q": {f"r{i}": 1 for i in range(7)}}
    run = {"q": {"r0": 5.0, "x1": 4.0, "x2": 3.0, "x3": 2.0, "r1": 1.0}}
    values = evaluate(qrels, run, ["IPrec@0.2", "IPrec@0.3", "IPrec@0.5", "IPrec@0.0"])
    assert values == {"IPrec@0.2": 1.0, "IPrec@0.3": 0.4, "IPrec@0.5": 0.0, "IPrec@0.0": 1.0}


def test_gmap_is_the_geometric_mean_with_trec_eval_floor():
    qrels = {"a": {"d": 1}, "b": {"d": 1, "e": 1}, "c": {"d": 1}}
    run = {"a": {"d": 1.0}, "b": {"x": 2.0, "d": 1.0}, "c": {"x": 1.0}}
    values, _ = per_query_values(qrels, run, ["GMAP", "AP"])
    assert [row["GMAP"] for row in values.values()] == [1.0, 0.25, 0.0]  # per topic: AP
    gmap = evaluate(qrels, run, ["GMAP"])["GMAP"]
    want = math.exp((math.log(1.0) + math.log(0.25) + math.log(1e-5)) / 3)
    assert gmap == pytest.approx(want, rel=1e-15, abs=0.0)


def test_per_query_frame_and_public_signatures():
    frame = evaluate_per_query({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["AP", "P@1"])
    assert frame.index.name == "query_id" and list(frame.columns) == ["AP", "P@1"]
    evaluator = Evaluator(Qrels({"q": {"a": 1}}), ["map", "P.1,2", "num_ret"])
    assert evaluator.names == ["map", "P_1", "P_2", "num_ret"]
    assert [evaluator.is_count(n) for n in evaluator.names] == [False, False, False, True]
    assert evaluator(Run({"q": {"a": 1.0}})) == {"map": 1.0, "P_1": 1.0, "P_2": 0.5, "num_ret": 1.0}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"measures": ["P@0"]}, "positive integer"),
        ({"measures": []}, "no measure"),
        ({"depth": 0}, "depth"),
        ({"depth": -3}, "depth"),
        ({"depth": 2.5}, "depth"),
        ({"relevance_level": -1}, "relevance level"),
        ({"relevance_level": 1.5}, "relevance level"),
    ],
)
def test_bad_options_fail_before_the_qrels_are_read(tmp_path, kwargs, message):
    options = {"measures": ["AP"], **kwargs}
    with pytest.raises(InputDataError, match=message):
        Evaluator(tmp_path / "does-not-exist", **options)


def test_disjoint_run_and_qrels():
    with pytest.raises(InputDataError, match="share no query"):
        evaluate({"q": {"a": 1}}, {"other": {"a": 1.0}}, ["AP"])
    assert evaluate({"q": {"a": 1}}, {"other": {"a": 1.0}}, ["AP"], all_queries=True) == {"AP": 0.0}
