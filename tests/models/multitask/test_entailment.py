"""Question entailment: the classifier learns a separable toy task; the finder keeps at most N
FAQ questions above T, best first, found by BM25 first."""

from __future__ import annotations

import random

import numpy as np
import pytest

from probrank.data.datasets.medquad import MedQuADPair
from probrank.data.datasets.rqe import RQEPair
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models.multitask.entailment import EntailedQuestionFinder, EntailmentClassifier
from tests.encoders.conftest import WORDS, make_tiny_bert


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    path = make_tiny_bert(tmp_path_factory.mktemp("bert"))
    return TransformerEncoder(path, mode="bi", pooling="mean", show_progress=False)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7)))


def _pairs(n: int, seed: int) -> list[RQEPair]:
    # entailment <=> the FAQ is the question itself (|u - v| = 0): learnable from the features
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        chq = _sentence(rng)
        entails = i % 2 == 0
        faq = chq if entails else _sentence(rng)
        pairs.append(RQEPair(str(i), chq, faq, entails))
    return pairs


def test_classifier_learns_and_picks_c_on_validation(encoder):
    clf = EntailmentClassifier(encoder, cs=(0.01, 10.0, 1000.0)).fit(_pairs(200, 1), _pairs(60, 2))
    assert set(clf.validation) == {0.01, 10.0, 1000.0}
    losses = {c: v["log_loss"] for c, v in clf.validation.items()}
    assert clf.best_c == min(losses, key=losses.get)
    test = _pairs(80, 3)
    probs = clf.predict_proba([p.chq for p in test], [p.faq for p in test])
    accuracy = np.mean((probs > 0.5) == np.array([p.entails for p in test]))
    assert accuracy > 0.9


def test_unfitted_and_bad_arguments(encoder):
    with pytest.raises(InputDataError, match="not fitted"):
        EntailmentClassifier(encoder).predict_proba(["a"], ["b"])
    with pytest.raises(InputDataError, match="cs must"):
        EntailmentClassifier(encoder, cs=())
    with pytest.raises(InputDataError, match="FAQs"):
        EntailmentClassifier(encoder).features(["a", "b"], ["c"])


def test_finder_keeps_top_n_above_threshold(encoder):
    rng = random.Random(4)
    questions = [_sentence(rng) for _ in range(30)]
    collection = [
        MedQuADPair(str(i), q, f"answer {i}", "information", "", "src", "")
        for i, q in enumerate(questions)
    ]
    clf = EntailmentClassifier(encoder, cs=(1000.0,)).fit(_pairs(200, 5), _pairs(40, 6))
    finder = EntailedQuestionFinder(collection, clf, first_stage=10, top_n=2, threshold=0.5)
    found = finder.find([questions[3], questions[17]])
    assert len(found) == 2
    for query, kept in zip([questions[3], questions[17]], found, strict=True):
        assert len(kept) <= 2
        assert all(k.probability >= 0.5 for k in kept)
        assert [k.probability for k in kept] == sorted((k.probability for k in kept), reverse=True)
        # the identical FAQ question is retrieved by BM25 and judged entailed, so it is kept first
        assert kept and kept[0].pair.question == query
    strict = EntailedQuestionFinder(collection, clf, first_stage=10, top_n=2, threshold=1.0)
    assert all(len(k) == 0 or k[0].probability == 1.0 for k in strict.find([questions[0]]))
    with pytest.raises(InputDataError):
        EntailedQuestionFinder(collection, clf, top_n=5, first_stage=3)
