"""Malformed command lines of ``probrank eval`` and ``probrank fuse``."""

from __future__ import annotations

import gzip

from tests.malformed.inputs import (
    CORRUPT_GZIP,
    FOLDER,
    GOOD_QRELS,
    GOOD_RUN,
    GOOD_RUN_B,
    OVERFLOWING_RUN,
    TRUNCATED_GZIP,
    CliCase,
    Content,
)

# --- eval ------------------------------------------------------------------------------------


def _eval_run(name: str, content: Content, *expect: str, process: bool = False) -> CliCase:
    files: dict[str, Content] = {"qrels": GOOD_QRELS}
    if content is not None:
        files["bad.run"] = content
    return CliCase(
        f"eval-run-{name}",
        "eval",
        ("eval", "{d}/qrels", "{d}/bad.run"),
        ("{d}/bad.run", *expect),
        files,
        process=process,
    )


def _eval_qrels(name: str, content: Content, *expect: str, process: bool = False) -> CliCase:
    files: dict[str, Content] = {"a.run": GOOD_RUN}
    if content is not None:
        files["bad.qrels"] = content
    return CliCase(
        f"eval-qrels-{name}",
        "eval",
        ("eval", "{d}/bad.qrels", "{d}/a.run"),
        ("{d}/bad.qrels", *expect),
        files,
        process=process,
    )


def _eval_option(name: str, options: tuple[str, ...], *expect: str) -> CliCase:
    return CliCase(
        f"eval-option-{name}",
        "eval",
        ("eval", "{d}/qrels", "{d}/a.run", *options),
        expect,
        {"qrels": GOOD_QRELS, "a.run": GOOD_RUN},
    )


def _bayes(name: str, options: tuple[str, ...], *expect: str) -> CliCase:
    """``eval --compare --bayesian`` with a bad option: refused before any sampling."""
    return CliCase(
        f"eval-bayesian-{name}",
        "eval",
        ("eval", "{d}/qrels", "{d}/a.run", "{d}/b.run", "--compare", "--bayesian", *options),
        expect,
        {"qrels": GOOD_QRELS, "a.run": GOOD_RUN, "b.run": GOOD_RUN_B},
    )


GOOD_CRLF = GOOD_RUN.replace("\n", "\r\n")

