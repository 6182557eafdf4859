"""Bad input to ``probrank serve --pool``: one line ``probrank: error: ...``, exit code 2, and
no database file left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probrank.cli import main
from tests.serve.pool_helpers import PoolFiles, vaswani_pool  # noqa: F401


def _fails(args: list[str], capsys: pytest.CaptureFixture[str], *expected: str) -> None:
    assert main(["serve", "--port", "0", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("probrank: error: ") and err.count("\n") == 1, err
    for text in expected:
        assert text in err, err


def test_bad_input_is_one_line_and_exit_2(
    vaswani_pool: PoolFiles,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "pool.sqlite"
    good = ["--topics", str(vaswani_pool.topics), "--docs", str(vaswani_pool.docs)]
    base = ["--pool", str(vaswani_pool.runs), *good, "--db", str(db)]
    _fails(["--pool", str(tmp_path / "nope"), *good, "--db", str(db)], capsys,
           "nope: no such folder of runs")  # fmt: skip
    _fails(["--pool", str(vaswani_pool.topics), *good, "--db", str(db)], capsys,
           "takes a folder of TREC runs, not a file")  # fmt: skip
    empty = tmp_path / "empty"
    empty.mkdir()
    _fails(["--pool", str(empty), *good, "--db", str(db)], capsys, "holds no run")
    malformed = tmp_path / "topics.txt"
    malformed.write_text("1\tfine topic\n2\n", encoding="utf-8")
    _fails([*base, "--topics", str(malformed)], capsys, f"{malformed}:2: expected")
    _fails([*base, "--strategy", "no-such"], capsys, "--strategy must be one of", "bayesian")
    _fails([*base, "--strategy", "eubo"], capsys, "--strategy with --pool must be one of")
    _fails(["--pool", str(vaswani_pool.runs), "--docs", str(vaswani_pool.docs), "--db", str(db)],
           capsys, "--pool needs --topics")  # fmt: skip
    _fails([*base, "--run", "x.run"], capsys, "it takes no --run")
    notarun = tmp_path / "runs"
    notarun.mkdir()
    (notarun / "broken").write_text("1 Q0 d1 1\n", encoding="utf-8")
    _fails(["--pool", str(notarun), *good, "--db", str(db)], capsys, "broken:1:")
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"docno": "1", "text": "one document"}) + "\n", encoding="utf-8")
    _fails([*base, "--docs", str(docs)], capsys, "no text for document")
    _fails([*base, "--db", str(tmp_path / "missing" / "x.sqlite")], capsys,
           "the database's folder does not exist")  # fmt: skip
    assert not db.exists()  # nothing written
    other = tmp_path / "other.sqlite"
    other.write_bytes(b"not a database at all, but someone's file")
    _fails([*base, "--db", str(other)], capsys, "is not a SQLite database")
    assert other.read_bytes().startswith(b"not a database")


def test_a_pairwise_strategy_name_is_not_a_pool_one_and_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--data", str(tmp_path / "q.jsonl"), "--strategy", "mtf"]
    _fails([*args, "--db", str(tmp_path / "x.sqlite")], capsys, "--strategy (without --pool)")
