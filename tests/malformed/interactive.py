"""Malformed ``probrank interactive`` command lines, data folders, session logs and configs;
the demo's and the global options."""

from __future__ import annotations

import json
from collections.abc import Mapping

from tests.malformed.inputs import (
    BILLION_LAUGHS,
    FOLDER,
    GOOD_LOG,
    LIVEQA_ANSWERS,
    LIVEQA_QRELS,
    LIVEQA_QUESTIONS,
    LOG_HEADER,
    MEDIQA_FILES,
    QLF,
    RQE_XML,
    CliCase,
    Content,
    judgement,
    liveqa_layout,
    log_text,
    mediqa_layout,
)

# --- interactive -----------------------------------------------------------------------------

HUMAN = ("interactive", "--human", "--data", "synthetic")
LIVEQA_ENV = {"PROBRANK_DATA": "{d}/data"}


def _interactive(
    name: str,
    options: tuple[str, ...],
    *expect: str,
    files: Mapping[str, Content] | None = None,
    env: Mapping[str, str] | None = None,
    process: bool = False,
    hold: str | None = None,
    xfail: str | None = None,
    sentinels: tuple[str, ...] = (),
    absent: tuple[str, ...] = (),
) -> CliCase:
    return CliCase(
        f"interactive-{name}",
        "interactive",
        ("interactive", *options),
        expect,
        dict(files or {}),
        sentinels=sentinels,
        absent=absent,
        env=env or {},
        hold=hold,
        xfail=xfail,
        process=process,
    )


def _resume(
    name: str, log: Content, *expect: str, process: bool = False, xfail: str | None = None
) -> CliCase:
    case = _interactive(
        f"resume-{name}",
        (*HUMAN[1:], "--resume", "{d}/s.log"),
        "{d}/s.log",
        *expect,
        files={} if log is None else {"s.log": log},
        process=process,
        xfail=xfail,
    )
    return case


