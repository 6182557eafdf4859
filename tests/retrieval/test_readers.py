"""Readers of document collections and topics: TREC <DOC>, JSON lines, DataFrames."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from probrank.exceptions import InputDataError
from probrank.retrieval.collection import Collection
from probrank.retrieval.readers import (
    iter_trec_documents,
    read_jsonl_topics,
    topics_from_dataframe,
)

TREC = """<DOC>
<DOCNO> d1 </DOCNO>
<HEADLINE>Cats</HEADLINE>
<TEXT>
cats  purr
</TEXT>
</DOC>

<DOC>
<DOCNO>d2</DOCNO>
dogs bark
</DOC>
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_trec_documents_text_and_tags(tmp_path: Path) -> None:
    path = _write(tmp_path / "docs.trec", TREC)
    docs = list(iter_trec_documents(path))
    assert docs == [("d1", "Cats cats purr", 1), ("d2", "dogs bark", 9)]
    only_text = list(iter_trec_documents(path, text_tags=("TEXT",)))
    assert only_text[0][1] == "cats purr" and only_text[1][1] == ""


def test_trec_gzip_and_collection(tmp_path: Path) -> None:
    path = tmp_path / "docs.trec.gz"
    path.write_bytes(gzip.compress(TREC.encode()))
    collection = Collection.from_trec(path, progress=False)
    assert collection.docnos == ["d1", "d2"] and collection["d2"] == "dogs bark"
    again = Collection.from_trec(_write(tmp_path / "plain.trec", TREC), progress=False)
    assert again.fingerprint == collection.fingerprint
    changed = Collection([("d1", "Cats cats purr"), ("d2", "dogs barks")])
    assert changed.fingerprint != collection.fingerprint


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\n<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\n", 4, "twice"),
        ("<DOC>\nno number\n</DOC>\n", 1, "no <DOCNO>"),
        ("<DOC>\n<DOCNO>a</DOCNO>\n", 1, "ends inside"),
        ("stray\n<DOC>\n<DOCNO>a</DOCNO>\n</DOC>\n", 1, "outside"),
        ("<DOC>\n<DOCNO>a</DOCNO>\n<DOC>\n</DOC>\n", 3, "inside the document"),
        ("</DOC>\n", 1, "without a <DOC>"),
        ("<DOC>\n<DOCNO>a b</DOCNO>\n</DOC>\n", 1, "whitespace"),
        ("<DOC>\n<DOCNO>a</DOCNO><DOCNO>b</DOCNO>\n</DOC>\n", 1, "2 <DOCNO>"),
    ],
)
def test_trec_errors_name_file_and_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = _write(tmp_path / "bad.trec", text)
    with pytest.raises(InputDataError, match=message) as info:
        list(iter_trec_documents(path))
    assert info.value.path == str(path) and info.value.line == line


def test_trec_undecodable_byte_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.trec"
    path.write_bytes(b"<DOC>\n<DOCNO>a</DOCNO>\ncaf\xe9\n</DOC>\n")
    with pytest.raises(InputDataError, match="UTF-8") as info:
        list(iter_trec_documents(path))
    assert info.value.line == 3


def test_docno_in_two_files(tmp_path: Path) -> None:
    first = _write(tmp_path / "a.trec", "<DOC>\n<DOCNO>x</DOCNO>\n</DOC>\n")
    second = _write(tmp_path / "b.trec", "<DOC>\n<DOCNO>x</DOCNO>\n</DOC>\n")
    with pytest.raises(InputDataError, match=r"also in .*a\.trec:1"):
        Collection.from_trec([first, second], progress=False)


def test_jsonl_documents_and_topics(tmp_path: Path) -> None:
    docs = _write(tmp_path / "d.jsonl", '{"id": "1", "body": "one"}\n\n{"id": 2, "body": "two"}\n')
    collection = Collection.from_jsonl(docs, docno_field="id", text_field="body")
    assert dict(collection) == {"1": "one", "2": "two"}
    bad = _write(tmp_path / "bad.jsonl", '{"id": "1", "body": "x"}\n{"id": "1", "body": "y"}\n')
    with pytest.raises(InputDataError, match="twice") as info:
        Collection.from_jsonl(bad, docno_field="id", text_field="body")
    assert info.value.line == 2
    broken = _write(tmp_path / "broken.jsonl", '{"docno": "1", "text": 5}\n')
    with pytest.raises(InputDataError, match="'text' must be a string"):
        Collection.from_jsonl(broken)
    topics = _write(tmp_path / "t.jsonl", '{"qid": "7", "query": " a  b "}\n')
    assert read_jsonl_topics(topics) == {"7": "a b"}
    with pytest.raises(InputDataError, match="missing key 'query'"):
        read_jsonl_topics(_write(tmp_path / "t2.jsonl", '{"qid": "7"}\n'))


def test_dataframes() -> None:
    frame = pd.DataFrame({"docno": ["a", "b"], "text": ["x", "y"]})
    assert Collection.from_dataframe(frame).texts == ["x", "y"]
    with pytest.raises(InputDataError, match="also in row 0"):
        Collection.from_dataframe(pd.DataFrame({"docno": ["a", "a"], "text": ["x", "y"]}))
    with pytest.raises(InputDataError, match="missing columns"):
        Collection.from_dataframe(pd.DataFrame({"id": ["a"]}))
    topics = topics_from_dataframe(pd.DataFrame({"qid": [1, 2], "query": ["p q", "r"]}))
    assert topics == {"1": "p q", "2": "r"}
    with pytest.raises(InputDataError, match="appears twice"):
        topics_from_dataframe(pd.DataFrame({"qid": ["1", "1"], "query": ["p", "r"]}))
