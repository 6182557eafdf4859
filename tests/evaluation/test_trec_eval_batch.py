"""The fast paths of evaluation against the per-topic reference path.

* the vectorised measures over many rankings (:mod:`probrank.evaluation.trec_eval.vectorised`)
  equal the per-topic formulas bit for bit, for every family and option;
* the compiled run reader (:mod:`probrank.data.trec_columns`) reads what the strict reader
  reads, with the same doubles, and gives up (``None``) on every doubtful file;
* :meth:`Evaluator.evaluate_many` (files read together, ranked by Arrow) equals
  :meth:`Evaluator.per_query` run by run, and keeps the strict reader's errors and their order.
"""

from __future__ import annotations

import gzip
import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probrank.data import Qrels, Run
from probrank.data.trec_columns import read_run_columns
from probrank.evaluation import Evaluator
from probrank.evaluation.measures import evaluate_many
from probrank.evaluation.trec_eval.formulas import FORMULAS
from probrank.evaluation.trec_eval.ranking import RankedTopic
from probrank.exceptions import InputDataError
from tests.evaluation.test_trec_eval_fuzz import OPTION_SETS, scores
from tests.evaluation.trec_eval_compare import MEASURE_GROUPS, options_to_kwargs

ASCII_QIDS = ["1", "2", "10", "q", "Q"]
ASCII_DOCS = ["a", "b", "c", "ab", "B", "0", "10", "9", "z-1", "z_1", "abcdefghij", "abcdefghik"]
ALL_MEASURES = [name for group in MEASURE_GROUPS for name in group]


def per_topic_reference(evaluator: Evaluator, run: Run) -> dict[str, dict[str, float]]:
    """trec_eval's per-topic values computed topic by topic with the per-topic formulas
    (the loop the engine ran before it evaluated many rankings at once)."""
    engine = evaluator._engine
    values: dict[str, dict[str, float]] = {}
    formulas = [
        (m.name, FORMULAS[m.family], m, m.level(engine.relevance_level)) for m in engine.measures
    ]
    for qid in sorted(evaluator.qrels.as_dict()):
        scores_ = run.as_dict().get(qid)
        judged = engine.judged(qid)
        if scores_:
            topic = RankedTopic.rank(judged, scores_, engine.depth)
            values[qid] = {name: f(topic, spec, level) for name, f, spec, level in formulas}
        elif engine.all_queries:
            topic = RankedTopic.missing(judged)
            row = {name: f(topic, spec, level) for name, f, spec, level in formulas}
            for m in engine.measures:
                if m.family in ("NumRet", "Unjudged"):
                    row[m.name] = 0.0
            values[qid] = row
    return values


@st.composite
def ascii_cases(draw):
    """Qrels, two runs (ASCII ids, hard scores) and trec_eval options."""
    topics = draw(st.lists(st.sampled_from(ASCII_QIDS), min_size=1, max_size=4, unique=True))
    qrels: dict[str, dict[str, int]] = {}
    for qid in topics:
        low = draw(st.sampled_from([-3, -1, 0]))
        qrels[qid] = draw(
            st.dictionaries(st.sampled_from(ASCII_DOCS), st.integers(low, 3), min_size=1)
        )
    runs = []
    for _ in range(2):
        run: dict[str, dict[str, float]] = {}
        for qid in draw(st.lists(st.sampled_from(ASCII_QIDS), min_size=1, max_size=4, unique=True)):
            run[qid] = draw(
                st.dictionaries(st.sampled_from(ASCII_DOCS), scores(), min_size=1, max_size=12)
            )
        runs.append(run)
    return qrels, runs, draw(st.sampled_from(OPTION_SETS))


def _write_run(path: Path, run: dict[str, dict[str, float]], separator: str = " ") -> Path:
    lines = [
        separator.join([q, "Q0", d, str(i), repr(s), "tag"])
        for q, docs in run.items()
        for i, (d, s) in enumerate(docs.items())
    ]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path


@settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=ascii_cases())
def test_fast_paths_equal_the_per_topic_formulas(tmp_path_factory, case):
    qrels, runs, options = case
    folder = tmp_path_factory.mktemp("batch")
    evaluator = Evaluator(Qrels(qrels), ALL_MEASURES, **options_to_kwargs(options))  # type: ignore[arg-type]
    paths = [_write_run(folder / f"run{i}", run, "\t" if i else " ") for i, run in enumerate(runs)]
    expected = []
    for run in runs:
        reference = per_topic_reference(evaluator, Run(run))
        if not reference:
            with pytest.raises(InputDataError, match="share no query"):
                evaluator.per_query(Run(run))
            with pytest.raises(InputDataError, match="share no query"):
                evaluator.evaluate_many([paths[runs.index(run)]])
            return
        assert evaluator.per_query(Run(run)) == reference  # vectorised, bit for bit
        expected.append(reference)
    results = evaluator.evaluate_many(paths)  # Arrow reader and ranking
    assert [r.per_query for r in results] == expected
    assert [r.totals for r in results] == [evaluator.aggregate(v) for v in expected]
    assert [r.name for r in results] == ["run0", "run1"]
    assert [r.tag for r in results] == ["tag", "tag"]
    mixed = evaluator.evaluate_many([Run(runs[0]), runs[1]], threads=2)  # in memory
    assert [r.per_query for r in mixed] == expected