INTERACTIVE_CASES = [
    _interactive(
        "max-questions-0", ("--max-questions", "0"), "--max-questions: must be a positive"
    ),
    _interactive("max-questions-negative", ("--max-questions", "-1"), "--max-questions"),
    _interactive("rounds-0", ("--rounds", "0"), "argument --rounds: must be a positive integer"),
    _interactive("rounds-negative", ("--rounds", "-1"), "argument --rounds"),
    _interactive(
        "noise-negative", ("--noise", "-1"), "argument --noise: must be a finite number > 0"
    ),
    _interactive("noise-nan", ("--noise", "nan"), "argument --noise", "'nan'", process=True),
    _interactive("noise-inf", ("--noise", "inf"), "argument --noise", "'inf'"),
    _interactive("noise-0", ("--noise", "0"), "argument --noise", "'0'"),
    _interactive("seeds-0", ("--seeds", "0"), "argument --seeds: must be a positive integer"),
    _interactive("seed-negative", (*HUMAN[1:], "--seed", "-1"), "argument --seed"),
    _interactive(
        "unknown-posterior", ("--posterior", "bayes"), "argument --posterior: invalid choice"
    ),
    _interactive("unknown-strategy", ("--strategy", "best"), "argument --strategy: invalid choice"),
    _interactive("unknown-data", ("--data", "trec"), "argument --data: invalid choice: 'trec'"),
    _interactive("human-without-question", HUMAN[1:], "--human needs --question"),
    _interactive(
        "human-unknown-question",
        (*HUMAN[1:], "--question", "TQ999"),
        "no question 'TQ999' in synthetic",
        process=True,
    ),
    _interactive(
        "log-existing-file",
        (*HUMAN[1:], "--question", "T0", "--log", "{d}/s.log"),
        "{d}/s.log",
        "exists already",
        sentinels=("s.log",),
    ),
    _interactive(
        "log-existing-file-gppl",
        (*HUMAN[1:], "--question", "T0", "--posterior", "gppl", "--log", "{d}/s.log"),
        "{d}/s.log",
        "exists already",
        sentinels=("s.log",),
    ),
    _interactive(
        "log-in-missing-folder",
        (*HUMAN[1:], "--question", "T0", "--log", "{d}/missing/s.log"),
        "{d}/missing/s.log",
        "does not exist",
        absent=("missing",),
    ),
    _interactive(
        "log-is-a-folder",
        (*HUMAN[1:], "--question", "T0", "--log", "{d}/logs"),
        "{d}/logs",
        "session log is a folder",
        files={"logs": FOLDER},
    ),
    _interactive(
        "log-and-resume",
        (*HUMAN[1:], "--question", "T0", "--log", "{d}/new.log", "--resume", "{d}/s.log"),
        "--log to start a session or --resume to continue one, not both",
        files={"s.log": GOOD_LOG},
        absent=("new.log",),
    ),
    _resume("missing", None, "session log not found"),
    _resume("folder", FOLDER, "session log is a folder"),
    _resume("empty", "", "no complete header line"),
    _resume(
        "torn-header",
        json.dumps(LOG_HEADER)[:40],
        "no complete header line",
    ),
    _resume("bad-json-line", log_text() + "{not json\n", ":2:", "malformed log line", process=True),
    _resume("line-not-an-object", log_text() + "[1, 2]\n", ":2:", "not an object"),
    _resume("not-a-log", '{"type": "header", "format": "other"}\n', ":1:", "bad header"),
    _resume("wrong-version", log_text(header={**LOG_HEADER, "version": 2}), ":1:", "version 2"),
    _resume(
        "bad-num-candidates",
        log_text(header={**LOG_HEADER, "num_candidates": 1}),
        ":1:",
        "num_candidates",
    ),
    _resume(
        "repeated-pair", log_text(judgement(0, 0, 1), judgement(1, 1, 0)), ":3:", "judged again"
    ),
    _resume("pair-out-of-range", log_text(judgement(0, 0, 4)), ":2:", "bad candidate pair"),
    _resume("wrong-round", log_text(judgement(1, 0, 1)), ":2:", "event round 1, expected 0"),
    _resume("unknown-event", log_text({"type": "undo", "round": 0}), ":2:", "unknown event type"),
    _resume(
        "not-utf8", log_text().encode() + b'{"type": "caf\xe9"}\n', ":2:", "malformed log line"
    ),
    _interactive(
        "resume-locked-by-another-process",
        (*HUMAN[1:], "--resume", "{d}/s.log"),
        "{d}/s.log",
        "in use by another probrank process",
        files={"s.log": GOOD_LOG},
        hold="s.log",
        process=True,
    ),
    _interactive(
        "config-unknown-key",
        ("--data", "synthetic", "--config", "{d}/c.toml"),
        "{d}/c.toml:2:",
        "laplace.scael: unknown key",
        files={"c.toml": "[laplace]\nscael = 1.0\n"},
    ),
    _interactive(
        "config-other-protocol",
        ("--data", "synthetic", "--config", "{d}/c.toml"),
        "{d}/c.toml:2:",
        "this command reads 'interactive' configs",
        files={"c.toml": QLF},
    ),
    _interactive(
        "config-missing",
        ("--data", "synthetic", "--config", "{d}/none.toml"),
        "{d}/none.toml",
        "no such config file",
    ),
    _interactive(
        "config-invalid-toml",
        (*HUMAN[1:], "--question", "T0", "--config", "{d}/c.toml"),
        "{d}/c.toml:1:",
        "invalid TOML",
        files={"c.toml": "[laplace\n"},
    ),
    _interactive(
        "liveqa-questions-empty",
        (),
        "{d}/data/qa/liveqa-med/questions.xml",
        "empty file",
        files=liveqa_layout(questions_xml=""),
        env=LIVEQA_ENV,
        process=True,
    ),
    _interactive(
        "liveqa-questions-malformed-xml",
        (),
        "{d}/data/qa/liveqa-med/questions.xml:4:",
        "malformed XML",
        files=liveqa_layout(questions_xml=LIVEQA_QUESTIONS.replace("</MESSAGE>", "", 1)),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-questions-wrong-root",
        (),
        "{d}/data/qa/liveqa-med/questions.xml",
        "no <NLM-QUESTION> elements",
        files=liveqa_layout(questions_xml=RQE_XML),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-questions-billion-laughs",
        (),
        "{d}/data/qa/liveqa-med/questions.xml",
        "refused unsafe XML",
        files=liveqa_layout(questions_xml=BILLION_LAUGHS),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-qrels-not-utf8",
        (),
        "{d}/data/qa/liveqa-med/qrels.txt:2:",
        "undecodable byte",
        files=liveqa_layout(qrels_txt=b"1 4-Excellent A1\n1 1-Incorrect caf\xe9\n"),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-qrels-superscript-grade",
        (),
        "{d}/data/qa/liveqa-med/qrels.txt:2:",
        "expected 'n grade AnswerID'",
        files=liveqa_layout(qrels_txt="1 4-Excellent A1\n1 \u00b2-Related A2\n"),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-qrels-full-width-grade",
        (),
        "{d}/data/qa/liveqa-med/qrels.txt:1:",
        "expected 'n grade AnswerID'",
        files=liveqa_layout(qrels_txt="1 \uff14-Excellent A1\n1 1-Incorrect A2\n"),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-qrels-unknown-question",
        (),
        "{d}/data/qa/liveqa-med/qrels.txt:5:",
        "with a known question",
        files=liveqa_layout(qrels_txt=LIVEQA_QRELS + "7 4-Excellent A1\n"),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-answers-missing-column",
        (),
        "{d}/data/qa/liveqa-med/answers.csv:1:",
        "missing column 'Answer'",
        files=liveqa_layout(answers_csv="AnswerID,Text\nA1,x\n"),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-answers-missing",
        (),
        "{d}/data/qa/liveqa-med/answers.csv",
        "no such file",
        files=liveqa_layout(answers_csv=None),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-answer-without-text",
        (),
        "{d}/data/qa/liveqa-med/answers.csv",
        "judged answer 'A4' has no text",
        files=liveqa_layout(answers_csv=LIVEQA_ANSWERS.replace("A4,Colds are common.\n", "")),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-no-data-folder", (), "{d}/data/qa/liveqa-med", "PROBRANK_DATA", env=LIVEQA_ENV
    ),
    _interactive("liveqa-split", ("--split", "train"), "liveqa-med has only a test split"),
    _interactive(
        "human-liveqa-questions-folder",
        ("--human", "--question", "TQ1"),
        "{d}/data/qa/liveqa-med/questions.xml",
        "is a directory",
        files=liveqa_layout(questions_xml=FOLDER),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "liveqa-warm-start-data-broken",
        ("--max-questions", "1"),
        "{d}/data/qa/mediqa2019-task3/train-liveqamed.xml",
        "empty file",
        files={**liveqa_layout(), **mediqa_layout(train_liveqamed_xml="")},
        env=LIVEQA_ENV,
    ),
    _interactive(
        "mediqa-empty-split-file",
        ("--data", "mediqa", "--split", "validation"),
        "{d}/data/qa/mediqa2019-task3/validation.xml",
        "empty file",
        files=mediqa_layout(validation_xml=""),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "mediqa-unknown-split",
        ("--data", "mediqa", "--split", "dev"),
        "split must be one of train, validation, test, got 'dev'",
        files=mediqa_layout(),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "mediqa-wrong-root",
        ("--data", "mediqa"),
        "{d}/data/qa/mediqa2019-task3/test-with-labels.xml",
        "no <Question> elements",
        files=mediqa_layout(test_with_labels_xml=LIVEQA_QUESTIONS),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "mediqa-superscript-rank",
        ("--data", "mediqa"),
        "{d}/data/qa/mediqa2019-task3/test-with-labels.xml",
        "SystemRank='\u00b2' is not an integer",
        files=mediqa_layout(
            test_with_labels_xml=MEDIQA_FILES["test-with-labels.xml"].replace(
                'SystemRank="2"', 'SystemRank="\u00b2"'
            )
        ),
        env=LIVEQA_ENV,
    ),
    _interactive(
        "mediqa-split-file-missing",
        ("--data", "mediqa", "--split", "train"),
        "{d}/data/qa/mediqa2019-task3/train-alexa.xml",
        "no such file",
        files=mediqa_layout(train_alexa_xml=None),
        env=LIVEQA_ENV,
    ),
]