EVAL_CASES = [
    _eval_run("nbsp", "q1 Q0\u00a0d1 1 2 a\n", ":1:", "U+00A0", process=True),
    _eval_run("ideographic-space", "q1\u3000Q0 d1 1 2 a\n", ":1:", "U+3000"),
    _eval_run("em-space", "q1 Q0 d1\u20031 2 a\n", ":1:", "U+2003"),
    _eval_run("vertical-tab", "q1 Q0 d1 1 2\va\n", ":1:", "U+000B"),
    _eval_run("full-width-digits", "q1 Q0 d1 1 \uff12\uff0e\uff15 a\n", ":1:", "not a number"),
    _eval_run("arabic-indic-digits", "q1 Q0 d1 1 \u0662\u066b\u0665 a\n", ":1:", "not a number"),
    _eval_run("nan", "q1 Q0 d1 1 nan a\n", ":1:", "'nan' is not a number"),
    _eval_run("inf", "q1 Q0 d1 1 inf a\n", ":1:", "'inf' is not a number"),
    _eval_run("minus-infinity", "q1 Q0 d1 1 -Infinity a\n", ":1:", "not a number"),
    _eval_run("1e400", "q1 Q0 d1 1 1e400 a\n", ":1:", "overflows a double"),
    _eval_run("minus-1e400", GOOD_RUN + "q4 Q0 d1 1 -1e400 a\n", ":7:", "overflows a double"),
    _eval_run("hex-score", "q1 Q0 d1 1 0x1p3 a\n", ":1:", "not a number"),
    _eval_run("underscore-score", "q1 Q0 d1 1 1_000 a\n", ":1:", "not a number"),
    _eval_run("dot-score", "q1 Q0 d1 1 . a\n", ":1:", "'.' is not a number"),
    _eval_run("lone-cr", "q1 Q0 d1 1 2 a\rq1 Q0 d2 2 1 a\n", ":1:", "carriage return"),
    _eval_run("lone-cr-after-crlf", GOOD_CRLF + "q4 Q0 d9\r1 2 a\r\n", ":7:", "carriage return"),
    _eval_run("latin-1-byte", b"q1 Q0 d\xe91 1 2 a\n", ":1:", "undecodable byte"),
    _eval_run("utf-16", GOOD_RUN.encode("utf-16"), ":1:", "undecodable byte"),
    _eval_run("nul-byte", GOOD_RUN + "q4 Q0 d1 1 2 a\x00\n", ":7:", "NUL byte"),
    _eval_run("five-columns", "q1 Q0 d1 1 3.5\n", ":1:", "expected 6 columns", process=True),
    _eval_run("one-column", GOOD_RUN + "garbage\n", ":7:", "found 1"),
    _eval_run("qrels-given-as-run", GOOD_QRELS, ":1:", "expected 6 columns"),
    _eval_run("duplicate-document", GOOD_RUN + "q1 Q0 d1 9 0.1 a\n", ":7:", "duplicate document"),
    _eval_run("empty", "", "empty run file"),
    _eval_run("blank-and-comments", "\n  \n# nothing\n", "empty run file"),
    _eval_run("folder", FOLDER, "is a directory"),
    _eval_run("missing", None, "no such file"),
    _eval_run("corrupt-gzip", CORRUPT_GZIP, "corrupt gzip"),
    _eval_run("truncated-gzip", TRUNCATED_GZIP, "corrupt gzip"),
    _eval_run("gzip-nan", gzip.compress(b"q1 Q0 d1 1 nan a\n"), ":1:", "'nan' is not a number"),
    _eval_run("bom-then-bad-line", "\ufeff" + GOOD_RUN + "q4 Q0 d1 1 x a\n", ":7:", "'x'"),
    _eval_qrels("nbsp", "q1 0 d1\u00a01\n", ":1:", "U+00A0"),
    _eval_qrels("ideographic-space", "q1\u30000 d1 1\n", ":1:", "U+3000", process=True),
    _eval_qrels("full-width-grade", "q1 0 d1 \uff11\n", ":1:", "not an integer"),
    _eval_qrels("arabic-indic-grade", "q1 0 d1 \u0661\n", ":1:", "not an integer"),
    _eval_qrels("nan-grade", "q1 0 d1 nan\n", ":1:", "'nan' is not an integer"),
    _eval_qrels("inf-grade", "q1 0 d1 inf\n", ":1:", "'inf' is not an integer"),
    _eval_qrels("1e400-grade", "q1 0 d1 1e400\n", ":1:", "'1e400' is not an integer"),
    _eval_qrels("fractional-grade", GOOD_QRELS + "q4 0 d1 0.5\n", ":7:", "'0.5' is not an"),
    _eval_qrels("one-point-zero-grade", "q1 0 d1 1.0\n", ":1:", "'1.0' is not an integer"),
    _eval_qrels("huge-grade", "q1 0 d1 99999999999999999999\n", ":1:", "out of range"),
    _eval_qrels("lone-cr", "q1 0 d1 1\rq1 0 d2 0\n", ":1:", "carriage return"),
    _eval_qrels("latin-1-byte", b"q1 0 caf\xe9 1\n", ":1:", "undecodable byte"),
    _eval_qrels("nul-byte", "q1 0 d1 1\nq1 0 d2\x00 0\n", ":2:", "NUL byte"),
    _eval_qrels("three-columns", "q1 0 d1\n", ":1:", "expected 4 columns"),
    _eval_qrels("run-given-as-qrels", GOOD_RUN, ":1:", "expected 4 columns"),
    _eval_qrels("judged-twice", GOOD_QRELS + "q1 0 d1 0\n", ":7:", "judged twice"),
    _eval_qrels("empty", "", "empty qrels file"),
    _eval_qrels("folder", FOLDER, "is a directory"),
    _eval_qrels("missing", None, "no such file"),
    _eval_qrels("corrupt-gzip", CORRUPT_GZIP, "corrupt gzip"),
    _eval_option("P@0", ("-m", "P@0"), "'P@0'", "positive integer"),
    _eval_option("nDCG@0", ("-m", "nDCG@0"), "'nDCG@0'", "positive integer"),
    _eval_option("P@-1", ("-m", "P@-1"), "'P@-1'", "positive integer"),
    _eval_option("P.0", ("-m", "P.0"), "'P.0'", "positive integer"),
    _eval_option("full-width-cutoff", ("-m", "P@\uff15"), "positive integer"),
    _eval_option("RBP-p-2", ("-m", "RBP(p=2)"), "'RBP(p=2)'", "(0, 1)"),
    _eval_option("unknown-measure", ("-m", "AP", "NoSuchMeasure"), "unknown measure"),
    _eval_option("empty-measure-name", ("-m", ""), "empty measure name"),
    _eval_option("m-without-value", ("-m",), "-m/--measures: expected at least one argument"),
    _eval_option("M-0", ("-M", "0"), "argument -M/--depth: must be a positive integer"),
    _eval_option("M-negative", ("-M", "-5"), "argument -M/--depth"),
    _eval_option("M-word", ("-M", "all"), "argument -M/--depth"),
    _eval_option("l-negative", ("-l", "-1"), "argument -l/--level: must be an integer >= 0"),
    _eval_option("l-fraction", ("-l", "1.5"), "argument -l/--level"),
    _eval_option("unknown-test", ("--compare", "--test", "z"), "argument --test: invalid choice"),
    _eval_option("bayesian-without-compare", ("--bayesian",), "--bayesian needs --compare"),
    _eval_option("rope-without-bayesian", ("--rope", "0.02"), "--rope: only with --compare"),
    _eval_option("compare-one-run", ("--compare",), "needs a baseline run and at least one"),
    _bayes("rope-zero", ("--rope", "0"), "argument --rope"),
    _bayes("rope-word", ("--rope", "wide"), "argument --rope"),
    _bayes("rope-nan", ("--rope", "nan"), "argument --rope"),
    _bayes("chains-zero", ("--chains", "0"), "argument --chains"),
    _bayes("draws-negative", ("--draws", "-5"), "argument --draws"),
    _bayes("warmup-fraction", ("--warmup", "1.5"), "argument --warmup"),
    _bayes("seed-word", ("--seed", "x"), "argument --seed"),
    _bayes("plot-in-missing-folder", ("--plot", "{d}/no/such/p.png"), "no/such"),
    _bayes("plot-is-a-folder", ("--plot", "{d}"), "is a folder, not a file"),
    _bayes("only-counts", ("-m", "num_q", "num_ret"), "-m gave only counts"),
    _bayes("likelihood-unknown", ("--likelihood", "poisson"), "argument --likelihood"),
    _eval_option(
        "likelihood-without-bayesian", ("--likelihood", "paired"), "--likelihood: only with"
    ),
    CliCase(
        "eval-no-run",
        "eval",
        ("eval", "{d}/qrels"),
        ("the following arguments are required: runs",),
        {"qrels": GOOD_QRELS},
    ),
    CliCase(
        "eval-second-run-bad",
        "eval",
        ("eval", "{d}/qrels", "{d}/a.run", "{d}/b.run", "--compare"),
        ("{d}/b.run:2:", "not a number"),
        {"qrels": GOOD_QRELS, "a.run": GOOD_RUN, "b.run": "q1 Q0 d1 1 2 b\nq1 Q0 d2 2 two b\n"},
    ),
    CliCase(
        "eval-disjoint-topics",
        "eval",
        ("eval", "{d}/qrels", "{d}/a.run"),
        ("share no query",),
        {"qrels": "zz 0 d1 1\n", "a.run": GOOD_RUN},
    ),
]


