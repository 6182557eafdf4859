"""Malformed input to the loaders that no command reaches (or reaches only after expensive work)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.malformed.inputs import (
    FOLDER,
    LIVEQA_QUESTIONS,
    MEDIQA_FILES,
    MEDQUAD_XML,
    NOT_UTF8_XML,
    RQE_XML,
    UBUNTU_LOG,
    Content,
    LoaderCase,
    liveqa_layout,
)


def _mediqa_api(split: str = "validation") -> Callable[[Path], object]:
    def call(folder: Path) -> object:
        from probrank.data.datasets.mediqa import load_mediqa

        return load_mediqa(folder / "m", split)

    return call


def _liveqa_api(folder: Path) -> object:
    from probrank.data.datasets.liveqa_med import load_liveqa_med

    return load_liveqa_med(folder / "l")


def _ubuntu_api(folder: Path) -> object:
    from probrank.data.datasets.ubuntu_irc import load_ubuntu_irc

    return load_ubuntu_irc(folder / "u")


def _medquad_api(folder: Path) -> object:
    from probrank.data.datasets.medquad import read_medquad

    return read_medquad(folder / "q", progress=False)


def _rqe_api(folder: Path) -> object:
    from probrank.data.datasets.rqe import read_rqe

    return read_rqe(folder / "r.xml")


def _liveqa_files(**broken: Content) -> dict[str, Content]:
    return {k.replace("data/qa/liveqa-med/", "l/"): v for k, v in liveqa_layout(**broken).items()}


def _mediqa_one(text: Content) -> dict[str, Content]:
    return {"m/validation.xml": text}


MEDIQA_VALID = MEDIQA_FILES["validation.xml"]


DATASET_CASES = [
    # MEDIQA Task 3
    LoaderCase(
        "mediqa-folder-missing", "mediqa", _mediqa_api(), ("{d}/m/validation.xml", "no such file")
    ),
    LoaderCase(
        "mediqa-file-is-folder",
        "mediqa",
        _mediqa_api(),
        ("{d}/m/validation.xml", "is a directory"),
        _mediqa_one(FOLDER),
    ),
    LoaderCase(
        "mediqa-not-utf8",
        "mediqa",
        _mediqa_api(),
        ("{d}/m/validation.xml:3:", "undecodable byte"),
        _mediqa_one(NOT_UTF8_XML),
    ),
    LoaderCase(
        "mediqa-malformed-xml",
        "mediqa",
        _mediqa_api(),
        ("{d}/m/validation.xml:", "malformed XML"),
        _mediqa_one(MEDIQA_VALID[:-40]),
    ),
    LoaderCase(
        "mediqa-no-qid",
        "mediqa",
        _mediqa_api(),
        ("{d}/m/validation.xml", "<Question> without QID"),
        _mediqa_one(MEDIQA_VALID.replace(' QID="3"', "")),
    ),
    LoaderCase(
        "mediqa-no-question-text",
        "mediqa",
        _mediqa_api(),
        ("{d}/m/validation.xml", "<QuestionText> missing"),
        _mediqa_one(MEDIQA_VALID.replace("QuestionText", "Text")),
    ),
    LoaderCase(
        "mediqa-word-score",
        "mediqa",
        _mediqa_api(),
        ("{d}/m/validation.xml", "integer ReferenceScore"),
        _mediqa_one(MEDIQA_VALID.replace('ReferenceScore="4"', 'ReferenceScore="high"')),
    ),
    LoaderCase(
        "mediqa-full-width-score",
        "mediqa",
        _mediqa_api(),
        ("{d}/m/validation.xml", "integer ReferenceScore"),
        _mediqa_one(MEDIQA_VALID.replace('ReferenceScore="4"', 'ReferenceScore="\uff14"')),
    ),
    LoaderCase(
        "mediqa-double-minus-rank",
        "mediqa",
        _mediqa_api(),
        ("{d}/m/validation.xml", "SystemRank='--1'"),
        _mediqa_one(MEDIQA_VALID.replace('SystemRank="1"', 'SystemRank="--1"')),
    ),
    LoaderCase(
        "mediqa-unknown-split",
        "mediqa",
        _mediqa_api("dev"),
        ("split must be one of",),
        {"m": FOLDER},
    ),
    # LiveQA-Med
    LoaderCase(
        "liveqa-folder-is-a-file",
        "liveqa_med",
        _liveqa_api,
        ("{d}/l", "no such folder"),
        {"l": "x"},
    ),
    LoaderCase(
        "liveqa-bad-qid",
        "liveqa_med",
        _liveqa_api,
        ("{d}/l/questions.xml", "needs a TQn qid"),
        _liveqa_files(questions_xml=LIVEQA_QUESTIONS.replace('"TQ2"', '"Q2"')),
    ),
    LoaderCase(
        "liveqa-qrels-empty",
        "liveqa_med",
        _liveqa_api,
        ("{d}/l/qrels.txt", "no judgements"),
        _liveqa_files(qrels_txt=""),
    ),
    LoaderCase(
        "liveqa-qrels-two-fields",
        "liveqa_med",
        _liveqa_api,
        ("{d}/l/qrels.txt:2:", "expected 'n grade AnswerID'"),
        _liveqa_files(qrels_txt="1 4-Excellent A1\n1 A2\n"),
    ),
    LoaderCase(
        "liveqa-qrels-lone-cr",
        "liveqa_med",
        _liveqa_api,
        ("{d}/l/qrels.txt:1:", "carriage return"),
        _liveqa_files(qrels_txt="1 4-Excellent A1\r1 1-Incorrect A2\n"),
    ),
    LoaderCase(
        "liveqa-answers-three-columns",
        "liveqa_med",
        _liveqa_api,
        ("{d}/l/answers.csv:3:", "2 columns"),
        _liveqa_files(answers_csv="AnswerID,Answer\nA1,x\nA2\n"),
    ),
    LoaderCase(
        "liveqa-answers-empty",
        "liveqa_med",
        _liveqa_api,
        ("{d}/l/answers.csv", "missing column 'AnswerID'"),
        _liveqa_files(answers_csv=""),
    ),
    # Ubuntu IRC
    LoaderCase("ubuntu-missing-folder", "ubuntu_irc", _ubuntu_api, ("{d}/u", "no such folder")),
    LoaderCase(
        "ubuntu-folder-is-a-file",
        "ubuntu_irc",
        _ubuntu_api,
        ("{d}/u", "is not a folder"),
        {"u": "x"},
    ),
    LoaderCase(
        "ubuntu-no-logs",
        "ubuntu_irc",
        _ubuntu_api,
        ("{d}/u", "no *.ascii.txt logs"),
        {"u/readme.txt": "x"},
    ),
    LoaderCase(
        "ubuntu-no-annotation",
        "ubuntu_irc",
        _ubuntu_api,
        ("{d}/u/2020-01-01.annotation.txt", "annotation file missing"),
        {"u/2020-01-01.ascii.txt": UBUNTU_LOG},
    ),
    LoaderCase(
        "ubuntu-self-links-only",
        "ubuntu_irc",
        _ubuntu_api,
        ("{d}/u", "no reply link"),
        {"u/2020-01-01.ascii.txt": UBUNTU_LOG, "u/2020-01-01.annotation.txt": "1 1 -\n2 2 -\n"},
    ),
    LoaderCase(
        "ubuntu-too-short-for-negatives",
        "ubuntu_irc",
        _ubuntu_api,
        ("{d}/u/2020-01-01.ascii.txt", "to sample 9 negatives"),
        {
            "u/2020-01-01.ascii.txt": "[12:00] <a> hi\n[12:01] <b> hello\n[12:02] <a> ok\n",
            "u/2020-01-01.annotation.txt": "0 1 -\n",
        },
    ),
    LoaderCase(
        "ubuntu-annotation-nul",
        "ubuntu_irc",
        _ubuntu_api,
        ("{d}/u/2020-01-01.annotation.txt:2:", "NUL byte"),
        {"u/2020-01-01.ascii.txt": UBUNTU_LOG, "u/2020-01-01.annotation.txt": "0 1 -\n1\x00 2 -\n"},
    ),
    # MedQuAD
    LoaderCase("medquad-missing-root", "medquad", _medquad_api, ("{d}/q", "no such folder")),
    LoaderCase(
        "medquad-root-is-a-file", "medquad", _medquad_api, ("{d}/q", "not a folder"), {"q": "x"}
    ),
    LoaderCase(
        "medquad-no-documents",
        "medquad",
        _medquad_api,
        ("{d}/q", "no MedQuAD XML documents"),
        {"q/1_Src": FOLDER},
    ),
    LoaderCase(
        "medquad-pair-without-question",
        "medquad",
        _medquad_api,
        ("{d}/q/1_Src/a.xml", "has no <Question>"),
        {"q/1_Src/a.xml": MEDQUAD_XML.replace("Question", "Query")},
    ),
    LoaderCase(
        "medquad-not-utf8",
        "medquad",
        _medquad_api,
        ("{d}/q/1_Src/a.xml:3:", "undecodable byte"),
        {"q/1_Src/a.xml": NOT_UTF8_XML},
    ),
    LoaderCase(
        "medquad-no-answer",
        "medquad",
        _medquad_api,
        ("{d}/q", "no question with an answer"),
        {"q/1_Src/a.xml": MEDQUAD_XML.replace("A virus.", "")},
    ),
    # RQE
    LoaderCase("rqe-missing", "rqe", _rqe_api, ("{d}/r.xml", "no such file")),
    LoaderCase("rqe-empty", "rqe", _rqe_api, ("{d}/r.xml", "empty file"), {"r.xml": ""}),
    LoaderCase(
        "rqe-wrong-root",
        "rqe",
        _rqe_api,
        ("{d}/r.xml", "no <pair> elements"),
        {"r.xml": MEDIQA_VALID},
    ),
    LoaderCase(
        "rqe-no-pid",
        "rqe",
        _rqe_api,
        ("{d}/r.xml", "without a pid"),
        {"r.xml": RQE_XML.replace(' pid="1"', "")},
    ),
    LoaderCase(
        "rqe-empty-pairs",
        "rqe",
        _rqe_api,
        ("{d}/r.xml", "no <pair> with a question and an FAQ"),
        {
            "r.xml": RQE_XML.replace("Is flu bad?", "")
            .replace("Is flu dangerous?", "")
            .replace("What is a cold?", "")
        },
    ),
    LoaderCase(
        "rqe-malformed",
        "rqe",
        _rqe_api,
        ("{d}/r.xml:3:", "malformed XML"),
        {"r.xml": RQE_XML.replace("</chq>", "", 1)},
    ),
]
