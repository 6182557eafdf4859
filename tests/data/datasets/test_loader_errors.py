"""Every dataset loader on broken input: a folder where a file should be, an empty file, a wrong
XML root, bytes that are not UTF-8, a missing column, nothing to load. Each is one
``InputDataError`` line naming the file (and the line where there is one), never an empty
data set."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from probrank.data.datasets.liveqa_med import load_liveqa_med
from probrank.data.datasets.mediqa import load_mediqa
from probrank.data.datasets.medquad import read_medquad
from probrank.data.datasets.rqe import read_rqe
from probrank.data.datasets.synthetic import score_distribution_runs
from probrank.data.datasets.ubuntu_irc import load_ubuntu_irc
from probrank.exceptions import InputDataError
from tests.data.datasets.test_ubuntu_irc import write_fake_ubuntu

MEDIQA = """<?xml version="1.0" encoding="UTF-8"?>
<MEDIQA2019-Task3-QA-ValidationSet>
<Question QID="1"><QuestionText>What is flu?</QuestionText><AnswerList>
<Answer AID="1_1" SystemRank="1" ReferenceRank="1" ReferenceScore="4">
<AnswerURL>u</AnswerURL><AnswerText>A virus.</AnswerText></Answer>
</AnswerList></Question>
</MEDIQA2019-Task3-QA-ValidationSet>
"""

RQE = """<?xml version="1.0" encoding="UTF-8"?>
<MEDIQA2019-Task2-RQE-TestSet>
<pair pid="1" value="true"><chq>Is flu bad?</chq><faq>Is flu dangerous?</faq></pair>
</MEDIQA2019-Task2-RQE-TestSet>
"""

LIVEQA_QUESTIONS = """<?xml version="1.0" encoding="UTF-8"?>
<LiveQA2017-Medical-Test-Set-Full>
<NLM-QUESTION qid="TQ1"><Original-Question><SUBJECT>flu</SUBJECT>
<MESSAGE>What is flu?</MESSAGE></Original-Question></NLM-QUESTION>
</LiveQA2017-Medical-Test-Set-Full>
"""

MEDQUAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Document source="S" url="u"><Focus>Flu</Focus>'
    '<QAPairs><QAPair pid="1"><Question qid="1-1" qtype="information">What is flu?</Question>'
    "<Answer>A virus.</Answer></QAPair></QAPairs></Document>\n"
)

NOT_UTF8 = b'<?xml version="1.0" encoding="UTF-8"?>\n<Set>\n<x>caf\xe9</x></Set>\n'


def _liveqa(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.xml").write_text(LIVEQA_QUESTIONS, encoding="utf-8")
    (folder / "qrels.txt").write_text("1 4-Excellent A1\n1 1-Incorrect A2\n", encoding="utf-8")
    (folder / "answers.csv").write_text('AnswerID,Answer\nA1,"A virus."\nA2,No.\n')
    return folder


def _mediqa(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "validation.xml").write_text(MEDIQA, encoding="utf-8")
    return folder


def _medquad(folder: Path) -> Path:
    (folder / "1_Src").mkdir(parents=True, exist_ok=True)
    (folder / "1_Src" / "a.xml").write_text(MEDQUAD, encoding="utf-8")
    return folder


def _one_line_error(call: Callable[[], object], *fragments: str) -> str:
    with pytest.raises(InputDataError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


def _break(path: Path, kind: str) -> None:
    """Replace ``path`` by a folder, an empty file or bytes that are not UTF-8."""
    if kind == "folder":
        path.unlink()
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(NOT_UTF8 if path.suffix == ".xml" else b"1 4-Excellent caf\xe9\n")


EXPECTED = {"folder": "is a directory", "empty": "empty file", "bytes": "undecodable byte"}


# --- the intact files load (so the failures below come from the breakage) -----------------


def test_the_small_files_load(tmp_path: Path) -> None:
    assert len(load_mediqa(_mediqa(tmp_path / "m"), "validation")) == 1
    assert len(load_liveqa_med(_liveqa(tmp_path / "l")).lists) == 1
    assert len(read_medquad(_medquad(tmp_path / "q"), progress=False)) == 1
    (tmp_path / "r.xml").write_text(RQE, encoding="utf-8")
    assert len(read_rqe(tmp_path / "r.xml")) == 1


# --- MEDIQA --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["folder", "empty", "bytes"])
def test_mediqa_broken_file(tmp_path: Path, kind: str) -> None:
    folder = _mediqa(tmp_path / "m")
    _break(folder / "validation.xml", kind)
    message = _one_line_error(
        lambda: load_mediqa(folder, "validation"), "validation.xml", EXPECTED[kind]
    )
    if kind == "bytes":
        assert "validation.xml:3:" in message


def test_mediqa_wrong_root_and_no_answer(tmp_path: Path) -> None:
    folder = _mediqa(tmp_path / "m")
    (folder / "validation.xml").write_text(RQE, encoding="utf-8")  # an RQE file instead
    _one_line_error(
        lambda: load_mediqa(folder, "validation"),
        "validation.xml",
        "no <Question> elements under the root element <MEDIQA2019-Task2-RQE-TestSet>",
    )
    (folder / "validation.xml").write_text(
        '<Set><Question QID="1"><QuestionText>q</QuestionText><AnswerList/></Question></Set>'
    )
    _one_line_error(lambda: load_mediqa(folder, "validation"), "no <Question> has an <Answer>")


def test_mediqa_missing_file(tmp_path: Path) -> None:
    _one_line_error(lambda: load_mediqa(tmp_path, "test"), "test-with-labels.xml: no such file")


# --- LiveQA-Med ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["questions.xml", "qrels.txt", "answers.csv"])
@pytest.mark.parametrize("kind", ["folder", "empty", "bytes"])
def test_liveqa_broken_file(tmp_path: Path, name: str, kind: str) -> None:
    folder = _liveqa(tmp_path / "l")
    _break(folder / name, kind)
    expected = {
        ("qrels.txt", "empty"): "no judgements",
        ("answers.csv", "empty"): "missing column 'AnswerID'",
    }.get((name, kind), EXPECTED[kind])
    message = _one_line_error(lambda: load_liveqa_med(folder), name, expected)
    if kind == "bytes":
        line = 3 if name == "questions.xml" else 1
        assert f"{name}:{line}:" in message


def test_liveqa_wrong_root_and_missing_column(tmp_path: Path) -> None:
    folder = _liveqa(tmp_path / "l")
    (folder / "answers.csv").write_text('AnswerID,Text\nA1,"A virus."\n')
    _one_line_error(lambda: load_liveqa_med(folder), "answers.csv:1:", "missing column 'Answer'")
    (folder / "answers.csv").write_text('AnswerID,Answer\nA1,"A virus."\nA2\n')
    _one_line_error(lambda: load_liveqa_med(folder), "answers.csv:3:", "2 columns")
    (folder / "questions.xml").write_text(MEDIQA, encoding="utf-8")
    _one_line_error(lambda: load_liveqa_med(folder), "questions.xml", "no <NLM-QUESTION>")


def test_liveqa_folder_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    _one_line_error(lambda: load_liveqa_med(tmp_path / "f"), "no such folder")


# --- Ubuntu IRC ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".ascii.txt", ".annotation.txt"])
@pytest.mark.parametrize("kind", ["folder", "empty", "bytes"])
def test_ubuntu_broken_file(tmp_path: Path, suffix: str, kind: str) -> None:
    folder = write_fake_ubuntu(tmp_path / "train", num_logs=2)
    path = folder / f"2020-01-02{suffix}"
    _break(path, kind)
    message = _one_line_error(lambda: load_ubuntu_irc(folder), path.name, EXPECTED[kind])
    if kind == "bytes":
        assert f"{path.name}:1:" in message


def test_ubuntu_no_link_is_an_error_not_an_empty_list(tmp_path: Path) -> None:
    folder = write_fake_ubuntu(tmp_path / "train", num_logs=1)
    (folder / "2020-01-01.annotation.txt").write_text("0 0 -\n1 1 -\n")  # self links only
    _one_line_error(lambda: load_ubuntu_irc(folder), "train", "no reply link")
    (tmp_path / "file").write_text("x")
    _one_line_error(lambda: load_ubuntu_irc(tmp_path / "file"), "file: is not a folder")


# --- MedQuAD -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["folder", "empty", "bytes"])
def test_medquad_broken_document(tmp_path: Path, kind: str) -> None:
    root = _medquad(tmp_path / "q")
    _break(root / "1_Src" / "a.xml", kind)
    if kind == "folder":  # a folder named *.xml beside a good document
        (root / "1_Src" / "b.xml").write_text(MEDQUAD, encoding="utf-8")
    _one_line_error(lambda: read_medquad(root, progress=False), "a.xml", EXPECTED[kind])


def test_medquad_wrong_root_and_no_pair(tmp_path: Path) -> None:
    root = _medquad(tmp_path / "q")
    (root / "1_Src" / "b.xml").write_text(RQE, encoding="utf-8")
    _one_line_error(
        lambda: read_medquad(root, progress=False),
        "b.xml",
        "root element <MEDIQA2019-Task2-RQE-TestSet> is not a MedQuAD document's",
    )
    (root / "1_Src" / "b.xml").unlink()
    (root / "1_Src" / "a.xml").write_text(MEDQUAD.replace("A virus.", ""), encoding="utf-8")
    _one_line_error(lambda: read_medquad(root, progress=False), "no question with an answer")


# --- RQE -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["folder", "empty", "bytes"])
def test_rqe_broken_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "r.xml"
    path.write_text(RQE, encoding="utf-8")
    _break(path, kind)
    _one_line_error(lambda: read_rqe(path), "r.xml", EXPECTED[kind])


def test_rqe_wrong_root(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(MEDIQA, encoding="utf-8")
    _one_line_error(lambda: read_rqe(path), "r.xml", "no <pair> elements under the root")


def test_xml_in_a_declared_encoding_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    latin = RQE.replace("UTF-8", "ISO-8859-1").replace("Is flu bad?", "Caf\xe9 bad?")
    path.write_bytes(latin.encode("latin-1"))
    assert read_rqe(path)[0].chq == "Caf\xe9 bad?"


# --- synthetic -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_queries": 0}, "num_queries must be a positive integer"),
        ({"num_docs": 2.5}, "num_docs must be a positive integer"),
        ({"num_runs": True}, "num_runs must be a positive integer"),
        ({"depth": 50, "num_docs": 10}, "depth must be <= num_docs"),
        ({"seed": -1}, "seed must be a non-negative integer"),
    ],
)
def test_synthetic_bad_sizes(options: dict, message: str) -> None:
    _one_line_error(lambda: score_distribution_runs(**options), message)
