"""Issue 27's command lines: the surfaces added after issue 14 (the bounds of every integer
option, encode's model, cache and executor options, ``experiment --out`` and Ray addresses),
one group per class of the issue; the library calls are in :mod:`tests.malformed.saved`."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.malformed.experiment import _experiment
from tests.malformed.inputs import FOLDER, QLF, CliCase, Content

HUGE = "9" * 5000
"""An integer of 5000 digits (Python's ``int`` refuses more than 4300 with a ValueError)."""
CLOSED_PORT = "127.0.0.1:1"
"""A Ray address where nothing listens (port 1 on this machine: refused at once)."""
GOOD_TREC = "<DOC>\n<DOCNO> d1 </DOCNO>\nhello\n</DOC>\n"
GOOD_QRELS = "q1 0 d1 1\n"
GOOD_RUN = "q1 Q0 d1 1 2.0 a\n"


def _cli(
    name: str,
    command: str,
    argv: tuple[str, ...],
    *expect: str,
    files: dict[str, Content] | None = None,
    sentinels: tuple[str, ...] = (),
    absent: tuple[str, ...] = (),
    process: bool = False,
) -> CliCase:
    return CliCase(
        f"{command}-{name}",
        command,
        argv,
        expect,
        files or {},
        sentinels=sentinels,
        absent=absent,
        process=process,
    )


def _encode(name: str, options: tuple[str, ...], *expect: str, **kw: Any) -> CliCase:
    files = {"docs.trec": GOOD_TREC, **kw.pop("files", {})}
    argv = ("encode", "{d}/docs.trec", *options)
    if "--cache-dir" not in options:
        argv += ("--cache-dir", "{d}/cache")
        kw.setdefault("absent", ("cache",))
    return _cli(name, "encode", argv, *expect, files=files, **kw)


def _eval(name: str, options: tuple[str, ...], *expect: str) -> CliCase:
    return _cli(
        name,
        "eval",
        ("eval", "{d}/q", "{d}/a.run", "{d}/b.run", *options),
        *expect,
        files={"q": GOOD_QRELS, "a.run": GOOD_RUN, "b.run": GOOD_RUN.replace(" a\n", " b\n")},
    )


BERT = {
    "model_type": "bert",
    "hidden_size": 8,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 8,
    "vocab_size": 30,
    "max_position_embeddings": 16,
}


def _model(config: Content) -> dict[str, Content]:
    return {"m/config.json": config}


SURFACE_CLI_CASES = [
    # 1. one validation layer: every integer has a bound, checked before any work
    _experiment(
        "seeds-trillion",
        QLF,
        "argument --seeds: must be a positive integer, got '1000000000000' (at most 1000)",
        options=("--smoke", "--seeds", "1000000000000"),
    ),
    _experiment(
        "seeds-5000-digits",
        QLF,
        "argument --seeds",
        "an integer of 5000 digits",
        options=("--smoke", "--seeds", HUGE),
    ),
    _experiment("seeds-exponent", QLF, "argument --seeds", "'1e20'", options=("--seeds", "1e20")),
    _cli(
        "seeds-5000-digits",
        "interactive",
        ("interactive", "--seeds", HUGE),
        "argument --seeds",
        "5000 digits",
    ),
    _cli(
        "rounds-million",
        "interactive",
        ("interactive", "--rounds", "1000000"),
        "argument --rounds: must be a positive integer, got '1000000' (at most 100000)",
    ),
    _cli(
        "max-questions-5000-digits",
        "interactive",
        ("interactive", "--max-questions", HUGE),
        "argument --max-questions",
    ),
    _eval("depth-5000-digits", ("-M", HUGE), "argument -M/--depth", "5000 digits"),
    _eval("level-5000-digits", ("-l", HUGE), "argument -l/--level", "5000 digits"),
    _eval(
        "chains-thousand",
        ("--compare", "--bayesian", "--chains", "1000"),
        "argument --chains: must be a positive integer, got '1000' (at most 64)",
    ),
    _eval("draws-5000-digits", ("--compare", "--bayesian", "--draws", HUGE), "argument --draws"),
    _cli(
        "threads-5000-digits",
        "global",
        ("--threads", HUGE, "eval", "{d}/q", "{d}/a.run"),
        "argument --threads",
        "5000 digits",
        files={"q": GOOD_QRELS, "a.run": GOOD_RUN},
    ),
    _cli(
        "threads-million",
        "global",
        ("eval", "{d}/q", "{d}/a.run", "--threads", "1000000"),
        "argument --threads: must be a positive integer, got '1000000' (at most 4096)",
        files={"q": GOOD_QRELS, "a.run": GOOD_RUN},
    ),
    _cli(
        "seed-5000-digits",
        "demo",
        ("demo", "--seed", HUGE, "-o", "{d}/out"),
        "argument --seed",
        "5000 digits",
        absent=("out",),
    ),
    _encode("batch-size-huge", ("--batch-size", "99999999999"), "argument --batch-size"),
    _encode("max-documents-5000-digits", ("--max-documents", HUGE), "argument --max-documents"),
    # ... and against the model and the executor before any work
    _encode(
        "max-length-beyond-positions",
        ("--max-length", "6408"),
        "--max-length 6408 is more than the 512 positions",
        process=True,
    ),
    _encode(
        "max-length-beyond-small-model",
        ("--model", "{d}/m", "--max-length", "17"),
        "{d}/m",
        "--max-length 17 is more than the 16 positions",
        files=_model(json.dumps(BERT)),
    ),
    _encode(
        "workers-local",
        ("--workers", "3"),
        "--workers: only with --executor ray",
        "executor is 'local'",
    ),
    _encode(
        "threads-per-worker-local",
        ("--threads-per-worker", "2"),
        "--threads-per-worker: only with --executor ray",
    ),
    # 2. sentences, not internal exception types
    _cli(
        "jsonl-5000-digit-number",
        "encode",
        ("encode", "{d}/docs.jsonl", "--cache-dir", "{d}/cache"),
        "{d}/docs.jsonl:2:",
        "a number with too many digits",
        files={"docs.jsonl": '{"docno": "a", "text": "x"}\n{"docno": "b", "n": ' + HUGE + "}\n"},
        absent=("cache",),
    ),
    _encode(
        "model-config-unknown-type",
        ("--model", "{d}/m"),
        "{d}/m/config.json",
        "field 'model_type' is 'nonsense'",
        files=_model('{"model_type": "nonsense"}'),
    ),
    _encode(
        "model-config-no-type",
        ("--model", "{d}/m"),
        "{d}/m/config.json",
        "'model_type' is missing",
        files=_model('{"hidden_size": 8}'),
    ),
    _encode(
        "model-config-garbage",
        ("--model", "{d}/m"),
        "{d}/m/config.json",
        "invalid JSON",
        files=_model(b"\x00garbage{"),
    ),
    _encode(
        "model-config-not-utf8",
        ("--model", "{d}/m"),
        "{d}/m/config.json",
        "not UTF-8",
        files=_model(b'{"model_type": "b\xe9rt"}'),
    ),
    _encode(
        "model-config-a-list",
        ("--model", "{d}/m"),
        "{d}/m/config.json",
        "expected a JSON object, got list",
        files=_model("[1, 2]"),
    ),
    _encode(
        "model-config-size-a-string",
        ("--model", "{d}/m"),
        "{d}/m/config.json",
        "field 'hidden_size' must be a positive integer",
        files=_model(json.dumps({**BERT, "hidden_size": "big"})),
    ),
    _encode(
        "model-config-positions-negative",
        ("--model", "{d}/m"),
        "field 'max_position_embeddings'",
        files=_model(json.dumps({**BERT, "max_position_embeddings": -5})),
    ),
    _encode(
        "model-config-huge-number",
        ("--model", "{d}/m"),
        "{d}/m/config.json",
        "huge number",
        files=_model('{"model_type": "bert", "vocab_size": ' + HUGE + "}"),
    ),
    _encode(
        "model-no-config",
        ("--model", "{d}/m"),
        "{d}/m",
        "no config.json",
        files={"m": FOLDER},
    ),
    _encode("model-empty-name", ("--model", ""), "--model ''"),
    # 4. files: nothing written into the working folder, nothing before every check passed
    _encode(
        "cache-dir-empty",
        ("--cache-dir", ""),
        "--cache-dir ''",
        "means no cache",
    ),
    _encode(
        "cache-dir-blank",
        ("--cache-dir", "  "),
        "--cache-dir ''",
    ),
    _encode(
        "cache-dir-is-a-file",
        ("--cache-dir", "{d}/cache"),
        "{d}/cache",
        "the path is a file, not a cache folder",
        sentinels=("cache",),
    ),
    _encode(
        "cache-dir-under-a-file",
        ("--cache-dir", "{d}/f/cache"),
        "a parent of the cache folder is a file",
        sentinels=("f",),
    ),
    replace(
        _experiment(
            "out-is-a-file",
            QLF,
            "{d}/out.json",
            "the path is a file, not a run folder (--out)",
            options=("--smoke", "--out", "{d}/out.json"),
        ),
        sentinels=("out.json",),
    ),
    _experiment(
        "out-empty",
        QLF,
        "run folder (--out) name is empty",
        options=("--smoke", "--out", ""),
    ),
    # 5. network options time out with a clear message
    _experiment(
        "ray-address-nothing-listening",
        QLF,
        f"cannot join the Ray cluster '{CLOSED_PORT}'",
        "timeout",
        options=("--smoke", "--executor", "ray", "--ray-address", CLOSED_PORT),
        process=True,
    ),
    _experiment(
        "ray-address-no-port",
        QLF,
        "a Ray address is 'auto', 'host:port' or 'ray://host:port'",
        options=("--smoke", "--executor", "ray", "--ray-address", "headnode"),
    ),
    _experiment(
        "ray-address-port-out-of-range",
        QLF,
        "with a port from 1 to 65535",
        options=("--smoke", "--executor", "ray", "--ray-address", "ray://host:99999"),
    ),
    _encode(
        "ray-address-nothing-listening",
        ("--executor", "ray", "--ray-address", CLOSED_PORT),
        "cannot join the Ray cluster",
    ),
    replace(
        _encode(
            "ray-address-timeout-variable",
            ("--executor", "ray", "--ray-address", "127.0.0.1:2"),
            "$PROBRANK_RAY_CONNECT_TIMEOUT must be a number of seconds > 0",
        ),
        env={"PROBRANK_RAY_CONNECT_TIMEOUT": "nan"},
    ),
]