def test_reader_reads_what_the_strict_reader_reads(tmp_path):
    rng = random.Random(0)
    lines = []
    for q in range(1, 4):
        for rank in range(1, 40):
            score = rng.choice([rng.uniform(-1e3, 1e3), float(rng.randint(-3, 3)), -0.0, 5e-324])
            token = rng.choice([repr(score), f"{score:.3e}", f"{score:.9g}"])
            lines.append(f"{q} Q0 D{rng.randint(0, 10**6)}-{rank} {rank} {token} my-tag")
    text = "\n".join(lines)
    for name, content in {
        "plain": text + "\n",
        "no-final-newline": text,
        "tabs": text.replace(" ", "\t") + "\n",
        "mixed": text.replace(" Q0 ", "\tQ0\t") + "\n",
    }.items():
        path = tmp_path / name
        path.write_text(content, encoding="ascii")
        gz = tmp_path / f"{name}.gz"
        gz.write_bytes(gzip.compress(content.encode()))
        strict = Run.read(path)
        for file in (path, gz):
            columns = read_run_columns(file)
            assert columns is not None, name
            assert columns.name == name and columns.tag == "my-tag"
            assert columns.qid.to_pylist() == [line.split()[0] for line in lines]
            read = {}
            for q, d, s in zip(
                columns.qid.to_pylist(),
                columns.docno.to_pylist(),
                columns.score.tolist(),
                strict=True,
            ):
                read.setdefault(q, {})[d] = s
            assert read == strict.as_dict()
            assert all(math.copysign(1.0, s) == 1.0 for s in columns.score.tolist() if s == 0.0)


@pytest.mark.parametrize(
    "content",
    [
        "q1 Q0 d1 1 1.5 t\n# comment\nq1 Q0 d2 2 1 t\n",
        "q1 Q0 d1 1 1.5 t\n  # comment\n",
        "q1 Q0 d1 1 1.5 t\n\nq1 Q0 d2 2 1 t\n",
        "q1 Q0 d1 1 1.5 t\r\n",
        "q1 Q0 d1 1 1.5 t \n",
        " q1 Q0 d1 1 1.5 t\n",
        "q1  Q0 d1 1 1.5 t\n",
        "q1 Q0 d1 1 1.5\n",
        "q1 Q0 d1 1 1.5 t extra\n",
        "q1 Q0 d1 1 nan t\n",
        "q1 Q0 d1 1 inf t\n",
        "q1 Q0 d1 1 1e400 t\n",
        "q1 Q0 d1 1 0x1p3 t\n",
        "q1 Q0 d1 1 1_000 t\n",
        "q1 Q0 d1 1 . t\n",
        "q1 Q0 d1 1 1.5 t\nq1 Q0 d1 2 0.5 t\n",
        "q1 Q0 d\u00e91 1 1.5 t\n",
        "q1 Q0\u00a0d1 1 1.5 t\n",
        "q1 Q0 d1 1 1.5\vt\n",
        "q1 Q0 d1 1 1.5 t\x00\n",
        "",
    ],
)
def test_reader_gives_up_on_doubtful_files(tmp_path, content):
    path = tmp_path / "run"
    path.write_text(content, encoding="utf-8")
    assert read_run_columns(path) is None


def test_reader_scores_equal_python_floats(tmp_path):
    rng = np.random.default_rng(1)
    values = rng.normal(size=3000) * 10.0 ** rng.integers(-300, 300, size=3000)
    tokens = [repr(v) for v in values.tolist()]
    tokens += [f"{v:.25e}" for v in values[:500].tolist()]  # more digits than a double holds
    tokens += [
        "1",
        "+1",
        "-0",
        ".5",
        "5.",
        "1E5",
        "1e-5",
        "00012.50",
        "4.9e-324",
        "1.7976931348623157e308",
    ]
    path = tmp_path / "run"
    path.write_text(
        "".join(f"1 Q0 d{i} {i} {t} x\n" for i, t in enumerate(tokens)), encoding="ascii"
    )
    columns = read_run_columns(path)
    assert columns is not None
    assert columns.score.tolist() == [float(t) + 0.0 for t in tokens]


