"""What the malformed-input cases are made of: the case records and the good inputs they break
(each checked to load by a positive control in ``tests/test_malformed_corpus.py``)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SENTINEL = b"sentinel bytes: a failed command must leave this file as it was\n"
FOLDER = object()
"""A ``files`` value: make a folder at that path."""

Content = str | bytes | object


@dataclass(frozen=True)
class CliCase:
    """One malformed command line.

    Attributes:
        id: Unique name (the pytest id).
        command: The command (or ``global``) it exercises, for the per-command counts.
        argv: The arguments of ``probrank``.
        expect: Fragments of the one error line (``{d}`` is the case's folder).
        files: The case's folder: ``relative path -> content``.
        sentinels: Output paths pre-created with :data:`SENTINEL`, to stay unchanged.
        absent: Output paths that must not exist afterwards.
        env: Environment variables of the run.
        hold: A session log held locked (by this test process) while the command runs.
        xfail: A known defect (the case is ``xfail(strict=True)``).
        process: Also run as a real subprocess.
    """

    id: str
    command: str
    argv: tuple[str, ...]
    expect: tuple[str, ...]
    files: Mapping[str, Content] = field(default_factory=dict)
    sentinels: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    hold: str | None = None
    xfail: str | None = None
    process: bool = False


@dataclass(frozen=True)
class LoaderCase:
    """One malformed input given to a loader's API (``call(folder)`` must raise
    ``InputDataError`` with one line holding every ``expect`` fragment)."""

    id: str
    loader: str
    call: Callable[[Path], object]
    expect: tuple[str, ...]
    files: Mapping[str, Content] = field(default_factory=dict)


# --- good inputs -----------------------------------------------------------------------------

GOOD_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\nq2 0 d4 0\nq3 0 d1 1\nq3 0 d5 0\n"
GOOD_RUN = (
    "q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq2 Q0 d3 1 1.5 a\nq2 Q0 d4 2 0.5 a\n"
    "q3 Q0 d5 1 0.9 a\nq3 Q0 d1 2 0.3 a\n"
)
GOOD_RUN_B = (
    "q1 Q0 d2 1 7 b\nq1 Q0 d1 2 3 b\nq2 Q0 d4 1 4 b\nq2 Q0 d3 2 2 b\nq3 Q0 d1 1 5 b\n"
    "q3 Q0 d5 2 1 b\n"
)
OVERFLOWING_RUN = GOOD_RUN.replace("2.0 a", "1e308 a").replace("1.0 a", "-1e308 a")
"""Finite scores whose normalisation overflows a double: 1e308 and -1e308 for q1 (lines 1, 2)."""

LIVEQA_QUESTIONS = """<?xml version="1.0" encoding="UTF-8"?>
<LiveQA2017-Medical-Test-Set-Full>
<NLM-QUESTION qid="TQ1"><Original-Question><SUBJECT>flu</SUBJECT>
<MESSAGE>What is flu?</MESSAGE></Original-Question></NLM-QUESTION>
<NLM-QUESTION qid="TQ2"><Original-Question><SUBJECT>cold</SUBJECT>
<MESSAGE>How long does a cold last?</MESSAGE></Original-Question></NLM-QUESTION>
</LiveQA2017-Medical-Test-Set-Full>
"""
LIVEQA_QRELS = "1 4-Excellent A1\n1 1-Incorrect A2\n2 3-Correct A3\n2 2-Related A4\n"
LIVEQA_ANSWERS = (
    'AnswerID,Answer\nA1,"A virus, spread by droplets."\nA2,No.\nA3,A week or two.\n'
    "A4,Colds are common.\n"
)


def _mediqa_xml(root: str, qid: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<{root}>
<Question QID="{qid}"><QuestionText>What is flu?</QuestionText><AnswerList>
<Answer AID="{qid}_1" SystemRank="1" ReferenceRank="1" ReferenceScore="4">
<AnswerURL>u</AnswerURL><AnswerText>A virus.</AnswerText></Answer>
<Answer AID="{qid}_2" SystemRank="2" ReferenceRank="2" ReferenceScore="1">
<AnswerURL>u</AnswerURL><AnswerText>A bird.</AnswerText></Answer>
</AnswerList></Question>
</{root}>
"""


MEDIQA_FILES = {
    "train-liveqamed.xml": _mediqa_xml("MEDIQA2019-Task3-QA-TrainingSet1-LiveQAMed", "1"),
    "train-alexa.xml": _mediqa_xml("MEDIQA2019-Task3-QA-TrainingSet2-Alexa", "2"),
    "validation.xml": _mediqa_xml("MEDIQA2019-Task3-QA-ValidationSet", "3"),
    "test-with-labels.xml": _mediqa_xml("MEDIQA2019-Task3-QA-TestSet-wLabels", "4"),
    "validation-ground-truth.csv": "3,3_1,1\n3,3_2,0\n",
    "test-ground-truth.csv": "question_id,answer_id,label\n4,4_1,1\n4,4_2,0\n",
}
RQE_XML = """<?xml version="1.0" encoding="UTF-8"?>
<MEDIQA2019-Task2-RQE-TestSet>
<pair pid="1" value="true"><chq>Is flu bad?</chq><faq>Is flu dangerous?</faq></pair>
<pair pid="2" value="false"><chq>Is flu bad?</chq><faq>What is a cold?</faq></pair>
</MEDIQA2019-Task2-RQE-TestSet>
"""
RQE_FILES = {
    "MEDIQA2019-Task2-RQE-TrainingSet-AMIA2016.xml": RQE_XML,
    "MEDIQA2019-Task2-RQE-ValidationSet-AMIA2016.xml": RQE_XML,
    "MEDIQA2019-Task2-RQE-TestSet-wLabels.xml": RQE_XML,
}
MEDQUAD_XML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Document source="S" url="u"><Focus>Flu</Focus>'
    '<QAPairs><QAPair pid="1"><Question qid="1-1" qtype="information">What is flu?</Question>'
    "<Answer>A virus.</Answer></QAPair></QAPairs></Document>\n"
)
UBUNTU_LOG = "".join(f"[12:{k:02d}] <nick{k % 3}> message number {k} here\n" for k in range(30))
UBUNTU_LINKS = "".join(f"{k - 1} {k} -\n" for k in range(1, 30))
TOPICS = "<top>\n<num> Number: 301\n<title> flu\n</top>\n<top>\n<num> 302\n<title> cold\n</top>\n"
CANDIDATES = json.dumps(
    {
        "qid": "q1",
        "query": "What is flu?",
        "candidates": [{"id": "a", "text": "A virus.", "label": 1}, {"id": "b", "text": "No."}],
    }
)
"""One JSONL line that is *not* valid (a label for one candidate only): see GOOD_CANDIDATES."""
GOOD_CANDIDATES = json.dumps(
    {
        "qid": "q1",
        "query": "What is flu?",
        "candidates": [
            {"id": "a", "text": "A virus.", "label": 1},
            {"id": "b", "text": "No.", "label": 0},
        ],
    }
)

