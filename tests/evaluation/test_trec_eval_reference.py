"""Every measure probrank offers against the trec_eval 10.0 binary built from source, per topic
and ``all``, with and without ``-c``, ``-l 2`` and ``-M 100``: to the printed digit with the
released binary and to the last bit with the binary that prints ``%.17g``. On trec_eval's own
test files, four Robust03 runs (chosen for their ties, including ties that only float32 makes)
and the three CLEF 2018 TAR runs against both qrels."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from probrank.data import Qrels, Run
from tests.evaluation.trec_eval_compare import MEASURE_GROUPS, OPTIONS, compare_with_binary

pytestmark = pytest.mark.integration

ROBUST_RUNS = ("input.pircRBa1", "input.oce03noXbmD", "input.MU03rob01", "input.InexpC2")
CLEF_RUNS = (
    "ECNU_TASK1_RUN1_BM25.task1",
    "ECNU_TASK1_RUN2_LR.task1",
    "ECNU_TASK1_RUN3_COMBINE.task1",
)
TREC_EVAL_CASES = (
    ("qrels.test", "results.test", OPTIONS),
    ("qrels.rel_level", "results.test", OPTIONS),
    ("qrels.test", "results.trunc", (("-c",), ("-c", "-M", "100"), ("-c", "-l", "2"))),
)


def _plain(path: Path, folder: Path) -> Path:
    """A gzipped run unpacked for the binary (trec_eval reads plain text only)."""
    target = folder / path.name.removesuffix(".gz")
    if not target.exists():
        target.write_bytes(gzip.decompress(path.read_bytes()))
    return target


def _check_all_groups(binary, qrels, run, qrels_path, run_path, options, precise) -> None:
    checked = 0
    for group in MEASURE_GROUPS:
        checked += compare_with_binary(
            binary, qrels, run, qrels_path, run_path, group, options, precise=precise
        )
    assert checked > 50


@pytest.mark.parametrize("precise", [False, True], ids=["printed", "bits"])
@pytest.mark.parametrize(("qrels_name", "run_name", "option_sets"), TREC_EVAL_CASES)
def test_trec_eval_test_files(
    shared_data, trec_eval, trec_eval_precise, precise, qrels_name, run_name, option_sets
):
    folder = shared_data / "trec_eval"
    binary = trec_eval_precise if precise else trec_eval
    qrels, run = Qrels.read(folder / qrels_name), Run.read(folder / run_name)
    for options in option_sets:
        _check_all_groups(
            binary, qrels, run, folder / qrels_name, folder / run_name, options, precise
        )


@pytest.fixture(scope="module")
def robust_qrels(shared_data) -> Qrels:
    return Qrels.read(shared_data / "fusion" / "robust03" / "qrels.txt")


@pytest.mark.slow
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: " ".join(o) or "default")
@pytest.mark.parametrize("name", ROBUST_RUNS)
def test_robust03_runs(shared_data, trec_eval_precise, robust_qrels, tmp_path, name, options):
    folder = shared_data / "fusion" / "robust03"
    path = folder / "runs" / f"{name}.gz"
    run = Run.read(path)
    _check_all_groups(
        trec_eval_precise,
        robust_qrels,
        run,
        folder / "qrels.txt",
        _plain(path, tmp_path),
        options,
        precise=True,
    )


@pytest.mark.parametrize("qrels_name", ["qrels.abs.txt", "qrels.content.txt"])
@pytest.mark.parametrize("name", CLEF_RUNS)
def test_clef_tar_runs(shared_data, trec_eval, trec_eval_precise, tmp_path, name, qrels_name):
    folder = shared_data / "fusion" / "clef-tar-2018"
    path = folder / "runs" / f"{name}.gz"
    qrels, run = Qrels.read(folder / qrels_name), Run.read(path)
    plain = _plain(path, tmp_path)
    for options in OPTIONS:
        _check_all_groups(
            trec_eval_precise, qrels, run, folder / qrels_name, plain, options, precise=True
        )
    _check_all_groups(trec_eval, qrels, run, folder / qrels_name, plain, (), precise=False)


def test_robust03_printed_figures_match_the_released_binary(
    shared_data, trec_eval, robust_qrels, tmp_path
):
    folder = shared_data / "fusion" / "robust03"
    path = folder / "runs" / "input.pircRBa1.gz"
    compare_with_binary(
        trec_eval,
        robust_qrels,
        Run.read(path),
        folder / "qrels.txt",
        _plain(path, tmp_path),
        ["map", "P.10", "ndcg_cut.10"],
        precise=False,
    )