# --- fuse ------------------------------------------------------------------------------------


def _fuse(
    name: str,
    options: tuple[str, ...],
    *expect: str,
    a: Content = GOOD_RUN,
    b: Content = GOOD_RUN_B,
    qrels: Content = GOOD_QRELS,
    output: str = "fused.run",
    sentinel: bool = True,
    process: bool = False,
    xfail: str | None = None,
) -> CliCase:
    named = (("qrels", qrels), ("a.run", a), ("b.run", b))
    files = {name_: content for name_, content in named if content is not None}
    return CliCase(
        f"fuse-{name}",
        "fuse",
        ("fuse", "{d}/qrels", "{d}/a.run", "{d}/b.run", "-o", f"{{d}}/{output}", *options),
        expect,
        files,
        sentinels=(output,) if sentinel else (),
        absent=() if sentinel else (output,),
        process=process,
        xfail=xfail,
    )


FUSE_CASES = [
    _fuse("depth-0", ("--depth", "0"), "argument --depth: must be a positive integer"),
    _fuse("depth-negative", ("--depth", "-1"), "argument --depth"),
    _fuse("folds-1", ("--method", "qlfusion", "--folds", "1"), "--folds: must be an integer >= 3"),
    _fuse("folds-2", ("--method", "qlfusion", "--folds", "2"), "--folds: must be an integer >= 3"),
    _fuse("folds-word", ("--folds", "ten"), "argument --folds"),
    _fuse("folds-too-many", ("--method", "qlfusion", "--folds", "5"), "3 topics cannot fill 5"),
    _fuse(
        "folds-too-many-plus",
        ("--method", "qlfusion_plus", "--folds", "4"),
        "3 topics cannot fill 4",
        sentinel=False,
    ),
    _fuse("top-runs-0", ("--top-runs", "0"), "argument --top-runs: must be a positive integer"),
    _fuse("seed-negative", ("--seed", "-1"), "argument --seed: must be an integer from 0"),
    _fuse("unknown-method", ("--method", "borda"), "argument --method: invalid choice: 'borda'"),
    _fuse("unknown-norm", ("--norm", "max"), "argument --norm: invalid choice: 'max'"),
    _fuse("unknown-duplicate-policy", ("--on-duplicate", "last"), "argument --on-duplicate"),
    _fuse(
        "output-in-missing-folder",
        (),
        "{d}/missing/fused.run",
        "output folder",
        "does not exist",
        output="missing/fused.run",
        sentinel=False,
        process=True,
    ),
    _fuse(
        "learned-output-in-missing-folder",
        ("--method", "qlfusion", "--folds", "3"),
        "{d}/missing/fused.run",
        "does not exist",
        output="missing/fused.run",
        sentinel=False,
    ),
    _fuse(
        "output-under-a-file",
        (),
        "{d}/qrels/fused.run",
        "not a folder",
        output="qrels/fused.run",
        sentinel=False,
    ),
    CliCase(
        "fuse-output-is-a-folder",
        "fuse",
        ("fuse", "{d}/qrels", "{d}/a.run", "{d}/b.run", "-o", "{d}/out"),
        ("{d}/out", "is a folder"),
        {"qrels": GOOD_QRELS, "a.run": GOOD_RUN, "b.run": GOOD_RUN_B, "out": FOLDER},
    ),
    _fuse("overflow-minmax", (), "{d}/a.run:1:", "1e+308", "overflows", a=OVERFLOWING_RUN),
    _fuse(
        "overflow-zscore",
        ("--norm", "zscore"),
        "{d}/a.run:1:",
        "zscore normalisation",
        a=OVERFLOWING_RUN,
        process=True,
    ),
    _fuse(
        "overflow-zscore-squares",
        ("--norm", "zscore"),
        "{d}/a.run:1:",
        "zscore normalisation",
        a=GOOD_RUN.replace("2.0 a", "1e308 a"),
    ),
    _fuse(
        "overflow-sum", ("--norm", "sum"), "{d}/a.run:1:", "sum normalisation", a=OVERFLOWING_RUN
    ),
    _fuse(
        "overflow-combmnz", ("--method", "combmnz"), "{d}/a.run:1:", "overflows", a=OVERFLOWING_RUN
    ),
    _fuse("overflow-meta", ("--method", "meta"), "{d}/a.run:1:", "overflows", a=OVERFLOWING_RUN),
    _fuse(
        "overflow-qlfusion",
        ("--method", "qlfusion", "--folds", "3"),
        "{d}/a.run:1:",
        "minmax normalisation",
        a=OVERFLOWING_RUN,
    ),
    _fuse(
        "overflow-on-a-later-line",
        (),
        "{d}/b.run:6:",
        "'d5' for query 'q3'",
        b=GOOD_RUN_B.replace("5 b\n", "-1.7e308 b\n").replace(
            "q3 Q0 d5 2 1 b", "q3 Q0 d5 2 1.7e308 b"
        ),
    ),
    _fuse(
        "overflow-after-depth-cut-with-rank-norm-is-fine-but-plus-is-not",
        ("--method", "qlfusion_plus", "--folds", "3"),
        "{d}/a.run:1:",
        "float32 range",
        a=GOOD_RUN.replace("2.0 a", "1e39 a"),
    ),
    _fuse(
        "run-nan", (), "{d}/b.run:3:", "'nan' is not a number", b=GOOD_RUN_B.replace("4 b", "nan b")
    ),
    _fuse(
        "run-duplicate", (), "{d}/a.run:7:", "duplicate document", a=GOOD_RUN + "q1 Q0 d1 3 0 a\n"
    ),
    _fuse(
        "qrels-float-grade", (), "{d}/qrels:1:", "'1.5' is not an integer", qrels="q1 0 d1 1.5\n"
    ),
    _fuse("qrels-missing", (), "{d}/qrels", "no such file", qrels=None),
    _fuse("run-folder", (), "{d}/b.run", "is a directory", b=FOLDER),
    _fuse("run-corrupt-gzip", (), "{d}/a.run", "corrupt gzip", a=CORRUPT_GZIP),
    CliCase(
        "fuse-two-runs-one-name",
        "fuse",
        ("fuse", "{d}/qrels", "{d}/x/a.run", "{d}/y/a.run", "-o", "{d}/fused.run"),
        ("run names must be distinct",),
        {"qrels": GOOD_QRELS, "x/a.run": GOOD_RUN, "y/a.run": GOOD_RUN_B},
        sentinels=("fused.run",),
    ),
    CliCase(
        "fuse-no-output-option",
        "fuse",
        ("fuse", "{d}/qrels", "{d}/a.run"),
        ("the following arguments are required: -o/--output",),
        {"qrels": GOOD_QRELS, "a.run": GOOD_RUN},
    ),
]
