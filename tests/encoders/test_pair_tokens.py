"""Cross-encoder pair tokens: left truncation of the context, BERT's template."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probrank.encoders.pair_tokens import cross_encoder_tokens, truncate_pair
from probrank.exceptions import InputDataError

ids = st.lists(st.integers(min_value=5, max_value=99), max_size=60)


@given(context=ids, response=ids, max_length=st.integers(min_value=4, max_value=70))
@settings(max_examples=300, deadline=None)
def test_truncation_keeps_the_context_end_and_the_response_start(
    context: list[int], response: list[int], max_length: int
) -> None:
    kept_context, kept_response = truncate_pair(context, response, max_length)
    budget = max_length - 3
    if len(context) + len(response) <= budget:
        assert (kept_context, kept_response) == (context, response)
        return
    assert len(kept_context) + len(kept_response) == budget  # the budget is used up
    assert kept_context == context[len(context) - len(kept_context) :]  # cut from the left
    assert kept_response == response[: len(kept_response)]  # cut from the right
    # the response keeps at least half the budget (or all of itself), and all it can
    assert len(kept_response) == min(len(response), max(budget // 2, budget - len(context)))


def test_a_short_question_keeps_everything_and_a_long_answer_its_start() -> None:
    question, answer = [7, 8], list(range(10, 60))
    kept_q, kept_a = truncate_pair(question, answer, 20)
    assert kept_q == question and kept_a == answer[:15]
    # a long context loses its oldest tokens
    kept_c, kept_r = truncate_pair(list(range(100, 150)), [5, 6], 12)
    assert kept_r == [5, 6] and kept_c == list(range(143, 150))


def test_tokens_equal_the_tokenizers_pairs_without_truncation(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert), local_files_only=True)
    contexts = ["how do i install the kernel", "no", "sound fix it works"]
    responses = ["sudo apt get update", "yes you", "reboot"]
    pairs = cross_encoder_tokens(tokenizer, contexts, responses, max_length=64)
    reference = tokenizer(contexts, responses)
    for pair, ids_, types in zip(
        pairs, reference["input_ids"], reference["token_type_ids"], strict=True
    ):
        assert list(pair.input_ids) == ids_
        assert list(pair.token_type_ids) == types


def test_truncated_pairs_keep_the_template(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert), local_files_only=True)
    context = "the a how do i install update ubuntu kernel driver sound fix"
    (pair,) = cross_encoder_tokens(tokenizer, [context], ["it works thanks"], max_length=10)
    words = tokenizer.convert_ids_to_tokens(list(pair.input_ids))
    # budget 7: the response (3 tokens) is kept, the context keeps its last 4 of 12
    context_part = ["[CLS]", "kernel", "driver", "sound", "fix", "[SEP]"]
    assert words == [*context_part, "it", "works", "thanks", "[SEP]"]
    assert len(pair) == 10
    assert pair.token_type_ids == (0,) * 6 + (1,) * 4


def test_bad_inputs_are_input_data_errors(tiny_bert: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert), local_files_only=True)
    with pytest.raises(InputDataError, match="pair up"):
        cross_encoder_tokens(tokenizer, ["a"], [], max_length=8)
    with pytest.raises(InputDataError, match="at least 4"):
        cross_encoder_tokens(tokenizer, ["a"], ["b"], max_length=3)
    with pytest.raises(InputDataError, match="at least 4"):
        truncate_pair([1], [2], 2)
