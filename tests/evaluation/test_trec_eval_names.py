"""Measure names: both spellings parse to the same measure, every bad name is a one-line
InputDataError before anything is evaluated, and ``probrank eval --help`` lists them all."""

from __future__ import annotations

import pytest

from probrank.cli import main
from probrank.evaluation import evaluate
from probrank.evaluation.trec_eval import FAMILIES, parse_measure_names
from probrank.exceptions import InputDataError

QRELS = {"q": {"a": 2, "b": 1, "c": 0, "d": -1}, "r": {"a": 1}}
RUN = {"q": {"a": 0.5, "b": 0.9, "c": 0.7, "e": 0.1}, "r": {"b": 1.0, "a": 0.5}}


@pytest.mark.parametrize(
    ("ir_name", "trec_name"),
    [
        ("AP", "map"),
        ("AP@10", "map_cut_10"),
        ("GMAP", "gm_map"),
        ("P@10", "P_10"),
        ("R@5", "recall_5"),
        ("nDCG", "ndcg"),
        ("nDCG@10", "ndcg_cut_10"),
        ("RR", "recip_rank"),
        ("Bpref", "bpref"),
        ("infAP", "infAP"),
        ("Rprec", "Rprec"),
        ("NumRet", "num_ret"),
        ("NumRel", "num_rel"),
        ("NumRelRet", "num_rel_ret"),
        ("NumRet(rel=1)", "num_rel_ret"),
        ("NumQ", "num_q"),
        ("IPrec@0.1", "iprec_at_recall_0.10"),
        ("Success@1", "success_1"),
        ("SetP", "set_P"),
        ("SetR", "set_recall"),
        ("SetF", "set_F"),
        ("SetF(beta=0.5)", "set_F_0.5"),
        ("SetF(beta=0.5)", "set_F.0.5"),
        ("SetAP", "set_map"),
        ("RBP", "rbp"),
        ("RBP(p=0.8)", "rbp_p=0.8"),
        ("RBP(p=0.8)", "rbp.p=0.8"),
        ("Unjudged@5", "unj_5"),
    ],
)
def test_both_spellings_are_the_same_measure(ir_name, trec_name):
    (ir,) = parse_measure_names(ir_name)
    (trec,) = parse_measure_names(trec_name)
    assert (ir.family, ir.cutoff, ir.recall, ir.p, ir.beta) == (
        trec.family,
        trec.cutoff,
        trec.recall,
        trec.p,
        trec.beta,
    )
    values = evaluate(QRELS, RUN, [ir_name, trec_name], relevance_level=1)
    assert values[ir_name] == values[ir.name] == values[trec.name]


def test_trec_eval_parameter_syntax_expands_to_printed_names():
    names = [s.name for s in parse_measure_names(["P.10,5", "iprec_at_recall..25,.1", "ndcg_cut"])]
    assert names == [
        "P_5",
        "P_10",
        "iprec_at_recall_0.10",
        "iprec_at_recall_0.25",
        *(f"ndcg_cut_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)),
    ]
    assert [s.name for s in parse_measure_names("success")] == [
        "success_1",
        "success_5",
        "success_10",
    ]
    assert [s.name for s in parse_measure_names("unj")] == ["unj_5", "unj_10", "unj_20"]
    official = [s.name for s in parse_measure_names("official")]
    assert official[:6] == ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map"]
    assert "iprec_at_recall_0.50" in official and "P_1000" in official and len(official) == 29


def test_names_are_kept_in_order_and_once():
    names = [s.name for s in parse_measure_names(["P@5", "AP", "P@5", "map", "AP"])]
    assert names == ["P@5", "AP", "map"]


def test_rel_sets_the_level_of_one_measure():
    values = evaluate(QRELS, RUN, ["P(rel=2)@2", "P@2", "AP"], relevance_level=1)
    level_two = evaluate(QRELS, RUN, ["P@2"], relevance_level=2)
    assert values["P(rel=2)@2"] == level_two["P@2"] != values["P@2"]
    # nDCG and RBP use graded gains and ignore -l, as trec_eval
    graded = evaluate(QRELS, RUN, ["nDCG", "RBP"], relevance_level=1)
    assert graded == evaluate(QRELS, RUN, ["nDCG", "RBP"], relevance_level=2)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("P@0", "positive integer"),
        ("nDCG@0", "positive integer"),
        ("P@-1", "positive integer"),
        ("P@1.5", "positive integer"),
        ("P@", "positive integer"),
        ("P_0", "positive integer"),
        ("P.5,0", "positive integer"),
        ("P.5,5", "given twice"),
        ("ndcg_cut.23.4", "positive integer"),
        ("map_cut_x1", "unknown measure"),
        ("P", None),  # bare trec_eval family: fine
        ("P(rel=2)", "needs a cut-off"),
        ("Judged", "needs a cut-off"),
        ("IPrec@1.5", "[0, 1]"),
        ("IPrec@nan", "[0, 1]"),
        ("RBP(p=2)", "(0, 1)"),
        ("RBP(p=0)", "(0, 1)"),
        ("RBP(p=1)", "(0, 1)"),
        ("RBP(p=inf)", "finite number"),
        ("rbp.p=1.5", "(0, 1)"),
        ("rbp.q=0.5", "p=VALUE"),
        ("SetF(beta=-1)", ">= 0"),
        ("SetF(beta=nan)", "finite number"),
        ("AP(rel=-1)", "non-negative integer"),
        ("AP(rel=1.5)", "non-negative integer"),
        ("AP(rel=1,rel=2)", "given twice"),
        ("AP(p=0.5)", "takes no parameter 'p'"),
        ("AP()", "empty parameter list"),
        ("nDCG(rel=2)", "takes no parameter 'rel'"),
        ("NumQ@5", "takes no cut-off"),
        ("map.5", "takes no parameters"),
        ("mapp", "did you mean 'map'"),
        ("nDGC@10", "did you mean 'nDCG'"),
        ("Rprec_mult_0.20", "unknown measure"),
        ("", "empty measure name"),
        ("  ", "empty measure name"),
    ],
)
def test_bad_names_are_one_line_errors(name, message):
    if message is None:
        assert parse_measure_names(name)
        return
    with pytest.raises(InputDataError) as info:
        parse_measure_names([name])
    assert message in str(info.value) and "\n" not in str(info.value)


def test_no_measure_and_clashing_names():
    with pytest.raises(InputDataError, match="no measure given"):
        parse_measure_names([])
    with pytest.raises(InputDataError, match="like a different measure"):
        parse_measure_names(["iprec_at_recall..121", "iprec_at_recall..124"])  # both "_0.12"


def test_every_measure_is_listed_in_eval_help(capsys):
    assert main(["eval", "--help"]) == 0
    text = capsys.readouterr().out
    for info in FAMILIES.values():
        assert f"  {info.name}" in text
        if info.trec_name:
            assert info.trec_name in text
    for spelling in ("map_cut_k", "ndcg_cut_k", "P.5,10", "official", "rel=L"):
        assert spelling in text
