"""Issue 14's malformed-input corpus: every command and every loader on broken input.

Every case of :mod:`tests.malformed` must fail the same way:

* a command line ends with exit code 2 and exactly one line on stderr, ``probrank: error: ...``
  holding the file name (and ``:<line>:`` where there is a line) or the option, no traceback,
  nothing on stdout and no warning printed;
* no file is created, changed or removed in the case's folder (inputs, pre-existing outputs
  holding sentinel bytes, no stray ``.*.probrank-*.tmp``);
* the error comes before any expensive work: loading the transformer encoder or training
  (any gradient: ``backward`` or ``torch.autograd.grad``) raises instead, which fails the case;
* a loader raises one ``InputDataError`` line naming the file.

Most command lines run in this process through :func:`probrank.cli.main`; the cases marked
``process`` run again as real processes, to show there is no traceback and no death by signal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from probrank.cli import main
from probrank.exceptions import InputDataError
from tests.malformed import CLI_CASES, LOADER_CASES
from tests.malformed import inputs as corpus
from tests.malformed.formats import ROW
from tests.malformed.inputs import FOLDER, SENTINEL, CliCase, LoaderCase

PREFIX = "probrank: error: "
QUIET_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_OFFLINE": "1",
}
SHOWN_BY_DEFAULT_ONLY_IN_MAIN = (
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
    ResourceWarning,
)
"""Warning categories Python's default filters hide outside ``__main__``."""


class ExpensiveWork(RuntimeError):
    """Raised when a malformed-input case reaches the encoder or a training step."""


# --- helpers ---------------------------------------------------------------------------------


def _fill(text: str, folder: Path) -> str:
    return text.replace("{d}", str(folder))


def _materialise(files: Mapping[str, object], folder: Path) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is FOLDER:
            path.mkdir(exist_ok=True)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_bytes(_fill(content, folder).encode("utf-8"))
        else:  # pragma: no cover - a typo in the table
            raise TypeError(f"{name}: {content!r}")


def _prepare(case: CliCase, folder: Path) -> tuple[list[str], dict[str, bytes | None]]:
    """Lay out the case's folder; return its argv and a snapshot of the folder."""
    _materialise(case.files, folder)
    for name in case.sentinels:
        (folder / name).write_bytes(SENTINEL)
    for name in case.absent:
        assert not (folder / name).exists(), f"{name} exists before the command"
    return [_fill(arg, folder) for arg in case.argv], _snapshot(folder)


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (``None`` for a folder)."""
    return {
        str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
    }


def _check_error_line(stderr: str, case: CliCase, folder: Path) -> None:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and stderr.endswith("\n"), f"not one line: {stderr!r}"
    line = lines[0]
    assert line.startswith(PREFIX), line
    for fragment in case.expect:
        assert _fill(fragment, folder) in line, (fragment, line)


def _check_files(case: CliCase, folder: Path, before: dict[str, bytes | None]) -> None:
    for name in case.sentinels:
        assert (folder / name).read_bytes() == SENTINEL, f"{name} was damaged"
    for name in case.absent:
        assert not (folder / name).exists(), f"{name} was created"
    strays = [p.name for p in folder.rglob(".*.probrank-*.tmp")]
    assert not strays, f"stray temporary files: {strays}"
    after = _snapshot(folder)
    created = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    assert not (created or removed or changed), (created, removed, changed)


@contextmanager
def _held(case: CliCase, folder: Path) -> Iterator[None]:
    """Hold the case's session log locked, as another process resuming it would."""
    if case.hold is None:
        yield
        return
    from probrank.interactive.log import SessionLog

    log = SessionLog.reopen(folder / case.hold)
    try:
        yield
    finally:
        log.close()


