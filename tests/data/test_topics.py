"""TREC topic files: SGML and one-per-line layouts, strict errors with line numbers."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from probrank.data.topics import read_topics
from probrank.exceptions import InputDataError


def test_sgml_topics_with_number_prefix_and_multiline_titles(tmp_path: Path) -> None:
    path = tmp_path / "topics.301-302"
    path.write_text(
        "<top>\n<num> Number: 301\n<title> International Organized\n  Crime\n\n"
        "<desc> Description:\nIdentify organizations.\n</top>\n\n"
        "<top>\n<num>302</num><title>\nTopic: Poliomyelitis and Post-Polio\n</title>\n</top>\n"
    )
    assert read_topics(path) == {
        "301": "International Organized Crime",
        "302": "Poliomyelitis and Post-Polio",
    }


def test_tab_separated_topics_and_gzip(tmp_path: Path) -> None:
    path = tmp_path / "queries.tsv.gz"
    path.write_bytes(gzip.compress(b"q1\tsound  driver\n\nq2 kernel update\n"))
    assert read_topics(path) == {"q1": "sound driver", "q2": "kernel update"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1\tone\nq1\ttwo\n", ":2: topic 'q1' appears twice \\(first on line 1\\)"),
        ("q1\n", ":1: expected 'query_id<TAB>text'"),
        ("\n\n", "no topics found"),
        ("<top>\n<title> x\n</top>\n", ":1: <top> without a <num>"),
        ("<top><num>5</num><title></title></top>\n<top><num>6", "topic '5' has no <title>"),
    ],
)
def test_bad_topic_files_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "topics"
    path.write_text(text)
    with pytest.raises(InputDataError, match=message):
        read_topics(path)
