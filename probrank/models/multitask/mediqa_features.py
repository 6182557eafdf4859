"""Joint (question, answer) features for MEDIQA 2019 Task 3 answer filtering and re-ranking.

Three groups, each switchable:

* **encoder**: frozen sentence vectors (L2-normalised) of question q and answer a, as
  ``(a, q * a, |q - a|)`` (the question alone carries no answer-specific signal);
* **metadata**: CHiQA's 1 / SystemRank and SystemRank / list length, log answer length, the
  answer source (its URL's domain, one-hot over the training set's domains), and the TF-IDF
  cosine between question and answer (vectoriser fitted on the training texts);
* **entailment**: the question's entailed MedQuAD FAQ questions (BM25 + RQE classifier, top N
  above T; :mod:`probrank.models.multitask.entailment`): their count and best probability, and
  the best and mean cosine between the answer and the entailed questions' answers;
* **list context** (needs the encoder): how the answer compares with the other answers to the
  same question: the question-answer cosine, its gap to the best in the list and its rank
  there, the same gap for TF-IDF and for the entailed-answer cosine, and the list's length.
  Correctness is judged within a question, and these let a per-answer model see it.

Everything learned (TF-IDF vocabulary, domains, standardisation) is fitted on training data only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlparse

import numpy as np
import torch
from sklearn.feature_extraction.text import TfidfVectorizer
from torch import Tensor

from probrank.data.datasets.mediqa import MediqaList
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models.multitask.entailment import EntailedQuestionFinder
from probrank.models.multitask.features import encoder_features, list_context_features

__all__ = ["FeatureSet", "MediqaFeaturizer", "answer_domain"]


def answer_domain(url: str) -> str:
    """The host of an answer URL without ``www.`` ("" when there is none)."""
    host = urlparse(url.strip()).netloc.lower()
    return host.removeprefix("www.")


@dataclass(frozen=True)
class FeatureSet:
    """Features of many questions' answers.

    Attributes:
        features: `n x d` standardised features.
        groups: For each question, the indices of its answers (in the list's order).
        grades: `n` reference scores (1..4).
        labels: `n` 0/1 correctness labels.
        system_ranks: `n` CHiQA ranks.
        names: `d` feature names.
    """

    features: Tensor
    groups: list[list[int]]
    grades: list[int]
    labels: Tensor
    system_ranks: list[int]
    names: list[str] = field(default_factory=list)


class MediqaFeaturizer:
    """Builds :class:`FeatureSet` s; :meth:`fit` learns vocabulary, domains and scaling.

    Args:
        encoder: Frozen bi-mode sentence encoder (None: no encoder features).
        finder: Entailed-question finder (None: no entailment features).
        metadata: Include the metadata group.
        max_domains: Most frequent training domains kept as one-hot columns.
        list_context: Include the list-context group (when there is an encoder).
    """

    def __init__(
        self,
        encoder: TransformerEncoder | None,
        finder: EntailedQuestionFinder | None,
        *,
        metadata: bool = True,
        max_domains: int = 12,
        list_context: bool = True,
    ):
        if encoder is None and finder is None and not metadata:
            raise InputDataError("at least one feature group is needed")
        if finder is not None and encoder is None:
            raise InputDataError("entailment features need the encoder (answer similarities)")
        self.encoder = encoder
        self.finder = finder
        self.metadata = metadata
        self.max_domains = max_domains
        self.list_context = list_context
        self.tfidf: TfidfVectorizer | None = None
        self.domains: list[str] = []
        self.mean: Tensor | None = None
        self.std: Tensor | None = None

    def fit(self, lists: Sequence[MediqaList]) -> MediqaFeaturizer:
        """Fit TF-IDF, the domain vocabulary and the standardisation on training lists."""
        if not lists:
            raise InputDataError("no training questions")
        if self.metadata:
            texts = [t for item in lists for t in (item.query, *item.candidates)]
            self.tfidf = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit(texts)
            counts: dict[str, int] = {}
            for item in lists:
                for url in item.urls:
                    domain = answer_domain(url)
                    counts[domain] = counts.get(domain, 0) + 1
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            self.domains = [d for d, _ in ranked[: self.max_domains]]
        raw, _ = self._raw(lists)
        self.mean = raw.mean(0)
        self.std = raw.std(0).clamp_min(1e-8)
        return self

    def transform(self, lists: Sequence[MediqaList]) -> FeatureSet:
        """Standardised features of ``lists`` (call :meth:`fit` first)."""
        if self.mean is None or self.std is None:
            raise InputDataError("the featurizer is not fitted; call fit on training lists")
        raw, names = self._raw(lists)
        groups, start = [], 0
        for item in lists:
            groups.append(list(range(start, start + len(item))))
            start += len(item)
        return FeatureSet(
            features=(raw - self.mean) / self.std,
            groups=groups,
            grades=[g for item in lists for g in item.grades],
            labels=torch.tensor([x for item in lists for x in item.labels], dtype=torch.float64),
            system_ranks=[r for item in lists for r in item.system_ranks],
            names=names,
        )

    def _raw(self, lists: Sequence[MediqaList]) -> tuple[Tensor, list[str]]:
        blocks: list[Tensor] = []
        names: list[str] = []
        vectors = cosine = None
        if self.encoder is not None:
            block, vectors, cosine, block_names = encoder_features(self.encoder, lists)
            blocks.append(block)
            names += block_names
        meta = None
        if self.metadata:
            meta = self._metadata(lists)
            blocks.append(meta)
            names += ["inv_system_rank", "relative_system_rank", "log_length", "tfidf_cosine"]
            names += [f"domain={d}" for d in self.domains] + ["domain=other"]
        entailment = None
        if self.finder is not None and vectors is not None:
            entailment = self._entailment(lists, vectors)
            blocks.append(entailment)
            names += ["qe_count", "qe_best_prob", "qe_best_answer_cos", "qe_mean_answer_cos"]
        if self.list_context and cosine is not None:
            columns = {"qa_cos": cosine}
            if meta is not None:
                columns["tfidf"] = meta[:, 3]
            if entailment is not None:
                columns["qe_answer_cos"] = entailment[:, 2]
            block, block_names = _list_context(lists, columns)
            blocks.append(block)
            names += block_names
        return torch.cat(blocks, dim=1), names

    def _metadata(self, lists: Sequence[MediqaList]) -> Tensor:
        if self.tfidf is None:
            raise InputDataError("the featurizer is not fitted; call fit on training lists")
        rows = []
        for item in lists:
            q = self.tfidf.transform([item.query])
            a = self.tfidf.transform(list(item.candidates))
            cosine = np.asarray((a @ q.T).todense()).ravel()
            for rank, text, url, cos in zip(
                item.system_ranks, item.candidates, item.urls, cosine, strict=True
            ):
                domain = answer_domain(url)
                one_hot = [float(domain == d) for d in self.domains]
                other = float(domain not in self.domains)
                meta = [1.0 / rank, rank / len(item), math.log1p(len(text)), float(cos)]
                rows.append([*meta, *one_hot, other])
        return torch.tensor(rows, dtype=torch.float64)

    def _entailment(self, lists: Sequence[MediqaList], answer_vectors: Tensor) -> Tensor:
        if self.finder is None or self.encoder is None:
            raise InputDataError("entailment features need a finder and an encoder")
        found = self.finder.find([item.query for item in lists])
        faq_answers = list(dict.fromkeys(e.pair.answer for kept in found for e in kept))
        faq_vectors = (
            torch.nn.functional.normalize(
                self.encoder.encode_texts(faq_answers).double().cpu(), dim=-1
            )
            if faq_answers
            else torch.zeros(0, answer_vectors.shape[1], dtype=torch.float64)
        )
        index = {t: i for i, t in enumerate(faq_answers)}
        rows, start = [], 0
        for item, kept in zip(lists, found, strict=True):
            n = len(item)
            a = answer_vectors[start : start + n]
            start += n
            if kept:
                cos = a @ faq_vectors[[index[e.pair.answer] for e in kept]].T  # n x k
                best, mean = cos.max(1).values, cos.mean(1)
                prob = max(e.probability for e in kept)
            else:
                best = mean = torch.zeros(n, dtype=torch.float64)
                prob = 0.0
            for i in range(n):
                rows.append([float(len(kept)), prob, float(best[i]), float(mean[i])])
        return torch.tensor(rows, dtype=torch.float64)


_list_context = list_context_features
"""The old name of :func:`~probrank.models.multitask.features.list_context_features`."""
