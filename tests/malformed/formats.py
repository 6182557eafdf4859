"""Malformed input to file readers that no command reaches: TREC topics, candidate lists (JSONL
and DataFrame), session logs read directly, MEDIQA keys; configs through the API."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.malformed.inputs import (
    CANDIDATES,
    CORRUPT_GZIP,
    FOLDER,
    GOOD_CANDIDATES,
    GOOD_RUN,
    TOPICS,
    LoaderCase,
    judgement,
    log_text,
)


def _topics_api(folder: Path) -> object:
    from probrank.data.topics import read_topics

    return read_topics(folder / "topics.txt")


def _jsonl_api(folder: Path) -> object:
    from probrank.data.candidates import CandidateList

    return CandidateList.from_jsonl(folder / "lists.jsonl")


def _frame_api(rows: list[dict[str, Any]], **options: Any) -> Callable[[Path], object]:
    def call(folder: Path) -> object:
        import pandas as pd

        from probrank.data.candidates import CandidateList

        frame = pd.DataFrame(rows, columns=list(rows[0]) if rows else [*ROW, "label"])
        return CandidateList.from_dataframe(frame, **options)

    return call


def _log_api(folder: Path) -> object:
    from probrank.interactive.log import read_log

    return read_log(folder / "s.log")


def _keys_api(folder: Path) -> object:
    from probrank.evaluation.mediqa import read_mediqa_rows

    return read_mediqa_rows(folder / "key.csv")


def _run_api(**options: Any) -> Callable[[Path], object]:
    def call(folder: Path) -> object:
        from probrank.data.trec import Run

        return Run.read(folder / "r.run", **options)

    return call


def _qrels_api(folder: Path) -> object:
    from probrank.data.trec import Qrels

    return Qrels.read(folder / "q.qrels")


def _config_api(protocol: str | None = None) -> Callable[[Path], object]:
    def call(folder: Path) -> object:
        from probrank.experiments import load_config

        return load_config(folder / "c.toml", protocol=protocol)

    return call


ROW = {"qid": "q1", "query": "What is flu?", "candidate_id": "a", "candidate": "A virus."}


def _rows(*changes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**ROW, "label": 1}, *({**ROW, "candidate_id": "b", "label": 0, **c} for c in changes)]


def _jsonl(*records: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def _list(**changes: Any) -> dict[str, Any]:
    return {**json.loads(GOOD_CANDIDATES), **changes}


FORMAT_CASES = [
    # TREC topics
    LoaderCase("topics-missing", "trec_topics", _topics_api, ("{d}/topics.txt", "no such file")),
    LoaderCase(
        "topics-empty",
        "trec_topics",
        _topics_api,
        ("{d}/topics.txt", "no topics found"),
        {"topics.txt": "\n\n"},
    ),
    LoaderCase(
        "topics-top-without-num",
        "trec_topics",
        _topics_api,
        ("{d}/topics.txt:9:", "without a <num>"),
        {"topics.txt": TOPICS + "<top>\n<title> x\n</top>\n"},
    ),
    LoaderCase(
        "topics-no-title",
        "trec_topics",
        _topics_api,
        ("{d}/topics.txt:1:", "no <title> text"),
        {"topics.txt": "<top>\n<num> 301\n<title>\n</top>\n"},
    ),
    LoaderCase(
        "topics-duplicate-sgml",
        "trec_topics",
        _topics_api,
        ("{d}/topics.txt:9:", "appears twice"),
        {"topics.txt": TOPICS + "<top>\n<num> 301\n<title> again\n</top>\n"},
    ),
    LoaderCase(
        "topics-line-without-text",
        "trec_topics",
        _topics_api,
        ("{d}/topics.txt:2:", "expected 'query_id<TAB>text'"),
        {"topics.txt": "301\tflu\n302\n"},
    ),
    LoaderCase(
        "topics-duplicate-lines",
        "trec_topics",
        _topics_api,
        ("{d}/topics.txt:2:", "appears twice"),
        {"topics.txt": "301\tflu\n301\tcold\n"},
    ),
    LoaderCase(
        "topics-not-utf8",
        "trec_topics",
        _topics_api,
        ("{d}/topics.txt:1:", "undecodable byte"),
        {"topics.txt": b"301\tcaf\xe9\n"},
    ),
    # TREC runs and qrels through the API (the CLI cases cover the parser itself)
    LoaderCase(
        "run-unknown-duplicate-policy",
        "trec_run",
        _run_api(on_duplicate="last"),
        ("on_duplicate must be one of",),
        {"r.run": GOOD_RUN},
    ),
    LoaderCase(
        "run-gzip-of-empty",
        "trec_run",
        _run_api(),
        ("{d}/r.run", "empty run file"),
        {"r.run": gzip.compress(b"")},
    ),
    LoaderCase(
        "qrels-gzip-lone-cr",
        "trec_qrels",
        _qrels_api,
        ("{d}/q.qrels:2:", "carriage return"),
        {"q.qrels": gzip.compress(b"q1 0 d1 1\nq1 0 d2\r0\n")},
    ),
    LoaderCase(
        "qrels-form-feed",
        "trec_qrels",
        _qrels_api,
        ("{d}/q.qrels:1:", "U+000C"),
        {"q.qrels": "q1 0 d1\f1\n"},
    ),
    # candidate lists, JSONL
    LoaderCase(
        "jsonl-missing", "candidates_jsonl", _jsonl_api, ("{d}/lists.jsonl", "no such file")
    ),
    LoaderCase(
        "jsonl-empty",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl", "no candidate lists"),
        {"lists.jsonl": ""},
    ),
    LoaderCase(
        "jsonl-blank-lines",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl", "no candidate lists"),
        {"lists.jsonl": "\n \n"},
    ),
    LoaderCase(
        "jsonl-invalid-json",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:2:", "invalid JSON"),
        {"lists.jsonl": _jsonl(GOOD_CANDIDATES, "{'qid': 1}")},
    ),
    LoaderCase(
        "jsonl-deeply-nested",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "invalid JSON"),
        {"lists.jsonl": "[" * 100_000 + "\n"},
    ),
    LoaderCase(
        "jsonl-not-an-object",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "expected a JSON object"),
        {"lists.jsonl": "[1, 2]\n"},
    ),
    LoaderCase(
        "jsonl-missing-keys",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "missing keys ['query']"),
        {"lists.jsonl": _jsonl({"qid": "q1", "candidates": []})},
    ),
    LoaderCase(
        "jsonl-candidates-not-a-list",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "must be a list of objects"),
        {"lists.jsonl": _jsonl(_list(candidates="a b"))},
    ),
    LoaderCase(
        "jsonl-no-candidates",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "has no candidates"),
        {"lists.jsonl": _jsonl(_list(candidates=[]))},
    ),
    LoaderCase(
        "jsonl-label-for-some",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "'label' given for some candidates only"),
        {"lists.jsonl": CANDIDATES + "\n"},
    ),
    LoaderCase(
        "jsonl-label-2",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "labels must be 0 or 1, got 2"),
        {"lists.jsonl": GOOD_CANDIDATES.replace('"label": 1', '"label": 2') + "\n"},
    ),
    LoaderCase(
        "jsonl-label-nan",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "must be an integer, got nan"),
        {"lists.jsonl": GOOD_CANDIDATES.replace('"label": 1', '"label": NaN') + "\n"},
    ),
    LoaderCase(
        "jsonl-huge-grade-label",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "labels must be 0 or 1"),
        {"lists.jsonl": GOOD_CANDIDATES.replace('"label": 1', '"label": 1' + "0" * 400) + "\n"},
    ),
    LoaderCase(
        "jsonl-duplicate-qid",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:2:", "appears twice (first on line 1)"),
        {"lists.jsonl": _jsonl(GOOD_CANDIDATES, GOOD_CANDIDATES)},
    ),
    LoaderCase(
        "jsonl-duplicate-candidate",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "candidate id 'a' appears twice"),
        {"lists.jsonl": GOOD_CANDIDATES.replace('"id": "b"', '"id": "a"') + "\n"},
    ),
    LoaderCase(
        "jsonl-text-not-a-string",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:1:", "must be a string"),
        {"lists.jsonl": GOOD_CANDIDATES.replace('"No."', "5") + "\n"},
    ),
    LoaderCase(
        "jsonl-not-utf8",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl:2:", "undecodable byte"),
        {"lists.jsonl": GOOD_CANDIDATES.encode() + b'\n{"qid": "caf\xe9"}\n'},
    ),
    LoaderCase(
        "jsonl-corrupt-gzip",
        "candidates_jsonl",
        _jsonl_api,
        ("{d}/lists.jsonl", "corrupt gzip"),
        {"lists.jsonl": CORRUPT_GZIP},
    ),
    # candidate lists, DataFrame (no file: the message names the row)
    LoaderCase(
        "frame-missing-column",
        "candidates_frame",
        _frame_api([{"qid": "q1", "query": "x"}]),
        ("missing columns",),
    ),
    LoaderCase("frame-no-rows", "candidates_frame", _frame_api([]), ("the DataFrame has no rows",)),
    LoaderCase(
        "frame-nan-qid",
        "candidates_frame",
        _frame_api(_rows({"qid": float("nan")})),
        ("row 1", "missing 'qid'"),
    ),
    LoaderCase(
        "frame-two-query-texts",
        "candidates_frame",
        _frame_api(_rows({"query": "Other?"})),
        ("row 1", "has two texts"),
    ),
    LoaderCase(
        "frame-duplicate-candidate",
        "candidates_frame",
        _frame_api(_rows({"candidate_id": "a"})),
        ("row 1", "also in row 0"),
    ),
    LoaderCase(
        "frame-label-2",
        "candidates_frame",
        _frame_api(_rows({"label": 2})),
        ("labels must be 0 or 1, got 2",),
    ),
    LoaderCase(
        "frame-label-fraction",
        "candidates_frame",
        _frame_api(_rows({"label": 0.5})),
        ("row 1", "'label' must be an integer, got 0.5"),
    ),
    LoaderCase(
        "frame-text-not-a-string",
        "candidates_frame",
        _frame_api(_rows({"candidate": None})),
        ("row 1", "must be a string"),
    ),
    # session logs, read without the CLI
    LoaderCase("log-missing", "session_log", _log_api, ("{d}/s.log", "session log not found")),
    LoaderCase(
        "log-folder",
        "session_log",
        _log_api,
        ("{d}/s.log", "session log is a folder"),
        {"s.log": FOLDER},
    ),
    LoaderCase(
        "log-skip-after-judgement",
        "session_log",
        _log_api,
        ("{d}/s.log:3:", "skipped after it was asked on line 2"),
        {
            "s.log": log_text(
                judgement(0, 0, 1), {"type": "skip", "round": 1, "pair": [1, 0], "time": 0.0}
            )
        },
    ),
    # MEDIQA keys
    LoaderCase(
        "keys-two-columns",
        "mediqa_keys",
        _keys_api,
        ("{d}/key.csv:2:", "expected 3 comma-separated columns"),
        {"key.csv": "1,1_1,1\n1,1_2\n"},
    ),
    LoaderCase(
        "keys-bad-label",
        "mediqa_keys",
        _keys_api,
        ("{d}/key.csv:1:", "label 'yes' is not 0 or 1"),
        {"key.csv": "1,1_1,yes\n"},
    ),
    LoaderCase(
        "keys-header-only",
        "mediqa_keys",
        _keys_api,
        ("{d}/key.csv", "no rows"),
        {"key.csv": "question_id,answer_id,label\n"},
    ),
    LoaderCase(
        "keys-not-utf8",
        "mediqa_keys",
        _keys_api,
        ("{d}/key.csv:1:", "undecodable byte"),
        {"key.csv": b"1,caf\xe9,1\n"},
    ),
    # experiment configs through the API
    LoaderCase(
        "config-wrong-protocol-for-caller",
        "experiment_config",
        _config_api("interactive"),
        ("{d}/c.toml:2:", "reads 'interactive' configs"),
        {"c.toml": '[experiment]\nprotocol = "gpf_ranker"\n'},
    ),
    LoaderCase(
        "config-bool-for-int",
        "experiment_config",
        _config_api(),
        ("{d}/c.toml:3:", "experiment.threads"),
        {"c.toml": '[experiment]\nprotocol = "interactive"\nthreads = true\n'},
    ),
]