LOG_HEADER: dict[str, Any] = {
    "type": "header",
    "format": "probrank-session",
    "version": 1,
    "seed": 0,
    "strategy": "ei",
    "num_candidates": 4,
    "prior_fingerprint": "0",
    "metadata": {"data": "synthetic", "question": "T0", "posterior": "laplace", "seed": 0},
    "created": 0.0,
}


def judgement(round_: int, winner: int, loser: int) -> dict[str, Any]:
    """A judgement event of a session log."""
    return {
        "type": "judgement",
        "round": round_,
        "winner": winner,
        "loser": loser,
        "offered": [winner, loser],
        "time": 0.0,
    }


def log_text(*records: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    """A session log: the header, then ``records``, one JSON object per line."""
    lines = [header if header is not None else LOG_HEADER, *records]
    return "".join(json.dumps(r) + "\n" for r in lines)


GOOD_LOG = log_text(judgement(0, 0, 1), judgement(1, 2, 3))


def liveqa_layout(**broken: Content) -> dict[str, Content]:
    """The LiveQA-Med folder under ``{d}/data`` ($PROBRANK_DATA); ``broken`` replaces files
    (``questions_xml=...``, ``qrels_txt=...``, ``answers_csv=...``; ``None`` removes one)."""
    files = {"questions.xml": LIVEQA_QUESTIONS, "qrels.txt": LIVEQA_QRELS}
    files["answers.csv"] = LIVEQA_ANSWERS
    for key, value in broken.items():
        name = key.replace("_", ".")
        if value is None:
            files.pop(name)
        else:
            files[name] = value
    return {f"data/qa/liveqa-med/{name}": text for name, text in files.items()}


def mediqa_layout(
    prefix: str = "data/qa/mediqa2019-task3", **broken: Content
) -> dict[str, Content]:
    """The MEDIQA Task 3 folder; ``broken`` maps a file name (``-`` and ``.`` as ``_``) to its
    replacement (``None`` removes it)."""
    files: dict[str, Content] = dict(MEDIQA_FILES)
    names = {name.replace("-", "_").replace(".", "_"): name for name in MEDIQA_FILES}
    for key, value in broken.items():
        if value is None:
            files.pop(names[key])
        else:
            files[names[key]] = value
    return {f"{prefix}/{name}": text for name, text in files.items()}


NOT_UTF8_XML = b'<?xml version="1.0" encoding="UTF-8"?>\n<Set>\n<x>caf\xe9</x></Set>\n'
BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    '<!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>\n<lolz>&lol2;</lolz>\n'
)
CORRUPT_GZIP = b"\x1f\x8b" + b"not really gzip" * 4
TRUNCATED_GZIP = gzip.compress(GOOD_RUN.encode())[:-12]


QLF = '[experiment]\nprotocol = "qlfusion_cv"\n\n[data]\npath = "{d}/runs"\n'
GPF = (
    '[experiment]\nprotocol = "gpf_ranker"\nquiet = true\n\n[data]\ntrain = "ubuntu:train"\n'
    'validation = "ubuntu:dev"\ntest = "ubuntu:test"\nubuntu_dir = "{d}/ubuntu"\n'
)
MULTITASK = (
    '[experiment]\nprotocol = "mediqa_multitask"\n\n[data]\nmediqa = "{d}/mediqa"\n'
    'rqe = "{d}/rqe"\nmedquad = "{d}/medquad"\n\n[encoder]\ncache_dir = ""\n'
)
QLF_RUNS = {
    "runs/qrels.txt": GOOD_QRELS,
    "runs/runs/a.run": GOOD_RUN,
    "runs/runs/b.run": GOOD_RUN_B,
}


def ubuntu_layout(split: str, log: Content = UBUNTU_LOG, links: Content = UBUNTU_LINKS) -> dict:
    return {
        f"ubuntu/{split}/2020-01-01.ascii.txt": log,
        f"ubuntu/{split}/2020-01-01.annotation.txt": links,
    }


def multitask_layout(**broken: Content) -> dict[str, Content]:
    files: dict[str, Content] = {**mediqa_layout("mediqa"), "medquad/1_Src/a.xml": MEDQUAD_XML}
    files.update({f"rqe/{name}": text for name, text in RQE_FILES.items()})
    files.update(broken)
    return files
