"""Question entailment (RQE) for answer validation, as in Pentagon at MEDIQA 2019.

Two parts:

* :class:`EntailmentClassifier`: P(consumer question entails FAQ question) from frozen
  bi-encoder features ``(u, v, u*v, |u-v|)`` and a logistic regression (scikit-learn), its
  regularisation C chosen by log-loss on the validation pairs.
* :class:`EntailedQuestionFinder`: for a consumer question, BM25 (bm25s) retrieves candidate
  FAQ questions from MedQuAD as a first stage; the classifier re-scores them; the top N with
  P(entails) >= T are kept (the paper's N = 3, T = 0.7).

MedNLI, which Pentagon used for its NLI features, is not public and is not used here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss

from probrank._extras import require
from probrank.data.datasets.medquad import MedQuADPair
from probrank.data.datasets.rqe import RQEPair
from probrank.encoders.transformer import TransformerEncoder, interaction_features
from probrank.exceptions import InputDataError

__all__ = ["EntailedQuestion", "EntailedQuestionFinder", "EntailmentClassifier"]

DEFAULT_CS = (1e-3, 1e-2, 1e-1, 1.0, 10.0)


class EntailmentClassifier:
    """Logistic regression on bi-encoder interaction features of (chq, faq) pairs.

    Args:
        encoder: A frozen bi-mode encoder (its ``encode_texts`` is used, with its cache).
        cs: Candidate inverse regularisation strengths; the one with the lowest validation
            log-loss is kept.
        seed: Seed of the solver.
    """

    def __init__(
        self, encoder: TransformerEncoder, cs: Sequence[float] = DEFAULT_CS, seed: int = 0
    ):
        if not cs:
            raise InputDataError("cs must name at least one regularisation strength")
        self.encoder = encoder
        self.cs = tuple(cs)
        self.seed = seed
        self.model: LogisticRegression | None = None
        self.validation: dict[float, dict[str, float]] = {}
        """``{C: {"log_loss", "accuracy"}}`` on the validation pairs, filled by :meth:`fit`."""

    def features(self, chqs: Sequence[str], faqs: Sequence[str]) -> np.ndarray:
        """`n x 4h` interaction features of L2-normalised sentence vectors."""
        if len(chqs) != len(faqs):
            raise InputDataError(f"{len(chqs)} questions but {len(faqs)} FAQs")
        texts = list(dict.fromkeys([*chqs, *faqs]))
        vectors = torch.nn.functional.normalize(self.encoder.encode_texts(texts).double(), dim=-1)
        index = {t: i for i, t in enumerate(texts)}
        u = vectors[[index[t] for t in chqs]]
        v = vectors[[index[t] for t in faqs]]
        return interaction_features(u, v).cpu().numpy()

    def fit(self, train: Sequence[RQEPair], validation: Sequence[RQEPair]) -> EntailmentClassifier:
        """Fit one model per C on ``train``, keep the best by ``validation`` log-loss."""
        if not train or not validation:
            raise InputDataError("entailment classifier needs training and validation pairs")
        x_train = self.features([p.chq for p in train], [p.faq for p in train])
        y_train = np.array([p.entails for p in train], dtype=int)
        x_val = self.features([p.chq for p in validation], [p.faq for p in validation])
        y_val = np.array([p.entails for p in validation], dtype=int)
        best: tuple[float, LogisticRegression] | None = None
        for c in self.cs:
            model = LogisticRegression(C=c, max_iter=2000, random_state=self.seed)
            model.fit(x_train, y_train)
            probs = model.predict_proba(x_val)[:, 1]
            loss = float(log_loss(y_val, probs, labels=[0, 1]))
            self.validation[c] = {
                "log_loss": loss,
                "accuracy": float(accuracy_score(y_val, probs > 0.5)),
            }
            if best is None or loss < best[0]:
                best = (loss, model)
        if best is None:  # unreachable: cs is non-empty
            raise InputDataError("no regularisation strength to try")
        self.model = best[1]
        return self

    @property
    def best_c(self) -> float:
        """The C kept by :meth:`fit`."""
        if self.model is None:
            raise InputDataError("the entailment classifier is not fitted")
        return float(self.model.C)

    def predict_proba(self, chqs: Sequence[str], faqs: Sequence[str]) -> np.ndarray:
        """`n` probabilities that each consumer question entails its FAQ."""
        if self.model is None:
            raise InputDataError("the entailment classifier is not fitted; call fit first")
        if not chqs:
            return np.zeros(0)
        return self.model.predict_proba(self.features(chqs, faqs))[:, 1]


@dataclass(frozen=True)
class EntailedQuestion:
    """A MedQuAD pair judged entailed by a consumer question."""

    pair: MedQuADPair
    bm25: float
    probability: float


class EntailedQuestionFinder:
    """BM25 first stage over MedQuAD questions, entailment re-scoring, top N above T.

    Args:
        collection: MedQuAD pairs (with answers) to search.
        classifier: A fitted :class:`EntailmentClassifier`.
        first_stage: FAQ questions BM25 retrieves per consumer question.
        top_n: Entailed questions kept at most (N).
        threshold: Minimum P(entails) to keep one (T).
    """

    def __init__(
        self,
        collection: Sequence[MedQuADPair],
        classifier: EntailmentClassifier,
        *,
        first_stage: int = 20,
        top_n: int = 3,
        threshold: float = 0.7,
    ):
        if not collection:
            raise InputDataError("the FAQ collection is empty")
        if not 0.0 <= threshold <= 1.0 or top_n < 1 or first_stage < top_n:
            raise InputDataError("need 0 <= threshold <= 1 and 1 <= top_n <= first_stage")
        self.collection = list(collection)
        self.classifier = classifier
        self.first_stage = first_stage
        self.top_n = top_n
        self.threshold = threshold
        bm25s = _bm25s()
        tokens = bm25s.tokenize(
            [p.question for p in self.collection], stopwords="en", show_progress=False
        )
        self.index = bm25s.BM25()
        self.index.index(tokens, show_progress=False)

    def find(self, questions: Sequence[str]) -> list[list[EntailedQuestion]]:
        """Entailed FAQ questions for each consumer question (best first; possibly none)."""
        if not questions:
            return []
        k = min(self.first_stage, len(self.collection))
        bm25s = _bm25s()
        tokens = bm25s.tokenize(list(questions), stopwords="en", show_progress=False)
        ids, scores = self.index.retrieve(tokens, k=k, show_progress=False)
        chqs = [q for q in questions for _ in range(k)]
        faqs = [self.collection[int(i)].question for row in ids for i in row]
        probs = self.classifier.predict_proba(chqs, faqs).reshape(len(questions), k)
        found = []
        for row_ids, row_scores, row_probs in zip(ids, scores, probs, strict=True):
            order = np.argsort(-row_probs, kind="stable")
            kept = [
                EntailedQuestion(
                    self.collection[int(row_ids[j])], float(row_scores[j]), float(row_probs[j])
                )
                for j in order
                if row_probs[j] >= self.threshold
            ]
            found.append(kept[: self.top_n])
        return found


def _bm25s() -> Any:
    """The ``bm25s`` module (the ``mediqa`` extra)."""
    return require("bm25s", extra="mediqa", purpose="the MEDIQA entailment features (BM25)")
