"""load_experiment_data: every input file is read before the encoder loads, and a human
session's question is the only one encoded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import torch

from probrank.exceptions import InputDataError
from probrank.experiments.interactive import cells
from probrank.experiments.interactive.cells import load_experiment_data
from probrank.models.interactive.settings import InteractiveRankerSettings, PosteriorKind
from tests.malformed.inputs import Content, liveqa_layout, mediqa_layout

WIDTH = 8


class FakeEncoder:
    """Random pair features of width :data:`WIDTH`; records the queries it encoded."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.generator = torch.Generator().manual_seed(0)

    def encode_pairs(self, queries: Sequence[str], candidates: Sequence[str]) -> torch.Tensor:
        self.queries.extend(queries)
        return torch.randn(len(queries), WIDTH, generator=self.generator)


class EncoderLoaded(RuntimeError):
    pass


def _lay_out(folder: Path, files: Mapping[str, Content]) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else str(content).encode())


@pytest.fixture
def data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PROBRANK_DATA", str(tmp_path / "data"))
    return tmp_path


def _encoder_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise EncoderLoaded("the encoder was loaded before the error")

    monkeypatch.setattr(cells, "encoder_from_config", fail)


def _fake_encoder(monkeypatch: pytest.MonkeyPatch) -> FakeEncoder:
    encoder = FakeEncoder()
    monkeypatch.setattr(cells, "encoder_from_config", lambda *args, **kwargs: encoder)
    return encoder


def test_a_broken_warm_start_file_is_an_error_before_the_encoder_loads(
    data_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_out(data_folder, {**liveqa_layout(), **mediqa_layout(validation_xml="")})
    _encoder_fails(monkeypatch)
    with pytest.raises(InputDataError) as error:
        load_experiment_data("liveqa-med", encoder_options={"cache_dir": ""})
    broken = data_folder / "data/qa/mediqa2019-task3/validation.xml"
    assert str(error.value).startswith(f"{broken}") and "empty file" in str(error.value)


def test_without_warm_start_the_files_are_read_only_when_a_ranker_needs_them(
    data_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_out(data_folder, {**liveqa_layout(), **mediqa_layout(validation_xml="")})
    encoder = _fake_encoder(monkeypatch)
    options = InteractiveRankerSettings()
    data = load_experiment_data(
        "liveqa-med", options=options, encoder_options={"cache_dir": ""}, warm_start=False
    )
    assert [q.qid for q in data.questions] == ["TQ1", "TQ2"]
    assert data.ranker(0, PosteriorKind.GPPL, options) is not None  # no warm start: no reading
    encoded = len(encoder.queries)
    with pytest.raises(InputDataError, match=r"validation\.xml: empty file"):
        data.ranker(0, PosteriorKind.LAPLACE, options)  # a warm start after all: read now
    assert len(encoder.queries) == encoded  # and still checked before encoding any of it


def test_a_question_is_the_only_one_encoded(
    data_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_out(data_folder, {**liveqa_layout(), **mediqa_layout()})
    encoder = _fake_encoder(monkeypatch)
    everything = load_experiment_data(
        "liveqa-med", encoder_options={"cache_dir": ""}, warm_start=False
    )
    everyone = len(encoder.queries)
    encoder.queries.clear()
    data = load_experiment_data(
        "liveqa-med", encoder_options={"cache_dir": ""}, question="TQ2", warm_start=False
    )
    (item,) = data.questions
    (same,) = [q for q in everything.questions if q.qid == "TQ2"]
    assert item.qid == "TQ2" and item.candidates == same.candidates
    assert encoder.queries == [item.query] * item.num_candidates
    assert 0 < len(encoder.queries) < everyone


def test_an_unknown_question_is_an_error_before_the_encoder_loads(
    data_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_out(data_folder, {**liveqa_layout(), **mediqa_layout()})
    _encoder_fails(monkeypatch)
    with pytest.raises(InputDataError, match=r"no question 'TQ9' in liveqa-med \(ids look like"):
        load_experiment_data("liveqa-med", encoder_options={"cache_dir": ""}, question="TQ9")


def test_a_synthetic_question_is_kept_alone() -> None:
    every = load_experiment_data("synthetic").questions
    (item,) = load_experiment_data("synthetic", question=every[3].qid).questions
    assert item.qid == every[3].qid and torch.equal(item.features, every[3].features)
    with pytest.raises(InputDataError, match="no question 'T99' in synthetic"):
        load_experiment_data("synthetic", question="T99")
