"""The MEDIQA protocol end to end on generated MEDIQA, RQE and MedQuAD files and a tiny random
BERT (no MiniLM, no shared data): every system is scored, the baselines match hand-computed
values, the JSON is strict, results are saved, and smoke mode reads one MedQuAD folder."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
import pytest
import torch

from probrank.evaluation.mediqa import MediqaRow
from probrank.experiments import settings_of
from probrank.experiments.mediqa.data import smallest_subfolder
from probrank.experiments.mediqa.protocol import SYSTEMS, run
from probrank.experiments.mediqa.scoring import MEASURES, MediqaScorer, submission
from probrank.experiments.provenance import RunOutput
from probrank.models.multitask.mediqa_features import FeatureSet
from probrank.models.multitask.selection import keep_labels
from tests.encoders.conftest import WORDS, make_tiny_bert


def _sentence(rng: random.Random, n: int = 6) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _write_mediqa_file(path: Path, first_qid: int, count: int, rng: random.Random) -> list:
    key = []
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<Set>']
    for qid in range(first_qid, first_qid + count):
        n = rng.randint(3, 6)
        scores = [rng.randint(1, 4) for _ in range(n)]
        scores[0] = 4  # every question has a correct answer
        reference = sorted(range(n), key=lambda i: (-scores[i], i))
        ref_rank = {i: r + 1 for r, i in enumerate(reference)}
        parts.append(f'<Question QID="{qid}"><QuestionText>{_sentence(rng)}</QuestionText>')
        parts.append("<AnswerList>")
        for i in range(n):
            aid = f"{qid}_Answer{i + 1}"
            parts.append(
                f'<Answer AID="{aid}" SystemRank="{i + 1}" ReferenceRank="{ref_rank[i]}" '
                f'ReferenceScore="{scores[i]}"><AnswerURL>https://site{i % 3}.org/x</AnswerURL>'
                f"<AnswerText>{escape(_sentence(rng, 12))}</AnswerText></Answer>"
            )
        parts.append("</AnswerList></Question>")
        key += [(str(qid), f"{qid}_Answer{i + 1}", int(scores[i] >= 3)) for i in reference]
    parts.append("</Set>\n")
    path.write_text("\n".join(parts), encoding="utf-8")
    return key


def _write_rqe(path: Path, count: int, rng: random.Random) -> None:
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<Set>']
    for i in range(count):
        chq = _sentence(rng)
        faq = chq if i % 2 == 0 else _sentence(rng)
        value = "true" if i % 2 == 0 else "false"
        parts.append(f'<pair pid="{i}" value="{value}"><chq>{chq}</chq><faq>{faq}</faq></pair>')
    parts.append("</Set>\n")
    path.write_text("\n".join(parts), encoding="utf-8")


def _write_medquad(root: Path, folders: dict[str, int], rng: random.Random) -> None:
    for folder, documents in folders.items():
        (root / folder).mkdir(parents=True)
        for d in range(documents):
            pairs = "".join(
                f'<QAPair pid="{p}"><Question qid="{folder}_{d}_{p}" qtype="information">'
                f"{_sentence(rng)}</Question><Answer>{_sentence(rng, 10)}</Answer></QAPair>"
                for p in range(3)
            )
            (root / folder / f"doc{d}.xml").write_text(
                f'<?xml version="1.0"?>\n<Document id="{d}" source="S" url="u"><Focus>f</Focus>'
                f"<QAPairs>{pairs}</QAPairs></Document>\n",
                encoding="utf-8",
            )


@pytest.fixture(scope="module")
def fake_data(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("mediqa-fake")
    rng = random.Random(7)
    mediqa = root / "mediqa"
    mediqa.mkdir()
    _write_mediqa_file(mediqa / "train-liveqamed.xml", 1, 8, rng)
    _write_mediqa_file(mediqa / "train-alexa.xml", 1, 8, rng)  # the same qids: prefixed
    val_key = _write_mediqa_file(mediqa / "validation.xml", 100, 6, rng)
    test_key = _write_mediqa_file(mediqa / "test-with-labels.xml", 200, 8, rng)
    lines = [",".join(map(str, row)) for row in val_key]
    (mediqa / "validation-ground-truth.csv").write_text("\n".join(lines) + "\n")
    lines = ["question_id,answer_id,label", *(",".join(map(str, row)) for row in test_key)]
    (mediqa / "test-ground-truth.csv").write_text("\n".join(lines) + "\n")
    rqe = root / "rqe"
    rqe.mkdir()
    for name, count in (
        ("MEDIQA2019-Task2-RQE-TrainingSet-AMIA2016.xml", 40),
        ("MEDIQA2019-Task2-RQE-ValidationSet-AMIA2016.xml", 20),
        ("MEDIQA2019-Task2-RQE-TestSet-wLabels.xml", 20),
    ):
        _write_rqe(rqe / name, count, rng)
    _write_medquad(root / "medquad", {"1_Big_QA": 5, "2_Small_QA": 2}, rng)
    bert = make_tiny_bert(root / "bert")
    return {"root": root, "bert": bert, "test_key": test_key}


def _config(fake: dict, tmp_path: Path) -> dict:
    root = fake["root"]
    return {
        "experiment": {"protocol": "mediqa_multitask"},
        "data": {
            "mediqa": str(root / "mediqa"),
            "rqe": str(root / "rqe"),
            "medquad": str(root / "medquad"),
        },
        "encoder": {
            "model": str(fake["bert"]),
            "max_length": 32,
            "cache_dir": str(root / "cache"),  # shared by the tests: the second reads it
            "progress": False,
        },
        "entailment": {"first_stage": 4, "top_n": 2, "threshold": 0.3},
        "model": {
            "hidden": 8,
            "ranking_weights": [0.6, 0.9],
            "max_epochs": 8,
            "patience": 4,
            "lr": 0.01,
        },
        "evaluation": {"bootstrap": 20},
        "output": {"folder": "out"},
    }


def _chiqa_top_k_accuracy(key: list, k: int) -> float:
    # independent of the protocol's code: SystemRank i + 1 is Answer{i + 1}
    hits = sum(int((int(aid.rsplit("Answer", 1)[1]) <= k) == bool(label)) for _, aid, label in key)
    return hits / len(key)


def test_protocol_end_to_end_and_saved_results(fake_data: dict, tmp_path: Path) -> None:
    config = _config(fake_data, tmp_path)
    result = run(settings_of(config), config_path=tmp_path / "fake.toml", seeds=1, smoke=False)
    assert list(result.values) == list(SYSTEMS)
    for measures in result.values.values():
        assert list(measures) == list(MEASURES)
        assert all(len(v) == 1 for v in measures.values())
        for name in ("accuracy", "MRR"):
            assert 0.0 <= measures[name][0] <= 1.0
    key = fake_data["test_key"]
    positives = sum(label for *_, label in key) / len(key)
    chiqa = result.values["chiqa"]
    assert chiqa["accuracy"][0] == pytest.approx(positives, abs=1e-12)
    assert chiqa["precision"][0] == pytest.approx(positives, abs=1e-12)
    assert chiqa["MRR"][0] == pytest.approx(1.0)  # Answer1 (SystemRank 1) is always correct
    chosen = result.extra["Chosen on validation"]
    k = int(chosen["chiqa_topk"]["k"])
    assert 1 <= k <= 10
    assert result.values["chiqa_topk"]["accuracy"][0] == pytest.approx(
        _chiqa_top_k_accuracy(key, k), abs=1e-12
    )
    assert chosen["multitask, seed 0"]["lambda"] in (0.6, 0.9)
    assert "RQE classifier (MEDIQA 2019 Task 2 test)" in result.extra
    strict = json.loads(result.to_json(), parse_constant=pytest.fail)
    assert set(strict) == set(SYSTEMS)
    RunOutput(tmp_path / "out", "fake", {}).write(result)  # what run_experiment writes
    saved = json.loads((tmp_path / "out" / "fake.json").read_text(), parse_constant=pytest.fail)
    for system, measures in result.values.items():
        for measure, values in measures.items():
            expected = [None if math.isnan(v) else v for v in values]
            assert saved["values"][system][measure] == expected
    assert (tmp_path / "out" / "fake_reliability.png").stat().st_size > 1000
    assert "RQE classifier" in result.table()


def test_smoke_mode_reads_one_medquad_folder_and_saves_nothing(
    fake_data: dict, tmp_path: Path
) -> None:
    root = fake_data["root"] / "medquad"
    assert smallest_subfolder(root).name == "2_Small_QA"
    result = run(
        settings_of(_config(fake_data, tmp_path)),
        config_path=tmp_path / "s.toml",
        seeds=1,
        smoke=True,
    )
    assert list(result.values) == list(SYSTEMS)
    assert any("2_Small_QA" in note for note in result.notes)
    assert not (tmp_path / "out").exists()


def _lists_and_features() -> tuple[list, FeatureSet]:
    from probrank.data.datasets.mediqa import MediqaList

    lists = [
        MediqaList("test:1", "q", ("1_A1", "1_A2", "1_A3"), ("a", "b", "c"), (0, 1, 1),
                   (2, 4, 3), (1, 2, 3), (3, 1, 2), ("", "", "")),
        MediqaList("test:2", "q", ("2_A1", "2_A2"), ("a", "b"), (1, 0), (4, 1), (1, 2),
                   (1, 2), ("", "")),
    ]  # fmt: skip
    features = FeatureSet(
        features=torch.zeros(5, 1, dtype=torch.float64),
        groups=[[0, 1, 2], [3, 4]],
        grades=[2, 4, 3, 4, 1],
        labels=torch.tensor([0.0, 1.0, 1.0, 1.0, 0.0], dtype=torch.float64),
        system_ranks=[1, 2, 3, 1, 2],
    )
    return lists, features


def test_submission_order_keep_top_and_scorer_by_hand() -> None:
    lists, features = _lists_and_features()
    scores = np.array([0.2, 0.9, 0.5, 0.1, 0.3])
    labels = np.array([0, 0, 1, 0, 0])
    kept = keep_labels(features.groups, scores, labels.astype(float), 0.5, keep_top=True)
    assert kept.tolist() == [0, 1, 1, 0, 1]  # the top answer of each question, plus 1_A3
    assert labels.tolist() == [0, 0, 1, 0, 0]  # not mutated
    rows = submission(lists, scores, kept)
    assert [r.answer_id for r in rows["1"]] == ["1_A2", "1_A3", "1_A1"]
    assert [r.answer_id for r in rows["2"]] == ["2_A2", "2_A1"]
    first = submission(lists, scores, labels, positives_first=True)
    assert [r.answer_id for r in first["1"]] == ["1_A3", "1_A2", "1_A1"]
    key = [
        MediqaRow("1", "1_A2", 1),
        MediqaRow("1", "1_A3", 1),
        MediqaRow("1", "1_A1", 0),
        MediqaRow("2", "2_A1", 1),
        MediqaRow("2", "2_A2", 0),
    ]
    scorer = MediqaScorer(lists, key)
    got = scorer(scores, kept)
    # rows: q1 (A2,1) (A3,1) (A1,0) all right; q2 (A2,1) wrong, (A1,0) wrong -> 3 / 5
    assert got["accuracy"] == pytest.approx(3 / 5)
    assert got["precision"] == pytest.approx(2 / 3)
    assert got["MRR"] == pytest.approx((1 + 0) / 2)
    # the key from the lists' own labels (ReferenceRank order) gives the same scores
    own = MediqaScorer(lists)(scores, kept)
    assert own == pytest.approx(got, nan_ok=True)
    # a bootstrap resample of identical questions has no spread
    single = MediqaScorer(lists[:1], key[:3])
    sd = single.bootstrap_sd(scores[:3], kept[:3], draws=20, seed=0)
    assert sd["accuracy"] == pytest.approx(0.0, abs=1e-12)


def test_results_table_and_json_with_nan_values() -> None:
    # a measure undefined on every seed (textbook Spearman of a top-1 system) prints as nan
    # in the table and is null in the strict JSON
    from probrank.experiments.results import ExperimentResult

    result = ExperimentResult("t", {"a": {"x": [math.nan, math.nan], "y": [1.0, 2.0]}})
    assert "nan" in result.table()
    assert "1.5000 ± 0.7071" in result.table()
    assert json.loads(result.to_json(), parse_constant=pytest.fail) == {"a": {"x": None, "y": 1.5}}
