"""Annotator names and links: NFC, look-alikes refused, tokens bound to names, revocation,
``probrank annotators`` beside a running server."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from probrank.cli import main
from probrank.exceptions import InputDataError
from probrank.serve.annotators import AnnotatorRegistry
from probrank.serve.identity import Identity, Role, check_name, skeleton
from probrank.serve.store import JudgementStore


@pytest.mark.parametrize("name", ["alice", "bob.smith", "ann_2", "x@lab", "José", "名前", "Ἀθηνᾶ"])
def test_valid_names(name: str) -> None:
    assert check_name(name) == unicodedata.normalize("NFC", name)


def test_decomposed_and_precomposed_are_one_name() -> None:
    decomposed = "Jose\u0301"
    assert check_name(decomposed) == "Jos\u00e9" == check_name("Jos\u00e9")


@pytest.mark.parametrize(
    ("name", "existing", "message"),
    [
        ("\u0430lice", [], "mixes scripts \\(cyrillic, latin\\)"),  # Cyrillic а
        ("ａｌｉｃｅ", [], "compatibility characters.*'alice'"),  # full-width
        ("Alice", ["alice"], "looks like the existing annotator 'alice'"),
        ("a1ice", ["alice"], "looks like the existing annotator 'alice'"),
        ("\u0430\u0440\u0435", ["ape"], "looks like the existing annotator 'ape'"),  # Cyrillic
        ("bob smith", [], "' ' \\(U\\+0020\\) is not allowed"),
        ("zero\u200bwidth", [], "U\\+200B"),
        ("_bob", [], "must start with a letter or a digit"),
        ("", [], "1 to 40 characters"),
        ("x" * 41, [], "1 to 40 characters"),
    ],
)
def test_bad_and_look_alike_names_are_refused(name: str, existing: list[str], message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        check_name(name, existing)


def test_skeleton_maps_look_alikes_together() -> None:
    assert skeleton("\u0430lice") == skeleton("alice") == skeleton("ALICE") == skeleton("a1ice")
    assert skeleton("alice") != skeleton("alicia")


def test_links_are_bound_revoked_and_listed_beside_a_server(tmp_path: Path) -> None:
    db = tmp_path / "j.sqlite"
    with JudgementStore(db) as server:  # the server holds its lock; the registry still works
        with AnnotatorRegistry(db) as registry:
            name, token = registry.add("Jose\u0301")
            assert name == "José"
            assert server.identify(token) == Identity(Role.ANNOTATOR, "José")
            with pytest.raises(InputDataError, match="has a working link already"):
                registry.add("José")
            with pytest.raises(InputDataError, match="looks like the existing annotator"):
                registry.add("JOSÉ")
            assert registry.revoke("José") == 1
            assert server.identify(token) is None  # at once
            _, again = registry.add("José")  # a new link after the revocation
            assert server.identify(again) == Identity(Role.ANNOTATOR, "José")
            [row] = registry.list()
            assert (row.name, row.active, row.answers) == ("José", True, 0)
            with pytest.raises(InputDataError, match="no annotator 'carol'"):
                registry.revoke("carol")


def test_the_annotators_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "j.sqlite")
    assert main(["annotators", "add", "alice", "--db", db, "--url", "http://h:9/"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("alice: http://h:9/?token=")
    token = out.split("token=", 1)[1].split()[0]
    with JudgementStore(db) as store:
        assert store.identify(token) == Identity(Role.ANNOTATOR, "alice")
    assert main(["annotators", "add", "\u0430lice", "--db", db]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("probrank: error: ")
        and "mixes scripts" in err
        and len(err.splitlines()) == 1
    )
    assert main(["annotators", "list", "--db", db]) == 0
    assert capsys.readouterr().out.startswith("alice\tlink active\t0 answers")
    assert main(["annotators", "revoke", "alice", "--db", db]) == 0
    assert "1 link ended" in capsys.readouterr().out
    with JudgementStore(db) as store:
        assert store.identify(token) is None