def _marks(case: CliCase | LoaderCase) -> list[pytest.MarkDecorator]:
    xfail = getattr(case, "xfail", None)
    return [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []


def _params(cases: list, *, only_process: bool = False) -> list:
    return [
        pytest.param(case, id=case.id, marks=_marks(case))
        for case in cases
        if not only_process or getattr(case, "process", False)
    ]


@pytest.fixture
def no_expensive_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the encoder or any training step fails the case (an error must come first)."""
    import torch

    from probrank.encoders.transformer import TransformerEncoder

    def encoder(*args: object, **kwargs: object) -> None:
        raise ExpensiveWork("the transformer encoder was loaded before the error")

    def gradient(*args: object, **kwargs: object) -> None:
        raise ExpensiveWork("a gradient (a training step) was computed before the error")

    monkeypatch.setattr(TransformerEncoder, "__init__", encoder)
    monkeypatch.setattr(torch.autograd, "backward", gradient)  # Tensor.backward calls it
    monkeypatch.setattr(torch.autograd, "grad", gradient)


# --- the corpus ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _params(CLI_CASES))
def test_command_line(
    case: CliCase,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_expensive_work: None,
) -> None:
    folder = tmp_path / "case"
    folder.mkdir()
    argv, before = _prepare(case, folder)
    monkeypatch.delenv("PROBRANK_DATA", raising=False)
    for key, value in case.env.items():
        monkeypatch.setenv(key, _fill(value, folder))
    monkeypatch.chdir(folder)  # anything written to a relative path shows in the snapshot
    capsys.readouterr()
    with _held(case, folder), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(argv)
    captured = capsys.readouterr()
    assert code == 2, (code, captured.err)
    _check_error_line(captured.err, case, folder)
    assert captured.out == ""
    shown = [
        f"{w.category.__name__}: {w.message}"
        for w in caught
        if not issubclass(w.category, SHOWN_BY_DEFAULT_ONLY_IN_MAIN)
    ]
    assert not shown, f"warnings printed beside the error: {shown}"
    _check_files(case, folder, before)


@pytest.mark.parametrize("case", _params(CLI_CASES, only_process=True))
def test_command_line_in_a_real_process(case: CliCase, tmp_path: Path) -> None:
    folder = tmp_path / "case"
    folder.mkdir()
    argv, before = _prepare(case, folder)
    env = {k: v for k, v in os.environ.items() if k != "PROBRANK_DATA"}
    env.update(QUIET_ENV)
    env.update({key: _fill(value, folder) for key, value in case.env.items()})
    with _held(case, folder):
        proc = subprocess.run(
            [sys.executable, "-m", "probrank.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=folder,
            stdin=subprocess.DEVNULL,
            check=False,
            timeout=120,
        )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)  # not a signal (negative)
    _check_error_line(proc.stderr, case, folder)
    assert proc.stdout == ""
    _check_files(case, folder, before)


@pytest.mark.parametrize("case", _params(LOADER_CASES))
def test_loader(case: LoaderCase, tmp_path: Path) -> None:
    folder = tmp_path / "case"
    folder.mkdir()
    _materialise(case.files, folder)
    before = _snapshot(folder)
    with warnings.catch_warnings(record=True), pytest.raises(InputDataError) as info:
        warnings.simplefilter("always")
        case.call(folder)
    message = str(info.value)
    assert "\n" not in message and message.strip() == message, message
    for fragment in case.expect:
        assert _fill(fragment, folder) in message, (fragment, message)
    assert _snapshot(folder) == before


# --- the corpus stays whole --------------------------------------------------------------------

COMMANDS_AND_LOADERS = {
    # command lines, per command
    "eval": 86,
    "fuse": 25,
    "experiment": 55,
    "encode": 38,
    "interactive": 62,
    "demo": 11,
    "global": 10,
    # loaders called directly
    "mediqa": 8,
    "liveqa_med": 6,
    "ubuntu_irc": 6,
    "medquad": 5,
    "rqe": 5,
    "trec_topics": 6,
    "trec_run": 2,
    "trec_qrels": 2,
    "candidates_jsonl": 24,
    "candidates_frame": 12,
    "session_log": 3,
    "mediqa_keys": 3,
    "experiment_config": 2,
    # issue 27: saved models (their manifests and save), DataFrame readers of runs and qrels
    "saved_model": 25,
    "model_save": 5,
    "run_frame": 5,
}


def test_the_corpus_is_large_distinct_and_covers_every_command_and_loader() -> None:
    ids = [case.id for case in [*CLI_CASES, *LOADER_CASES]]
    assert len(ids) >= 420  # 337 before issue 27
    assert len(set(ids)) == len(ids), [i for i, n in Counter(ids).items() if n > 1]
    inputs = [(c.argv, tuple(sorted((k, repr(v)) for k, v in c.files.items()))) for c in CLI_CASES]
    assert len(set(inputs)) == len(inputs), "two command-line cases are the same"
    counts = Counter([c.command for c in CLI_CASES] + [c.loader for c in LOADER_CASES])
    assert set(counts) == set(COMMANDS_AND_LOADERS)
    short = {k: (counts[k], n) for k, n in COMMANDS_AND_LOADERS.items() if counts[k] < n}
    assert not short, short
    # every dataset loader that a command reaches is broken through that command too
    for fragment in ("liveqa-med", "mediqa2019-task3", "ubuntu", "medquad", "rqe", "runs"):
        assert any(fragment in e for c in CLI_CASES for e in c.expect), fragment
    # outputs: some cases pre-create the output (sentinels), some must not create it
    for command in ("fuse", "demo", "interactive"):
        assert any(c.sentinels for c in CLI_CASES if c.command == command), command
    assert sum(c.process for c in CLI_CASES) >= 15
    assert {c.command for c in CLI_CASES if c.process} == {
        "eval",
        "fuse",
        "experiment",
        "interactive",
        "demo",
        "global",
        "encode",
    }


# --- positive controls: the good inputs the cases break do load -----------------------------


def test_good_trec_files_evaluate_and_fuse(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _materialise(
        {"qrels": corpus.GOOD_QRELS, "a.run": corpus.GOOD_RUN, "b.run": corpus.GOOD_RUN_B},
        tmp_path,
    )
    qrels, a, b = (str(tmp_path / n) for n in ("qrels", "a.run", "b.run"))
    assert main(["eval", qrels, a, b, "-m", "AP", "P@1", "nDCG@3", "-M", "5", "-l", "1"]) == 0
    assert main(["fuse", qrels, a, b, "-o", str(tmp_path / "fused.run")]) == 0
    assert (tmp_path / "fused.run").read_text().count("\n") == 6  # 3 topics x 2 documents
    capsys.readouterr()


def test_byte_order_mark_and_crlf_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The positive control of the BOM and CRLF cases: not errors, and the same numbers."""
    plain, marked = tmp_path / "plain.run", tmp_path / "marked.run"
    plain.write_text(corpus.GOOD_RUN)
    marked.write_bytes(b"\xef\xbb\xbf" + corpus.GOOD_RUN.replace("\n", "\r\n").encode())
    (tmp_path / "qrels").write_bytes(b"\xef\xbb\xbf" + corpus.GOOD_QRELS.encode())
    outputs = []
    for run in (plain, marked):
        assert main(["eval", str(tmp_path / "qrels"), str(run), "-m", "AP", "--json"]) == 0
        outputs.append(capsys.readouterr().out.replace(run.name, "run"))
    assert outputs[0] == outputs[1]


def test_finite_scores_near_the_limit_fuse_when_their_range_fits(tmp_path: Path) -> None:
    """The overflow cases fail because of the range, not the magnitude: 1e308 beside small
    scores fuses by min-max, sum and rank (z-scores square the deviations: an error, a case)."""
    from probrank.data.trec import Run
    from probrank.experiments.fuse import fuse_command

    _materialise(
        {
            "qrels": corpus.GOOD_QRELS,
            "a.run": corpus.GOOD_RUN.replace("2.0 a", "1e308 a"),
            "b.run": corpus.GOOD_RUN_B,
        },
        tmp_path,
    )
    out = tmp_path / "fused.run"
    for norm in ("minmax", "sum", "rank"):
        fuse_command(
            tmp_path / "qrels",
            [tmp_path / "a.run", tmp_path / "b.run"],
            norm=norm,
            output=out,
        )
        assert len(Run.read(out)) == 3


def test_good_dataset_layouts_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from probrank.data.candidates import CandidateList
    from probrank.data.datasets.medquad import read_medquad
    from probrank.data.datasets.rqe import read_rqe
    from probrank.data.datasets.ubuntu_irc import load_ubuntu_irc
    from probrank.data.topics import read_topics
    from probrank.evaluation.mediqa import read_mediqa_rows
    from probrank.experiments.interactive.data import load_lists
    from probrank.interactive.log import read_log

    _materialise(
        {
            **corpus.liveqa_layout(),
            **corpus.mediqa_layout(),
            **corpus.multitask_layout(),
            **corpus.ubuntu_layout("train"),
            "topics.txt": corpus.TOPICS,
            "lists.jsonl": corpus.GOOD_CANDIDATES + "\n",
            "s.log": corpus.GOOD_LOG,
        },
        tmp_path,
    )
    monkeypatch.setenv("PROBRANK_DATA", str(tmp_path / "data"))
    assert [x.qid for x in load_lists("liveqa-med", "test")] == ["TQ1", "TQ2"]
    for split in ("train", "validation", "test"):
        assert load_lists("mediqa", split)
    assert len(read_rqe(tmp_path / "rqe" / next(iter(corpus.RQE_FILES)))) == 2
    assert len(read_medquad(tmp_path / "medquad", progress=False)) == 1
    assert len(read_mediqa_rows(tmp_path / "mediqa" / "test-ground-truth.csv")) == 2
    assert len(load_ubuntu_irc(tmp_path / "ubuntu" / "train")) == 29
    assert read_topics(tmp_path / "topics.txt") == {"301": "flu", "302": "cold"}
    assert CandidateList.from_jsonl(tmp_path / "lists.jsonl")[0].labels == (1, 0)
    frame = pd.DataFrame([{**ROW, "label": 1}, {**ROW, "candidate_id": "b", "label": 0}])
    assert CandidateList.from_dataframe(frame)[0].labels == (1, 0)
    assert read_log(tmp_path / "s.log").num_judgements == 2


def test_good_configs_load(tmp_path: Path) -> None:
    from probrank.experiments import load_config

    for name, text, protocol in (
        ("q.toml", corpus.QLF, "qlfusion_cv"),
        ("g.toml", corpus.GPF, "gpf_ranker"),
        ("m.toml", corpus.MULTITASK, "mediqa_multitask"),
        (
            "i.toml",
            '[experiment]\nprotocol = "interactive"\n\n[laplace]\nscale = 1.0\n',
            "interactive",
        ),
    ):
        (tmp_path / name).write_text(_fill(text, tmp_path))
        assert load_config(tmp_path / name).experiment.protocol == protocol


# --- issue 27: the positive controls of the new surfaces --------------------------------------


def test_saved_models_the_manifest_cases_edit_do_load(tmp_path: Path) -> None:
    """Every manifest case breaks one field of a manifest that loads (or, for the classes
    whose load needs an encoder, that the schema accepts)."""
    from probrank.models._manifest import check_manifest
    from tests.malformed import saved as surfaces

    for name, save in (("q", surfaces.QL), ("i", surfaces.IR)):
        cls = save(tmp_path / name)
        assert type(cls.load(tmp_path / name)).__name__ == cls.__name__
    for name, save in (("g", surfaces.GPF), ("m", surfaces.MT)):
        save(tmp_path / name)
        file = tmp_path / name / "manifest.json"
        manifest = json.loads(file.read_text())
        assert check_manifest(manifest, file) == manifest


def test_the_readers_cases_break_frames_and_lines_that_load(tmp_path: Path) -> None:
    import pandas as pd

    from probrank.data.candidates import CandidateList
    from probrank.data.trec import Qrels, Run
    from tests.malformed import saved as surfaces

    run = Run.from_dataframe(pd.DataFrame([["q1", "d1", 1e300]], columns=surfaces.RUN_COLUMNS))
    assert run["q1"]["d1"] == 1e300  # a large finite score is fine; 10**400 is not a double
    qrels = Qrels.from_dataframe(
        pd.DataFrame([["q1", "d1", 2**62]], columns=["qid", "d", "l"]), docno="d", label="l"
    )
    assert qrels["q1"]["d1"] == 2**62
    frame = pd.DataFrame([surfaces.ROW, ["q1", "flu?", 7, "No."]], columns=surfaces.LIST_COLUMNS)
    assert CandidateList.from_dataframe(frame)[0].candidate_ids == ("a", "7")
    (tmp_path / "l.jsonl").write_text(surfaces._line(qid=5, grade="3"))
    (lists,) = CandidateList.from_jsonl(tmp_path / "l.jsonl")
    assert (lists.qid, lists.grades) == ("5", (3, 0))


def test_max_length_is_checked_against_the_positions_transformers_reads(tmp_path: Path) -> None:
    from transformers import AutoConfig

    from probrank.encoders.model_folder import check_model_folder, max_positions
    from probrank.encoders.transformer import default_model_path

    folder = default_model_path()
    positions = AutoConfig.from_pretrained(str(folder)).max_position_embeddings
    assert max_positions(folder) == positions == 512
    check_model_folder(folder, max_length=positions)
    with pytest.raises(InputDataError, match="513 is more than the 512 positions"):
        check_model_folder(folder, max_length=positions + 1)
    roberta = tmp_path / "roberta"
    roberta.mkdir()
    (roberta / "config.json").write_text(
        json.dumps({"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1})
    )
    assert max_positions(roberta) == 512  # position ids start after the padding index


def test_json_output_is_strict_json() -> None:
    """What every command prints as JSON parses with a parser that refuses NaN and Infinity."""
    import numpy as np

    from probrank.cli._parsing import strict_json

    def refuse(token: str) -> None:
        raise ValueError(token)

    data = {"min_ess": float("nan"), "rate": np.float32("inf"), "n": np.int64(3), "ok": [0.5]}
    assert json.loads(strict_json(data), parse_constant=refuse) == {
        "min_ess": None,
        "rate": None,
        "n": 3,
        "ok": [0.5],
    }


def test_a_config_cache_dir_of_empty_means_no_cache_and_the_command_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from probrank.encoders.config import encoder_cache_dir

    assert encoder_cache_dir({"cache_dir": ""}, None) is None
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.trec").write_text("<DOC>\n<DOCNO> d1 </DOCNO>\nhello\n</DOC>\n")
    assert main(["encode", str(tmp_path / "d.trec"), "--cache-dir", ""]) == 2
    assert "means no cache" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.trec"]
