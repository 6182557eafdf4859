"""MEDIQA 2019 Task 3 metrics: each quirk of the official evaluator, on hand-made submissions
whose expected values are worked out in the comments."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from probrank.evaluation.mediqa import (
    MediqaRow,
    mediqa_scores,
    read_mediqa_rows,
    write_mediqa_submission,
)
from probrank.exceptions import InputDataError, NumericsWarning


def rows(text: str) -> list[MediqaRow]:
    out = []
    for line in text.strip().splitlines():
        q, a, label = line.split(",")
        out.append(MediqaRow(q, a, int(label)))
    return out


# Question 1: key order (reference ranking) A2, A10, A3 correct; A1 incorrect.
# Question 2: A1 correct, A2 incorrect.
KEY = rows(
    """
1,1_A2,1
1,1_A10,1
1,1_A3,1
1,1_A1,0
2,2_A1,1
2,2_A2,0
"""
)


def test_perfect_submission():
    got = mediqa_scores(KEY, KEY)
    assert got["accuracy"] == 1.0 and got["precision"] == 1.0 and got["MRR"] == 1.0
    # q1: submitted correct = key order -> alphabetical ranks identical -> rho 1; q2 has one
    # correct answer -> NaN -> dropped.
    assert got["spearman_official"] == pytest.approx(1.0)
    assert got["spearman"] == pytest.approx(1.0)


def test_missing_rows_count_as_wrong_and_duplicates_keep_the_first():
    sub = rows(
        """
1,1_A2,1
1,1_A2,0
1,1_A1,1
"""
    )
    got = mediqa_scores(KEY, sub)
    # kept rows: (1_A2,1) right, (1_A1,1) wrong; 4 key rows missing -> 1 / 6
    assert got["accuracy"] == pytest.approx(1 / 6)
    # precision: 1 of 2 rows labelled 1 are correct
    assert got["precision"] == pytest.approx(0.5)
    # MRR: q1 first correct positive at position 1; q2 absent -> 0 -> (1 + 0) / 2
    assert got["MRR"] == pytest.approx(0.5)


def test_mrr_position_counts_every_row_and_needs_a_correct_positive():
    sub = rows(
        """
1,1_A1,1
1,1_A3,0
1,1_A10,1
2,2_A2,1
2,2_A1,0
"""
    )
    got = mediqa_scores(KEY, sub)
    # q1: row 1 is a positive but wrong, row 2 is labelled 0 (still counts), row 3 is the
    # first correct positive -> 1/3. q2: no correct positive -> 0.
    assert got["MRR"] == pytest.approx((1 / 3 + 0) / 2)


def test_official_spearman_ranks_ids_alphabetically():
    # Submitted correct answers in order A10, A2, A3; key order A2, A10, A3.
    sub = rows(
        """
1,1_A10,1
1,1_A2,1
1,1_A3,1
"""
    )
    got = mediqa_scores(KEY[:4], sub)
    # Official: alphabetical ranks ("1_A10" < "1_A2" < "1_A3"):
    #   submitted [A10, A2, A3] -> [1, 2, 3]; key subset [A2, A10, A3] -> [2, 1, 3]
    #   rho = 1 - 6 * (1 + 1 + 0) / (3 * 8) = 0.5
    assert got["spearman_official"] == pytest.approx(0.5)
    # Textbook: positions in the submission of the key-ordered answers: A2->1, A10->0, A3->2
    #   against 0, 1, 2 -> d = (1, 1, 0) -> rho = 0.5 as well here
    assert got["spearman"] == pytest.approx(0.5)
    # A case where the two differ: submitted A3, A2, A10 (key: A2, A10, A3).
    sub2 = rows(
        """
1,1_A3,1
1,1_A2,1
1,1_A10,1
"""
    )
    got2 = mediqa_scores(KEY[:4], sub2)
    # Official: submitted ranks [3, 2, 1]; key subset [A2, A10, A3] -> [2, 1, 3]
    #   d = (1, 1, -2) -> rho = 1 - 6 * 6 / 24 = -0.5
    assert got2["spearman_official"] == pytest.approx(-0.5)
    # Textbook: positions of A2, A10, A3 in the submission: 1, 2, 0 vs 0, 1, 2
    #   d = (1, 1, -2) -> -0.5 ... and with A10 <-> A3 swapped ranks agree differently:
    assert got2["spearman"] == pytest.approx(-0.5)
    sub3 = rows(
        """
1,1_A10,1
1,1_A3,1
1,1_A2,1
"""
    )
    got3 = mediqa_scores(KEY[:4], sub3)
    # Official: submitted [A10, A3, A2] -> [1, 3, 2]; key [2, 1, 3]; d = (-1, 2, -1) -> -0.5
    assert got3["spearman_official"] == pytest.approx(-0.5)
    # Textbook: positions of A2, A10, A3: 2, 0, 1 vs 0, 1, 2; d = (2, -1, -1) -> -0.5; then
    # a fourth answer breaks the symmetry:
    key4 = [*KEY[:3], MediqaRow("1", "1_A4", 1)]
    sub4 = rows(
        """
