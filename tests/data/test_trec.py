"""Qrels and Run readers and writers: leniency where trec_eval is lenient, strictness elsewhere."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probrank.data import OnDuplicate, Qrels, Run, trec_order
from probrank.exceptions import InputDataError

GOOD_RUN = "q1 Q0 d1 1 3.5 tag\nq1 Q0 d2 2 2.0 tag\nq2 Q0 d1 1 1e-3 tag\n"
GOOD_QRELS = "q1 0 d1 1\nq1 0 d3 0\nq2 0 d1 2\n"

# (kind, file content, words the one-line message must contain)
MALFORMED_RUNS = [
    ("empty", "", "empty run file"),
    ("blank lines only", "\n  \n\t\n", "empty run file"),
    ("too few columns", "q1 Q0 d1 1 3.5\n", "expected 6 columns"),
    ("single token", "garbage\n", "found 1"),
    ("non-numeric score", "q1 Q0 d1 1 high tag\n", "'high' is not a number"),
    ("nan score", "q1 Q0 d1 1 nan tag\n", "'nan' is not a number"),
    ("inf score", "q1 Q0 d1 1 inf tag\n", "'inf' is not a number"),
    ("overflowing score", "q1 Q0 d1 1 1e999 tag\n", "not finite"),
    ("underscored score", "q1 Q0 d1 1 1_000 tag\n", "not a number"),
    ("hex score", "q1 Q0 d1 1 0x1p3 tag\n", "not a number"),
    ("duplicate pair", "q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n", "duplicate document 'd1'"),
    ("bad byte", b"q1 Q0 d\xff1 1 2 t\n", "undecodable byte"),
    ("NUL byte", "q1 Q0 d1 1 2 t\x00\n", "NUL byte"),
    ("bad line after good", GOOD_RUN + "q3 Q0 d9 1\n", ":4:"),
]
MALFORMED_QRELS = [
    ("empty", "", "empty qrels file"),
    ("three columns", "q1 0 d1\n", "expected 4 columns"),
    ("five columns", "q1 0 d1 1 extra\n", "expected 4 columns"),
    ("float grade", "q1 0 d1 0.5\n", "'0.5' is not an integer"),
    ("word grade", "q1 0 d1 yes\n", "'yes' is not an integer"),
    ("duplicate judgement", "q1 0 d1 1\nq1 0 d1 0\n", "judged twice"),
    ("bad byte", b"q1 0 \xc3\x28 1\n", "undecodable byte"),
]


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    data = content.encode() if isinstance(content, str) else content
    path.write_bytes(data)
    return path


def test_run_roundtrip_plain_and_gzip(tmp_path):
    run = Run.read(_write(tmp_path, "a.run", GOOD_RUN))
    assert run.name == "a.run" and run.tag == "tag"
    assert dict(run["q1"]) == {"d1": 3.5, "d2": 2.0}
    for target in ("b.run", "b.run.gz"):
        run.write(tmp_path / target)
        back = Run.read(tmp_path / target)
        assert back.to_dict() == run.to_dict()
    assert Run.read(tmp_path / "b.run.gz").name == "b.run"
    with gzip.open(tmp_path / "b.run.gz", "rt") as handle:
        assert handle.readline().split()[:4] == ["q1", "Q0", "d1", "1"]


def test_gzip_detected_by_content_not_name(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(gzip.compress(GOOD_RUN.encode()))
    assert len(Run.read(path)) == 2


def test_write_preserves_exact_floats(tmp_path):
    scores = {"q": {"a": 0.1 + 0.2, "b": 1 / 3, "c": -2.5e-300}}
    run = Run(scores, name="x")
    run.write(tmp_path / "x")
    assert Run.read(tmp_path / "x").to_dict() == scores


def test_columns_after_the_sixth_are_ignored(shared_data):
    run = Run.read(shared_data / "trec_eval" / "results.trunc")
    assert sum(len(d) for d in run.values()) == 584
    assert run.tag == "STANDARD"


def test_rank_column_is_ignored_and_ties_break_by_docno_descending(tmp_path):
    run = Run.read(_write(tmp_path, "r", "q Q0 a 1 1.0 t\nq Q0 c 2 1.0 t\nq Q0 b 3 2.0 t\n"))
    assert [d for d, _ in run.ranking("q")] == ["b", "c", "a"]
    assert trec_order({"x": 0.0, "y": 0.0}) == [("y", 0.0), ("x", 0.0)]


@pytest.mark.parametrize(("policy", "score"), [("max", 5.0), ("first", 2.0)])
def test_duplicate_resolution(tmp_path, policy, score):
    path = _write(tmp_path, "r", "q Q0 d 1 2 t\nq Q0 d 2 5 t\n")
    assert Run.read(path, on_duplicate=policy)["q"]["d"] == score
    assert Run.read(path, on_duplicate=OnDuplicate(policy))["q"]["d"] == score


def test_unknown_duplicate_policy(tmp_path):
    with pytest.raises(InputDataError, match="on_duplicate must be one of"):
        Run.read(_write(tmp_path, "r", GOOD_RUN), on_duplicate="last")


@pytest.mark.parametrize(
    ("kind", "content", "message"), MALFORMED_RUNS, ids=[m[0] for m in MALFORMED_RUNS]
)
def test_malformed_runs_rejected(tmp_path, kind, content, message):
    path = _write(tmp_path, "bad.run", content)
    with pytest.raises(InputDataError) as info:
        Run.read(path)
    text = str(info.value)
    assert message in text
    assert str(path) in text and "\n" not in text


@pytest.mark.parametrize(
    ("kind", "content", "message"), MALFORMED_QRELS, ids=[m[0] for m in MALFORMED_QRELS]
)
def test_malformed_qrels_rejected(tmp_path, kind, content, message):
    path = _write(tmp_path, "bad.qrels", content)
    with pytest.raises(InputDataError) as info:
        Qrels.read(path)
    text = str(info.value)
    assert message in text
    assert str(path) in text and "\n" not in text


def test_error_names_the_line(tmp_path):
    path = _write(tmp_path, "r", GOOD_RUN + "\nq3 Q0 d9 1 x t\n")
    with pytest.raises(InputDataError) as info:
        Run.read(path)
    assert info.value.line == 5 and f"{path}:5:" in str(info.value)


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(InputDataError, match="no such file"):
        Run.read(tmp_path / "nope")
    with pytest.raises(InputDataError, match="is a directory"):
        Qrels.read(tmp_path)
    corrupt = _write(tmp_path, "c.gz", b"\x1f\x8b" + b"junk" * 10)
    with pytest.raises(InputDataError, match="corrupt gzip"):
        Run.read(corrupt)


def test_qrels_negative_grades_and_counts(tmp_path):
    qrels = Qrels.read(_write(tmp_path, "q", GOOD_QRELS + "q2 0 d5 -1\n"))
    assert qrels["q2"]["d5"] == -1
    assert qrels.num_relevant() == {"q1": 1, "q2": 1}
    assert qrels.num_relevant(2) == {"q1": 0, "q2": 1}
    qrels.write(tmp_path / "out.gz")
    assert Qrels.read(tmp_path / "out.gz").to_dict() == qrels.to_dict()


def test_objects_do_not_share_or_mutate_inputs():
    source = {"q": {"d": 1.0}}
    run = Run(source)
    source["q"]["d"] = 5.0
    assert run["q"]["d"] == 1.0
    with pytest.raises(TypeError):
        run["q"]["d"] = 2.0  # type: ignore[index]
    cut = run.truncate(1)
    assert cut is not run and run.to_dict() == {"q": {"d": 1.0}}


def test_constructor_rejects_non_finite_scores():
    with pytest.raises(InputDataError, match="nan"):
        Run({"q": {"d": float("nan")}})


def test_truncate_keeps_trec_order():
    run = Run({"q": {"a": 1.0, "b": 3.0, "c": 2.0, "d": 2.0}})
    assert list(run.truncate(3)["q"]) == ["b", "d", "c"]
    with pytest.raises(InputDataError, match="depth"):
        run.truncate(0)


text_lines = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.builds(
            " ".join,
            st.lists(
                st.one_of(
                    st.text(min_size=1, max_size=6).filter(lambda s: s.split() == [s]),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.integers().map(str),
                ),
                max_size=8,
            ),
        ),
    ),
    max_size=6,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=text_lines, raw=st.binary(max_size=60), use_raw=st.booleans())
def test_readers_raise_only_input_data_error(tmp_path, lines, raw, use_raw):
    content = raw if use_raw else "\n".join(lines).encode("utf-8", "surrogatepass")
    path = tmp_path / "fuzz"
    path.write_bytes(content)
    for reader in (Run.read, Qrels.read):
        try:
            parsed = reader(path)
        except InputDataError as exc:
            assert "\n" not in str(exc)
        else:
            assert len(parsed) >= 1


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    scores=st.dictionaries(
        st.text(alphabet="abcdef0123", min_size=1, max_size=4),
        st.dictionaries(
            st.text(alphabet="xyz789", min_size=1, max_size=4),
            st.floats(allow_nan=False, allow_infinity=False, width=64),
            min_size=1,
            max_size=5,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_write_read_roundtrip_property(tmp_path, scores):
    run = Run(scores, name="p")
    run.write(tmp_path / "p.gz")
    assert Run.read(tmp_path / "p.gz").to_dict() == run.to_dict()
