"""MEDIQA joint features: the list-context group against hand-computed values, and the
metadata group's domains and ranks on two made-up questions (no encoder needed)."""

from __future__ import annotations

import math

import pytest
import torch

from probrank.data.datasets.mediqa import MediqaList
from probrank.exceptions import InputDataError
from probrank.models.multitask.mediqa_features import MediqaFeaturizer, _list_context, answer_domain


def _lists() -> list[MediqaList]:
    return [
        MediqaList("t:1", "flu symptoms fever", ("1_A1", "1_A2", "1_A3"),
                   ("flu causes fever and cough", "broken leg treatment", "fever in flu"),
                   (1, 0, 1), (4, 1, 3), (1, 2, 3), (1, 3, 2),
                   ("https://www.medlineplus.gov/a", "https://nih.gov/b", "")),
        MediqaList("t:2", "knee pain", ("2_A1", "2_A2"), ("knee pain causes", "eye drops"),
                   (1, 0), (3, 2), (2, 1), (1, 2), ("https://nih.gov/c", "https://x.org/d")),
    ]  # fmt: skip


def test_list_context_by_hand():
    cos = torch.tensor([0.2, 0.8, 0.5, 0.1, 0.3], dtype=torch.float64)
    other = torch.tensor([1.0, 0.0, 2.0, 5.0, 5.0], dtype=torch.float64)
    block, names = _list_context(_lists(), {"qa_cos": cos, "tfidf": other})
    assert names == [
        "qa_cos",
        "qa_cos_inv_rank",
        "qa_cos_gap_to_best",
        "tfidf_gap_to_best",
        "log_list_len",
    ]
    expected = torch.tensor(
        [
            [0.2, 1 / 3, -0.6, -1.0, math.log(3)],
            [0.8, 1.0, 0.0, -2.0, math.log(3)],
            [0.5, 1 / 2, -0.3, 0.0, math.log(3)],
            [0.1, 1 / 2, -0.2, 0.0, math.log(2)],
            [0.3, 1.0, 0.0, 0.0, math.log(2)],
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(block, expected, rtol=0, atol=1e-12)


def test_metadata_only_featurizer():
    lists = _lists()
    featurizer = MediqaFeaturizer(None, None, max_domains=2).fit(lists)
    assert featurizer.domains == ["nih.gov", ""]  # by count, then name
    features = featurizer.transform(lists)
    assert features.names[:4] == [
        "inv_system_rank",
        "relative_system_rank",
        "log_length",
        "tfidf_cosine",
    ]
    assert features.names[4:] == ["domain=nih.gov", "domain=", "domain=other"]
    assert features.features.shape == (5, 7)
    assert features.groups == [[0, 1, 2], [3, 4]]
    # standardised with the training statistics: mean 0 per column on the training lists
    torch.testing.assert_close(
        features.features.mean(0), torch.zeros(7, dtype=torch.float64), rtol=0, atol=1e-12
    )
    assert answer_domain("https://www.medlineplus.gov/a") == "medlineplus.gov"
    with pytest.raises(InputDataError, match="not fitted"):
        MediqaFeaturizer(None, None).transform(lists)
    with pytest.raises(InputDataError, match="at least one"):
        MediqaFeaturizer(None, None, metadata=False)
