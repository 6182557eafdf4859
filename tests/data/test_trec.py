"""Qrels and Run readers and writers: leniency where trec_eval is lenient, strictness elsewhere."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
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
    ("comments only", "# a comment\n  # another\n", "empty run file"),
    ("too few columns", "q1 Q0 d1 1 3.5\n", "expected 6 columns"),
    ("single token", "garbage\n", "found 1"),
    ("non-numeric score", "q1 Q0 d1 1 high tag\n", "'high' is not a number"),
    ("nan score", "q1 Q0 d1 1 nan tag\n", "'nan' is not a number"),
    ("NaN score", "q1 Q0 d1 1 NaN tag\n", "'NaN' is not a number"),
    ("inf score", "q1 Q0 d1 1 inf tag\n", "'inf' is not a number"),
    ("-Infinity score", "q1 Q0 d1 1 -Infinity tag\n", "'-Infinity' is not a number"),
    ("overflowing score", "q1 Q0 d1 1 1e999 tag\n", "overflows a double"),
    ("overflowing long score", "q1 Q0 d1 1 " + "9" * 400 + " tag\n", "overflows a double"),
    ("underscored score", "q1 Q0 d1 1 1_000 tag\n", "not a number"),
    ("hex score", "q1 Q0 d1 1 0x1p3 tag\n", "not a number"),
    ("full-width digits", "q1 Q0 d1 1 \uff11\uff12 tag\n", "not a number"),
    ("Arabic-Indic digits", "q1 Q0 d1 1 \u0663.\u0665 tag\n", "not a number"),
    ("no-break space", "q1 Q0\u00a0d1 1 2 t\n", "U+00A0"),
    ("ideographic space", "q1\u3000Q0 d1 1 2 t\n", "U+3000"),
    ("vertical tab", "q1 Q0 d1 1 2\vt\n", "U+000B"),
    ("form feed", "q1 Q0 d1 1 2\ft\n", "U+000C"),
    ("lone CR", "q1 Q0 d1 1 2 t\rq1 Q0 d2 2 1 t\n", "carriage return"),
    ("duplicate pair", "q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n", "duplicate document 'd1'"),
    ("bad byte", b"q1 Q0 d\xff1 1 2 t\n", "undecodable byte"),
    ("NUL byte", "q1 Q0 d1 1 2 t\x00\n", "NUL byte"),
    ("bad line after good", GOOD_RUN + "q3 Q0 d9 1\n", ":4:"),
    ("NBSP after good", GOOD_RUN + "q3 Q0 d9 1 2\u00a0t\n", ":4:"),
    ("lone CR after good", GOOD_RUN.replace("\n", "\r\n") + "q3 Q0 d9\r1 2 t\n", ":4:"),
]
MALFORMED_QRELS = [
    ("empty", "", "empty qrels file"),
    ("comments only", "# a comment\n", "empty qrels file"),
    ("three columns", "q1 0 d1\n", "expected 4 columns"),
    ("five columns", "q1 0 d1 1 extra\n", "expected 4 columns"),
    ("float grade", "q1 0 d1 0.5\n", "'0.5' is not an integer"),
    ("exponent grade", "q1 0 d1 1e2\n", "'1e2' is not an integer"),
    ("word grade", "q1 0 d1 yes\n", "'yes' is not an integer"),
    ("full-width grade", "q1 0 d1 \uff11\n", "is not an integer"),
    ("underscored grade", "q1 0 d1 1_0\n", "is not an integer"),
    ("huge grade", "q1 0 d1 99999999999999999999\n", "out of range"),
    ("no-break space", "q1 0 d1\u00a01\n", "U+00A0"),
    ("ideographic space", "q1\u30000 d1 1\n", "U+3000"),
    ("lone CR", "q1 0 d1 1\rq1 0 d2 1\n", "carriage return"),
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


@pytest.mark.parametrize(
    ("kind", "content", "line"),
    [
        ("NBSP", GOOD_RUN + "q3 Q0 d9 1 2\u00a0t\n", 4),
        ("full-width score", GOOD_RUN + "\nq3 Q0 d9 1 \uff11 t\n", 5),
        ("overflow", "q Q0 a 1 1 t\nq Q0 b 2 -1e400 t\n", 2),
        ("lone CR", "q Q0 a 1 1 t\r\nq Q0 b 2 2 t\r\n\rq Q0 c 3 3 t\n", 3),
        ("duplicate", "q Q0 a 1 1 t\n# c\nq Q0 a 2 2 t\n", 3),
    ],
)
def test_run_errors_name_the_line(tmp_path, kind, content, line):
    path = _write(tmp_path, "r", content)
    with pytest.raises(InputDataError) as info:
        Run.read(path)
    assert info.value.line == line and f"{path}:{line}:" in str(info.value)


def test_byte_order_mark_crlf_tabs_and_extra_columns_are_accepted(tmp_path):
    plain = Run.read(_write(tmp_path, "plain", GOOD_RUN))
    variants = {
        "bom": "\ufeff" + GOOD_RUN,
        "crlf": GOOD_RUN.replace("\n", "\r\n"),
        "tabs": GOOD_RUN.replace(" ", "\t"),
        "runs of blanks": GOOD_RUN.replace(" ", " \t  "),
        "leading blanks": "".join("  " + line + "\n" for line in GOOD_RUN.splitlines()),
        "extra columns": GOOD_RUN.replace("tag\n", "tag extra 1 2\n"),
        "no final newline": GOOD_RUN.rstrip("\n"),
        "blank lines": "\n\n" + GOOD_RUN.replace("\n", "\n\n") + "\n \n",
        "comments": "# run\n" + GOOD_RUN.replace("\n", "\n  # between\n", 1),
    }
    for kind, content in variants.items():
        run = Run.read(_write(tmp_path, kind, content))
        assert run.to_dict() == plain.to_dict(), kind
        assert run.tag == "tag", kind
    qrels = Qrels.read(_write(tmp_path, "q", GOOD_QRELS))
    for kind, content in {
        "bom": "\ufeff" + GOOD_QRELS,
        "crlf": GOOD_QRELS.replace("\n", "\r\n"),
        "tabs": GOOD_QRELS.replace(" ", "\t"),
        "comments": "# judged by\n" + GOOD_QRELS + "# end\n",
        "blank lines": GOOD_QRELS.replace("\n", "\n\n"),
    }.items():
        assert Qrels.read(_write(tmp_path, kind, content)).to_dict() == qrels.to_dict(), kind


def test_hash_inside_an_id_is_not_a_comment(tmp_path):
    run = Run.read(_write(tmp_path, "r", "q#1 Q0 doc#2 1 1.5 t#\n"))
    assert run.to_dict() == {"q#1": {"doc#2": 1.5}} and run.tag == "t#"
    qrels = Qrels.read(_write(tmp_path, "q", "q 0 CR#93 1\n#q 0 d 1\n"))
    assert qrels.to_dict() == {"q": {"CR#93": 1}}


def test_scores_are_read_as_c_doubles(tmp_path):
    tokens = ["3.2800000000000002", "3.28", "16777217", "16777216", "1e300", "-2.5e-300",
              "+.5", "5.", "-0", "1E3", "4.9e-324", "1.7976931348623157e308"]  # fmt: skip
    content = "".join(f"q Q0 d{i} {i} {t} t\n" for i, t in enumerate(tokens))
    run = Run.read(_write(tmp_path, "r", content))
    assert [run["q"][f"d{i}"] for i in range(len(tokens))] == [float(t) for t in tokens]
    assert run["q"]["d0"] != run["q"]["d1"]  # distinct doubles (one float32)


def test_grades_keep_their_sign_and_size(tmp_path):
    qrels = Qrels.read(_write(tmp_path, "q", "q 0 a -3\nq 0 b +2\nq 0 c 9223372036854775807\n"))
    assert qrels.to_dict() == {"q": {"a": -3, "b": 2, "c": 2**63 - 1}}


def test_write_refuses_ids_that_would_not_read_back(tmp_path):
    for scores in ({"q": {"a b": 1.0}}, {"q x": {"a": 1.0}}, {"q": {"": 1.0}}):
        with pytest.raises(InputDataError, match="not one field"):
            Run(scores).write(tmp_path / "w")
        assert not (tmp_path / "w").exists()
    Run({"q": {"a": 1.0}}, tag="my run").write(tmp_path / "ok")
    assert (tmp_path / "ok").read_text() == "q Q0 a 1 1.0 my_run\n"


def test_large_plain_file_takes_the_same_result_as_the_line_reader(tmp_path):
    """The fast path (plain files) and the line reader (anything unusual) agree."""
    rng = np.random.default_rng(0)
    lines = [
        f"{q} Q0 D{d} {r} {s!r} tag"
        for q in range(30)
        for r, (d, s) in enumerate(
            zip(rng.permutation(500)[:100].tolist(), rng.normal(size=100).tolist(), strict=True)
        )
    ]
    fast = Run.read(_write(tmp_path, "fast", "\n".join(lines) + "\n"))
    slow = Run.read(_write(tmp_path, "slow", "# force the line reader\n" + "\n".join(lines)))
    assert fast.to_dict() == slow.to_dict() and len(fast) == 30
    qlines = [line.split()[0] + " 0 " + line.split()[2] + " " + str(i % 3) for i, line in
              enumerate(lines)]  # fmt: skip
    qfast = Qrels.read(_write(tmp_path, "qfast", "\n".join(qlines)))
    qslow = Qrels.read(_write(tmp_path, "qslow", "\n".join(qlines) + "\n\n# end\n"))
    assert qfast.to_dict() == qslow.to_dict()


ids = st.text(alphabet="abcxyz019#._-\u00e9\u4e2d", min_size=1, max_size=5).filter(
    lambda s: not s.startswith("#")
)
valid_runs = st.dictionaries(
    ids,
    st.dictionaries(ids, st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=4),
    min_size=1,
    max_size=4,
)
separators = st.sampled_from([" ", "\t", "  ", " \t "])


def _run_lines(scores: dict[str, dict[str, float]], sep: str) -> list[str]:
    return [
        sep.join([q, "Q0", d, str(i), repr(s), "tag"])
        for q, docs in scores.items()
        for i, (d, s) in enumerate(docs.items())
    ]


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scores=valid_runs, sep=separators, crlf=st.booleans(), data=st.data())
def test_run_reader_is_invariant_to_line_order_and_layout(tmp_path, scores, sep, crlf, data):
    lines = _run_lines(scores, sep)
    shuffled = data.draw(st.permutations(lines))
    end = "\r\n" if crlf else "\n"
    a = Run.read(_write(tmp_path, "a", "\n".join(lines) + "\n"))
    b = Run.read(_write(tmp_path, "b", end.join(shuffled) + end))
    assert a.to_dict() == b.to_dict() == scores


bad_fields = st.sampled_from(
    ["nan", "inf", "-Infinity", "1e400", "0x10", "1_0", "\uff15", "\u0665", "one", "1.2.3", "--1"]
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scores=valid_runs, data=st.data())
def test_a_malformed_run_line_is_rejected_with_its_number(tmp_path, scores, data):
    lines = _run_lines(scores, " ")
    position = data.draw(st.integers(0, len(lines)))
    kind = data.draw(st.sampled_from(["score", "fields", "separator", "cr"]))
    if kind == "score":
        bad = f"zz Q0 zz 1 {data.draw(bad_fields)} tag"
    elif kind == "fields":
        bad = " ".join(["zz", "Q0", "zz", "1", "2", "tag"][: data.draw(st.integers(1, 5))])
    elif kind == "separator":
        space = data.draw(st.sampled_from(["\u00a0", "\u3000", "\u2003", "\v", "\f", "\x1c"]))
        bad = f"zz Q0 zz{space}1 2 tag"
    else:
        bad = "zz Q0 zz 1\r2 tag"
    lines.insert(position, bad)
    with pytest.raises(InputDataError) as info:
        Run.read(_write(tmp_path, "bad", "\n".join(lines) + "\n"))
    assert info.value.line == position + 1, (kind, bad, str(info.value))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    judged=st.dictionaries(
        ids, st.dictionaries(ids, st.integers(-3, 5), min_size=1, max_size=4), min_size=1
    ),
    data=st.data(),
)
def test_qrels_reader_order_invariance_and_bad_grades(tmp_path, judged, data):
    lines = [f"{q} 0 {d} {g}" for q, docs in judged.items() for d, g in docs.items()]
    shuffled = data.draw(st.permutations(lines))
    assert Qrels.read(_write(tmp_path, "q", "\n".join(shuffled))).to_dict() == judged
    position = data.draw(st.integers(0, len(lines)))
    grade = data.draw(st.sampled_from(["1.0", "1e1", "x", "\uff11", "1_0", "nan", "2**3"]))
    lines.insert(position, f"zz 0 zz {grade}")
    with pytest.raises(InputDataError) as info:
        Qrels.read(_write(tmp_path, "bad", "\n".join(lines)))
    assert info.value.line == position + 1


def test_qrels_constructor_checks_grades():
    assert Qrels({"q": {"a": np.int64(2), "b": 1.0, "c": -1}}).to_dict() == {
        "q": {"a": 2, "b": 1, "c": -1}
    }
    for bad in (1.5, float("nan"), "1", None, 2**70):
        with pytest.raises(InputDataError, match="grade of 'd' for query 'q'"):
            Qrels({"q": {"d": bad}})
