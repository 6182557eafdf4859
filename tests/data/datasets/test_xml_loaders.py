"""RQE and MedQuAD loaders: real files, malformed files, and an entity-expansion bomb."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from probrank.data.datasets.medquad import read_medquad
from probrank.data.datasets.rqe import read_rqe
from probrank.exceptions import InputDataError

RQE = """<?xml version="1.0" encoding="UTF-8"?>
<Set>
<pair pid="1" type="t" value="true"><chq> Is  it bad? </chq><faq>Is it bad ?</faq></pair>
<pair pid="2" value="false"><chq>q</chq><faq>other</faq></pair>
</Set>"""

BOMB = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lollollollollollollollollollol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<Set><pair pid="1" value="true"><chq>&lol9;</chq><faq>x</faq></pair></Set>"""


def test_rqe_parses_and_normalises_whitespace(tmp_path):
    (tmp_path / "r.xml").write_text(RQE)
    pairs = read_rqe(tmp_path / "r.xml")
    assert [(p.pair_id, p.chq, p.entails, p.kind) for p in pairs] == [
        ("1", "Is it bad?", True, "t"),
        ("2", "q", False, None),
    ]


def test_entity_bomb_rejected_quickly_without_memory_growth(tmp_path):
    (tmp_path / "bomb.xml").write_text(BOMB)
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(InputDataError, match="refused unsafe XML"):
        read_rqe(tmp_path / "bomb.xml")
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 1.0
    assert peak < 5 * 2**20  # the expansion would be ~3 GB


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("<Set><pair pid='1' value='true'><chq>q</chq></pair></Set>", "has no <faq>"),
        (
            "<Set><pair pid='1' value='maybe'><chq>q</chq><faq>f</faq></pair></Set>",
            "not true/false",
        ),
        ("<Set><pair value='true'><chq>q</chq><faq>f</faq></pair></Set>", "without a pid"),
        ("<Set><pair pid='1' value='true'><chq>q</chq>", "malformed XML"),
        ("<Set></Set>", "no <pair>"),
    ],
)
def test_rqe_malformed(tmp_path, content, message):
    (tmp_path / "bad.xml").write_text(content)
    with pytest.raises(InputDataError, match=message) as info:
        read_rqe(tmp_path / "bad.xml")
    assert "bad.xml" in str(info.value)


def test_rqe_empty_question_skipped_with_warning(tmp_path):
    (tmp_path / "r.xml").write_text(RQE.replace("<faq>other</faq>", "<faq> </faq>"))
    with pytest.warns(UserWarning, match="skipped 1 pair"):
        assert len(read_rqe(tmp_path / "r.xml")) == 1


def test_medquad_documents(tmp_path):
    folder = tmp_path / "1_Src"
    folder.mkdir()
    (folder / "a.xml").write_text(
        '<Document id="1" source="Src" url="http://x"><Focus>Flu</Focus><QAPairs>'
        '<QAPair pid="1"><Question qid="1-1" qtype="information">What is  flu ?</Question>'
        "<Answer>A <b>virus</b>.</Answer></QAPair>"
        '<QAPair pid="2"><Question qid="1-2" qtype="treatment">How to treat?</Question>'
        "<Answer></Answer></QAPair></QAPairs></Document>"
    )
    pairs = read_medquad(tmp_path, progress=False)
    assert [(p.qid, p.question, p.answer, p.focus, p.source) for p in pairs] == [
        ("1-1", "What is flu ?", "A virus.", "Flu", "Src")
    ]
    assert len(read_medquad(tmp_path, progress=False, include_empty_answers=True)) == 2
    (folder / "none").mkdir()
    with pytest.raises(InputDataError, match="no MedQuAD"):
        read_medquad(folder / "none", progress=False)
    with pytest.raises(InputDataError, match="missing: no such folder"):
        read_medquad(folder / "missing", progress=False)


@pytest.mark.integration
def test_real_rqe_sets(shared_data):
    folder = shared_data / "qa" / "mediqa2019-task2-rqe"
    with pytest.warns(UserWarning, match="pid 5860"):
        train = read_rqe(folder / "MEDIQA2019-Task2-RQE-TrainingSet-AMIA2016.xml")
    assert len(train) == 8587
    test = read_rqe(folder / "MEDIQA2019-Task2-RQE-TestSet-wLabels.xml")
    assert len(test) == 230 and sum(p.entails for p in test) == 115