1,1_A4,1
1,1_A2,1
1,1_A10,1
1,1_A3,1
"""
    )
    got4 = mediqa_scores(key4, sub4)
    # Official: submitted [A4, A2, A10, A3] -> alphabetical [4, 2, 1, 3];
    #   key [A2, A10, A3, A4] -> [2, 1, 3, 4]; d = (2, 1, -2, -1) -> 1 - 6*10/60 = 0
    assert got4["spearman_official"] == pytest.approx(0.0, abs=1e-12)
    # Textbook: positions of A2, A10, A3, A4 in the submission: 1, 2, 3, 0 vs 0, 1, 2, 3
    #   d = (1, 1, 1, -3) -> 1 - 6*12/60 = -0.2
    assert got4["spearman"] == pytest.approx(-0.2)


def test_spearman_drops_single_and_counts_empty_as_zero():
    sub = rows(
        """
1,1_A2,1
1,1_A10,1
2,2_A1,1
"""
    )
    # q1: two correct in key order -> rho 1; q2: one -> dropped. -> 1.0
    assert mediqa_scores(KEY, sub)["spearman_official"] == pytest.approx(1.0)
    sub_none = rows(
        """
1,1_A2,1
1,1_A10,1
2,2_A1,0
"""
    )
    # q2 has no correct positive: the official script adds rho = 0 -> (1 + 0) / 2
    assert mediqa_scores(KEY, sub_none)["spearman_official"] == pytest.approx(0.5)
    # textbook drops q2 instead
    assert mediqa_scores(KEY, sub_none)["spearman"] == pytest.approx(1.0)


def test_no_positive_prediction_gives_nan_with_warning():
    sub = [MediqaRow(r.question_id, r.answer_id, 0) for r in KEY]
    with pytest.warns(NumericsWarning, match="precision"):
        got = mediqa_scores(KEY, sub)
    assert math.isnan(got["precision"]) and got["MRR"] == 0.0
    assert got["accuracy"] == pytest.approx(2 / 6)


def test_files_header_and_roundtrip(tmp_path):
    (tmp_path / "test.csv").write_text("question_id,answer_id,label\n1,1_A2,1\n")
    (tmp_path / "val.csv").write_text("1,1_A2,1\n1,1_A1,0\n")
    assert read_mediqa_rows(tmp_path / "test.csv") == [MediqaRow("1", "1_A2", 1)]
    assert len(read_mediqa_rows(tmp_path / "val.csv")) == 2
    write_mediqa_submission(tmp_path / "sub.csv", KEY)
    assert (tmp_path / "sub.csv").read_text().splitlines()[0] == "1,1_A2,1"
    assert read_mediqa_rows(tmp_path / "sub.csv") == KEY


@pytest.mark.parametrize(
    ("content", "message"),
    [("1,1_A2\n", "3 comma-separated"), ("1,1_A2,yes\n", "not 0 or 1"), ("\n", "no rows")],
)
def test_bad_files(tmp_path, content, message):
    (tmp_path / "bad.csv").write_text(content)
    with pytest.raises(InputDataError, match=message):
        read_mediqa_rows(tmp_path / "bad.csv")


@pytest.mark.integration
def test_chiqa_baseline_on_test_key(shared_data):
    import defusedxml.ElementTree as ElementTree

    folder = shared_data / "qa" / "mediqa2019-task3"
    key = read_mediqa_rows(folder / "test-ground-truth.csv")
    root = ElementTree.parse(folder / "test-with-labels.xml").getroot()
    sub = []
    for question in root.iter("Question"):
        answers = sorted(question.iter("Answer"), key=lambda a: int(a.attrib["SystemRank"]))
        sub += [MediqaRow(question.attrib["QID"], a.attrib["AID"], 1) for a in answers]
    got = {k: round(v, 4) for k, v in mediqa_scores(key, sub).items()}
    assert got["accuracy"] == 0.5167 and got["precision"] == 0.5167
    assert got["MRR"] == 0.8950 and got["spearman_official"] == 0.3150


def test_fast_spearman_paths_equal_scipy_on_random_orders():
    # the closed forms used for distinct IDs agree with scipy's rank-based computation
    from scipy import stats

    from probrank.evaluation.mediqa import _official_spearman

    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(2, 12)
        ids = [f"1_Answer{i}" for i in rng.sample(range(1, 15), n)]
        submitted = rng.sample(ids, n)
        reference = rng.sample(ids, n)
        a = stats.rankdata(np.array(submitted, dtype=object).astype(str))
        b = stats.rankdata(np.array(reference, dtype=object).astype(str))
        expected = float(np.corrcoef(a, b)[0, 1])
        assert _official_spearman(submitted, reference) == pytest.approx(expected, abs=1e-12)
        key = [MediqaRow("1", x, 1) for x in reference]
        sub = [MediqaRow("1", x, 1) for x in submitted]
        textbook = stats.spearmanr([submitted.index(x) for x in reference], range(n)).statistic
        assert mediqa_scores(key, sub)["spearman"] == pytest.approx(textbook, abs=1e-12)