def test_many_files_keep_the_strict_errors_in_order(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 a 2\n", encoding="ascii")
    good = tmp_path / "good"
    good.write_text("1 Q0 a 1 2.0 g\n1 Q0 b 2 1.0 g\n", encoding="ascii")
    other = tmp_path / "other"
    other.write_text("7 Q0 a 1 2.0 o\n", encoding="ascii")  # shares no topic
    dup = tmp_path / "dup"
    dup.write_text("1 Q0 a 1 2.0 d\n1 Q0 a 2 1.0 d\n", encoding="ascii")
    bad = tmp_path / "bad"
    bad.write_text("1 Q0 a 1 2.0 b\n1 Q0 b 2 x b\n", encoding="ascii")
    evaluator = Evaluator(qrels, ["map", "P@1"])
    with pytest.raises(InputDataError, match=r"bad:2: score 'x' is not a number"):
        evaluator.evaluate_many([good, other, bad, dup])
    with pytest.raises(InputDataError, match=r"dup:2: duplicate document 'a'"):
        evaluator.evaluate_many([good, other, dup, bad, tmp_path / "missing"])
    with pytest.raises(InputDataError, match="no such file"):
        evaluator.evaluate_many([good, tmp_path / "missing", dup])
    with pytest.raises(InputDataError, match="'other' and the qrels share no query"):
        evaluator.evaluate_many([good, other])
    (first,) = evaluator.evaluate_many([dup], on_duplicate="first")
    assert first.per_query == evaluator.per_query(Run.read(dup, on_duplicate="first"))
    assert evaluate_many(qrels, [good, good], ["map"]) == [{"map": 1.0}, {"map": 1.0}]


def test_many_files_in_several_groups_and_threads(tmp_path, monkeypatch):
    import probrank.evaluation.trec_eval.files as files

    rng = random.Random(2)
    qrels = tmp_path / "qrels"
    qrels.write_text(
        "".join(f"{q} 0 d{d} {rng.randint(-1, 2)}\n" for q in range(5) for d in range(0, 60, 3)),
        encoding="ascii",
    )
    paths = []
    for i in range(7):
        path = tmp_path / f"r{i}"
        path.write_text(
            "".join(
                f"{q} Q0 d{d} 0 {rng.choice([1.0, 2.0, rng.random()])!r} r{i}\n"
                for q in range(6)
                for d in rng.sample(range(60), 25)
            ),
            encoding="ascii",
        )
        paths.append(path)
    evaluator = Evaluator(qrels, ALL_MEASURES, all_queries=True, depth=20)
    expected = [per_topic_reference(evaluator, Run.read(p)) for p in paths]
    monkeypatch.setattr(files, "GROUP_BYTES", 3000)  # a few files per group
    for threads in (1, 2):
        results = evaluator.evaluate_many(paths, threads=threads)
        assert [r.per_query for r in results] == expected


def test_rankings_of_very_different_lengths_are_taken_in_chunks(tmp_path, monkeypatch):
    import functools

    import probrank.evaluation.trec_eval.engine as engine_module
    from probrank.evaluation.trec_eval.rows import ranked_chunks

    rng = random.Random(3)
    qrels = {str(q): {f"d{d}": rng.randint(-1, 3) for d in range(0, 300, 7)} for q in range(9)}
    run = {
        str(q): {f"d{d}": rng.choice([1.0, 0.5, rng.random()]) for d in rng.sample(range(300), n)}
        for q, n in enumerate([1, 2, 3, 5, 8, 40, 120, 250, 300])
    }
    evaluator = Evaluator(Qrels(qrels), ALL_MEASURES, all_queries=True)
    expected = per_topic_reference(evaluator, Run(run))
    monkeypatch.setattr(engine_module, "ranked_chunks", functools.partial(ranked_chunks, cells=400))
    assert evaluator.per_query(Run(run)) == expected
    path = _write_run(tmp_path / "run", run)
    assert evaluator.evaluate_many([path])[0].per_query == expected
    flat = np.arange(20, dtype=np.int64)
    lengths = np.array([5, 1, 10, 4], dtype=np.int64)
    chunks = ranked_chunks(flat, lengths, [None] * 4, cells=12)  # type: ignore[list-item]
    assert sorted(int(i) for rows, _ in chunks for i in rows) == [0, 1, 2, 3]
    starts = [0, 5, 6, 16]
    for rows, matrix in chunks:
        for k, i in enumerate(rows.tolist()):
            got = matrix.rels[k, : int(matrix.num_ret[k])].tolist()
            assert got == list(range(starts[i], starts[i] + int(lengths[i])))


def test_files_in_score_order_with_tied_scores_keep_trec_order(tmp_path):
    """Files that list each topic's lines together, scores descending (the order most runs
    have), with tied scores in any docno order: the ranking that keeps the file's order and
    sorts only the ties equals the per-topic reference."""
    rng = random.Random(4)
    qrels = {str(q): {f"d{d}": rng.randint(-1, 2) for d in range(0, 80, 2)} for q in range(1, 7)}
    evaluator = Evaluator(Qrels(qrels), ALL_MEASURES, all_queries=True, depth=30)
    paths, expected = [], []
    for i in range(5):
        run = {}
        lines = []
        for q in rng.sample(["3", "1", "10", "2", "5", "9"], 5):  # not in trec_eval's order
            docs = rng.sample(range(80), 40)
            scores = sorted(
                (rng.choice([1.0, 0.5, 0.25, rng.random()]) for _ in docs), reverse=True
            )
            run[q] = {f"d{d}": s for d, s in zip(docs, scores, strict=True)}
            # within a tie, docno ascending, descending or as drawn
            ordered = sorted(run[q].items(), key=lambda item: (-item[1], item[0]))
            if i % 3 == 1:
                ordered = sorted(run[q].items(), key=lambda item: (item[1], item[0]), reverse=True)
            elif i % 3 == 2:
                ordered = sorted(run[q].items(), key=lambda item: -item[1])
            lines += [f"{q} Q0 {d} {k} {s!r} t{i}" for k, (d, s) in enumerate(ordered, 1)]
        path = tmp_path / f"run{i}"
        path.write_text("\n".join(lines) + "\n", encoding="ascii")
        paths.append(path)
        expected.append(per_topic_reference(evaluator, Run(run)))
    assert [r.per_query for r in evaluator.evaluate_many(paths, threads=1)] == expected


def test_repeated_keys_are_found_exactly():
    """The hashing rounds that look for pairs seen twice find exactly the repeated keys (a
    sort of every key is the reference), among many keys and few."""
    from probrank.data.trec_columns import _repeated

    rng = np.random.default_rng(5)
    for size, span in ((50_000, 10**12), (50_000, 60_000), (3_000, 2**62), (5, 3), (0, 1)):
        keys = rng.integers(0, span, size=size, dtype=np.int64)
        values, counts = np.unique(keys, return_counts=True)
        reference = np.flatnonzero(np.isin(keys, values[counts > 1]))
        assert _repeated(keys).tolist() == reference.tolist()


def test_files_of_every_kind_read_together_equal_the_strict_reader(tmp_path):
    """One batch of a space file, a tab file, a file of both, a gzipped one, one without its
    last line feed and two doubtful ones (a CR, a comment line): every run equals the strict
    reader's, in the given order, and no file is changed (tabs are made spaces in the
    reader's copy only)."""
    rng = random.Random(5)
    qrels = tmp_path / "qrels"
    qrels.write_text(
        "".join(f"{q} 0 d{d} {rng.randint(0, 2)}\n" for q in (1, 2, 10) for d in range(30)),
        encoding="ascii",
    )

    def lines(tag: str) -> list[str]:
        return [
            f"{q} Q0 d{d} {k} {rng.choice([1.0, 0.5, rng.random()])!r} {tag}"
            for q in ("10", "1", "2")
            for k, d in enumerate(rng.sample(range(40), 20), 1)
        ]

    contents = {
        "spaces": "\n".join(lines("s")) + "\n",
        "tabs": "\n".join(line.replace(" ", "\t") for line in lines("t")) + "\n",
        "both": "\n".join(line.replace(" Q0 ", "\tQ0\t") for line in lines("b")) + "\n",
        "no-last-feed": "\n".join(lines("n")),
        "cr": "\r\n".join(lines("c")) + "\r\n",
        "comment": "# a comment\n" + "\n".join(lines("h")) + "\n",
    }
    paths = []
    for name, content in contents.items():
        path = tmp_path / name
        path.write_bytes(content.encode("ascii"))
        paths.append(path)
    gz = tmp_path / "gzipped.gz"
    gz.write_bytes(gzip.compress("\n".join(lines("g")).replace(" ", "\t").encode("ascii")))
    paths.insert(2, gz)
    before = {path: path.read_bytes() for path in paths}
    evaluator = Evaluator(qrels, ALL_MEASURES)
    expected = [evaluator.per_query(Run.read(path)) for path in paths]
    for order in (paths, paths[::-1]):
        results = evaluator.evaluate_many(order)
        assert [r.name for r in results] == [p.name.removesuffix(".gz") for p in order]
        assert [r.per_query for r in results] == [expected[paths.index(p)] for p in order]
        assert [r.tag for r in results] == [Run.read(p).tag for p in order]
    assert {path: path.read_bytes() for path in paths} == before
