"""Encoder and list-context answer features: shapes, by-hand values, training standardisation."""

from __future__ import annotations

import pytest
import torch

from probrank.data.candidates import CandidateList
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models.multitask.features import AnswerFeaturizer, encoder_features
from tests.models.conftest import learnable_lists


def test_encoder_block_is_a_q_times_a_and_their_distance(tiny_encoder: TransformerEncoder):
    lists = learnable_lists(3, seed=2)
    block, answers, cosine, names = encoder_features(tiny_encoder, lists)
    h = tiny_encoder.hidden_size
    item = lists[0]
    q = torch.nn.functional.normalize(tiny_encoder.encode_texts([item.query]).double(), dim=-1)
    a = torch.nn.functional.normalize(
        tiny_encoder.encode_texts([item.candidates[1]]).double(), dim=-1
    )
    torch.testing.assert_close(
        block[1], torch.cat([a, q * a, (q - a).abs()], -1)[0], rtol=1e-6, atol=1e-6
    )
    torch.testing.assert_close(cosine[1], (q * a).sum(), rtol=1e-6, atol=1e-6)
    assert block.shape == (18, 3 * h) and answers.shape == (18, h) and len(names) == 3 * h


def test_featurizer_standardises_on_training_lists_only(tiny_encoder: TransformerEncoder):
    train, other = learnable_lists(10, seed=0), learnable_lists(4, seed=5)
    featurizer = AnswerFeaturizer(tiny_encoder).fit(train)
    fitted = featurizer.transform(train)
    torch.testing.assert_close(
        fitted.features.mean(0), torch.zeros(fitted.features.shape[1], dtype=torch.float64),
        rtol=0, atol=1e-6,  # the constant log-length column is divided by the 1e-8 floor
    )  # fmt: skip
    assert fitted.names[-4:] == ["qa_cos", "qa_cos_inv_rank", "qa_cos_gap_to_best", "log_list_len"]
    assert fitted.groups[1] == list(range(6, 12)) and fitted.labels is not None
    unlabelled = [CandidateList(i.qid, i.query, i.candidate_ids, i.candidates) for i in other]
    plain = featurizer.transform(unlabelled)
    assert plain.labels is None and plain.grades == []
    torch.testing.assert_close(plain.features, featurizer.transform(other).features, rtol=0, atol=0)
    narrow = AnswerFeaturizer(tiny_encoder, list_context=False).fit(train)
    assert narrow.transform(other).features.shape[1] == fitted.features.shape[1] - 4


def test_unfitted_featurizer_is_an_error(tiny_encoder: TransformerEncoder) -> None:
    with pytest.raises(InputDataError, match="not fitted"):
        AnswerFeaturizer(tiny_encoder).transform(learnable_lists(1, seed=0))
