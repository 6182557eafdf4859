"""Golden checks that need no compiler: probrank against trec_eval 10's own expected outputs,
to the printed digit, per topic and ``all``.

``../shared/data/trec_eval`` holds ``out.test`` (default measures), ``out.test.a`` (``-m
all_trec``), ``out.test.aq`` (with ``-q``), ``out.test.aqc`` (``-c`` on ``results.trunc``),
``out.test.aql`` (``-l 2`` on ``qrels.rel_level``) and ``out.test.meas_params`` (measure
parameters); the source tarball in ``../shared/reference`` adds ``out.test.aqcM`` (``-c -M
100``) and the files with comment lines. Every line of these files whose measure probrank offers
is compared (the measure names are trec_eval's, which probrank reads as they are).
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from probrank.data import Qrels, Run
from probrank.evaluation import Evaluator
from probrank.evaluation.measures import parse_measures
from probrank.evaluation.trec_eval import FAMILIES
from probrank.exceptions import InputDataError

pytestmark = pytest.mark.integration


def read_expected(path: Path) -> dict[str, dict[str, str]]:
    """``{topic or 'all': {measure: printed value}}`` of a trec_eval output file."""
    table: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        name, qid, value = (part.strip() for part in line.split("\t"))
        table.setdefault(qid, {})[name] = value
    return table


def offered(names: set[str]) -> list[str]:
    """The measure names that probrank evaluates, in a fixed order."""
    keep = []
    for name in sorted(names - {"runid"}):
        try:
            parse_measures([name])
        except InputDataError:
            continue
        keep.append(name)
    return keep


def check(expected: dict[str, dict[str, str]], qrels: Path, run: Path, **options) -> set[str]:
    """Compare every offered value; return the families compared."""
    names = offered({n for row in expected.values() for n in row})
    evaluator = Evaluator(qrels, names, **options)
    values = evaluator.per_query(Run.read(run))
    totals = evaluator.aggregate(values)
    if len(expected) > 1:  # printed with -q
        assert set(values) == set(expected) - {"all"}
    checked = 0
    for qid, row in expected.items():
        ours = totals if qid == "all" else values[qid]
        for name in names:
            if name not in row:
                continue  # num_q and gm_map are printed in the summary only
            value = ours[name]
            text = f"{int(value)}" if evaluator.is_count(name) else f"{value:6.4f}"
            assert text == row[name], (qid, name, value, row[name])
            checked += 1
    assert checked >= len(names)
    return {spec.family for spec in evaluator.measures}


TREC_FAMILIES = {f.name for f in FAMILIES.values() if f.trec_name}


@pytest.mark.parametrize(
    ("expected_file", "qrels_file", "run_file", "options"),
    [
        ("out.test", "qrels.test", "results.test", {}),
        ("out.test.a", "qrels.test", "results.test", {}),
        ("out.test.aq", "qrels.test", "results.test", {}),
        ("out.test.aqc", "qrels.test", "results.trunc", {"all_queries": True}),
        ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}),
        ("out.test.meas_params", "qrels.test", "results.test", {}),
    ],
)
def test_shared_expected_outputs(shared_data, expected_file, qrels_file, run_file, options):
    folder = shared_data / "trec_eval"
    families = check(
        read_expected(folder / expected_file), folder / qrels_file, folder / run_file, **options
    )
    if expected_file in ("out.test.a", "out.test.aq", "out.test.aqc", "out.test.aql"):
        assert families == TREC_FAMILIES  # every measure probrank has in trec_eval's set


@pytest.fixture(scope="module")
def tarball_tests(tmp_path_factory) -> Path:
    from probrank.evaluation.trec_eval.reference import reference_tarball

    tarball = reference_tarball()
    if not tarball.is_file():
        message = f"trec_eval source tarball not found at {tarball} (set PROBRANK_REFERENCE)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    target = tmp_path_factory.mktemp("trec_eval_tests")
    with tarfile.open(tarball) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith("trec_eval-10.0/test/")]
        archive.extractall(target, members=members, filter="data")
    return target / "trec_eval-10.0" / "test"


@pytest.mark.parametrize(
    ("expected_file", "qrels_file", "run_file", "options"),
    [
        ("out.test.aqcM", "qrels.test", "results.trunc", {"all_queries": True, "depth": 100}),
        ("out.test", "qrels.test.with-comments", "results.test", {}),
        ("out.comment.test", "qrels.comment.test", "results.comment.test", {}),
    ],
)
def test_tarball_expected_outputs(tarball_tests, expected_file, qrels_file, run_file, options):
    check(
        read_expected(tarball_tests / expected_file),
        tarball_tests / qrels_file,
        tarball_tests / run_file,
        **options,
    )


def test_comment_lines_are_skipped_as_in_trec_eval(tarball_tests):
    with_comments = Qrels.read(tarball_tests / "qrels.test.with-comments").to_dict()
    plain = Qrels.read(tarball_tests / "qrels.test").to_dict()
    assert with_comments["301"].pop("CR#93E-1860") == 0  # '#' in a docno is not a comment
    assert plain["301"].pop("CR93E-1860") == 0
    assert with_comments == plain


def test_headline_figures(shared_data):
    """``out.test``'s headline numbers through the ir-measures spellings."""
    from probrank.evaluation import evaluate

    folder = shared_data / "trec_eval"
    got = evaluate(
        folder / "qrels.test",
        folder / "results.test",
        ["AP", "GMAP", "Rprec", "Bpref", "RR", "P@5", "P@10", "P@100", "IPrec@0.1"],
    )
    want = {
        "AP": "0.1785",
        "GMAP": "0.1051",
        "Rprec": "0.2174",
        "Bpref": "0.1981",
        "RR": "0.4064",
        "P@5": "0.2667",
        "P@10": "0.3000",
        "P@100": "0.2467",
        "IPrec@0.1": "0.3885",
    }
    assert {k: f"{v:.4f}" for k, v in got.items()} == want


def test_robust03_reference_figures(shared_data):
    """The figures in ``../shared/data/README.md``, measured there with trec_eval 10.0."""
    from probrank.evaluation import evaluate

    folder = shared_data / "fusion" / "robust03"
    qrels = Qrels.read(folder / "qrels.txt")
    got = evaluate(qrels, folder / "runs" / "input.pircRBa1.gz", ["map", "P_10", "ndcg_cut_10"])
    assert {k: f"{v:.4f}" for k, v in got.items()} == {
        "map": "0.3101",
        "P_10": "0.4540",
        "ndcg_cut_10": "0.4572",
    }
    other = evaluate(qrels, folder / "runs" / "input.aplrob03a.gz", ["AP", "P@10"])
    assert {k: f"{v:.4f}" for k, v in other.items()} == {"AP": "0.2998", "P@10": "0.4510"}