# --- demo and global options -----------------------------------------------------------------

DEMO_CASES = [
    CliCase("demo-seed-negative", "demo", ("demo", "--seed", "-1"), ("argument --seed: must be",)),
    CliCase("demo-seed-word", "demo", ("demo", "--seed", "abc"), ("argument --seed", "'abc'")),
    CliCase("demo-seed-too-big", "demo", ("demo", "--seed", "4294967296"), ("argument --seed",)),
    CliCase(
        "demo-output-is-a-file",
        "demo",
        ("demo", "--quick", "-o", "{d}/report"),
        ("{d}/report", "exists and is not a folder"),
        sentinels=("report",),
        process=True,
    ),
    CliCase(
        "demo-output-under-a-file",
        "demo",
        ("demo", "--quick", "-o", "{d}/report/sub"),
        ("{d}/report/sub", "Not a directory"),
        sentinels=("report",),
    ),
    CliCase(
        "demo-unknown-section",
        "demo",
        ("demo", "--sections", "plots"),
        ("argument --sections: invalid choice: 'plots'",),
    ),
    CliCase(
        "demo-sections-without-value",
        "demo",
        ("demo", "--sections"),
        ("argument --sections: expected at least one argument",),
    ),
    CliCase("demo-threads-0", "demo", ("demo", "--threads", "0"), ("argument --threads",)),
    CliCase("demo-threads-word", "demo", ("demo", "--threads", "abc"), ("argument --threads",)),
    CliCase("demo-unknown-option", "demo", ("demo", "--fast"), ("unrecognized arguments: --fast",)),
]

GLOBAL_CASES = [
    CliCase(
        "global-unknown-command",
        "global",
        ("evaluate",),
        ("invalid choice: 'evaluate'",),
        process=True,
    ),
    CliCase("global-no-command", "global", (), ("the following arguments are required: command",)),
    CliCase(
        "global-unknown-option",
        "global",
        ("--colour", "demo"),
        ("unrecognized arguments: --colour",),
    ),
    CliCase("global-threads-0", "global", ("--threads", "0", "demo"), ("argument --threads",)),
    CliCase("global-threads-negative", "global", ("--threads", "-2", "demo"), ("--threads",)),
    CliCase("global-threads-fraction", "global", ("--threads", "1.5", "demo"), ("'1.5'",)),
    CliCase(
        "global-threads-full-width",
        "global",
        ("--threads", "\uff12", "eval", "q", "r"),
        ("argument --threads",),
    ),
    CliCase(
        "global-debug-with-usage-error",
        "global",
        ("--debug", "evaluate"),
        ("invalid choice: 'evaluate'",),
        process=True,
    ),
]
