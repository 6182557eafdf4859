"""Malformed ``probrank encode`` command lines (the collection and the options), and the
executor options of ``probrank experiment``: each fails before any model is loaded."""

from __future__ import annotations

from tests.malformed.experiment import _experiment
from tests.malformed.inputs import FOLDER, QLF, CliCase, Content

GOOD_TREC = "<DOC>\n<DOCNO> d1 </DOCNO>\nhello\n</DOC>\n"
GOOD_JSONL = '{"docno": "a", "text": "x"}\n'


def _encode(name: str, files: dict[str, Content], args: tuple[str, ...], *expect: str) -> CliCase:
    return CliCase(
        f"encode-{name}",
        "encode",
        ("encode", *args, "--cache-dir", "{d}/cache"),
        expect,
        files,
        absent=("cache",),
    )


def _option(name: str, options: tuple[str, ...], *expect: str) -> CliCase:
    return _encode(name, {"docs.trec": GOOD_TREC}, ("{d}/docs.trec", *options), *expect)


ENCODE_CASES = [
    _encode("missing", {}, ("{d}/none.trec",), "{d}/none.trec", "no such file"),
    _encode("folder", {"docs": FOLDER}, ("{d}/docs",), "is a directory"),
    _encode("empty", {"docs.trec": ""}, ("{d}/docs.trec",), "docs.trec: no documents"),
    _encode(
        "open-doc",
        {"docs.trec": GOOD_TREC.replace("</DOC>\n", "")},
        ("{d}/docs.trec",),
        "{d}/docs.trec:1:",
        "ends inside a <DOC> element",
    ),
    _encode(
        "jsonl-no-text",
        {"docs.jsonl": '{"docno": "a"}\n'},
        ("{d}/docs.jsonl",),
        "{d}/docs.jsonl:1:",
        "'text' must be a string",
    ),
    _encode(
        "jsonl-bad-line",
        {"docs.jsonl": GOOD_JSONL + "{oops\n"},
        ("{d}/docs.jsonl",),
        "{d}/docs.jsonl:2:",
        "invalid JSON",
    ),
    _encode(
        "jsonl-two-files",
        {"a.jsonl": GOOD_JSONL, "b.jsonl": GOOD_JSONL},
        ("{d}/a.jsonl", "{d}/b.jsonl", "--format", "jsonl"),
        "--format jsonl reads one file",
    ),
    _option("executor", ("--executor", "spark"), "argument --executor: invalid choice"),
    _option("workers-0", ("--workers", "0"), "argument --workers: must be a positive integer"),
    _option("max-length-0", ("--max-length", "0"), "argument --max-length"),
    _option("batch-size-negative", ("--batch-size", "-1"), "argument --batch-size"),
    _option("threads-per-worker-0", ("--threads-per-worker", "0"), "--threads-per-worker"),
    _option("max-documents-word", ("--max-documents", "x"), "argument --max-documents"),
    _option("pooling", ("--pooling", "max"), "argument --pooling: invalid choice"),
    _option("ray-address-local", ("--ray-address", "auto"), "executor is 'local'"),
]

EXECUTOR_CASES = [
    _experiment(
        "executor-unknown",
        QLF,
        "argument --executor: invalid choice",
        options=("--smoke", "--executor", "spark"),
    ),
    _experiment(
        "ray-address-local",
        QLF,
        "executor is 'local'",
        options=("--smoke", "--ray-address", "auto"),
    ),
]
