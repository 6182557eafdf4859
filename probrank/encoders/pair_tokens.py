"""Cross-encoder inputs ``[CLS] context [SEP] response [SEP]`` truncated as usual for dialogue.

A dialogue context grows at its start (older turns), so when a pair does not fit in
``max_length`` tokens the context loses tokens **from the left** (its oldest tokens) and the
response keeps its beginning. The response is cut (from the right) only when it alone would take
more than its share: it keeps at least half of the token budget, or everything the context does
not need. A question-answer pair (MEDIQA: a short question, a long answer) therefore keeps the
whole question and the start of the answer.

The template is BERT's (``[CLS] A [SEP] B [SEP]``, token types 0 for ``[CLS] A [SEP]`` and 1 for
``B [SEP]``); without truncation it gives the ids ``tokenizer(context, response)`` gives
(a test checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from probrank.exceptions import InputDataError

__all__ = ["PairTokens", "cross_encoder_tokens", "truncate_pair"]

SPECIAL_TOKENS = 3
"""``[CLS]`` and two ``[SEP]``."""


@dataclass(frozen=True)
class PairTokens:
    """The token ids of one (context, response) pair.

    Attributes:
        input_ids: `L` token ids, ``[CLS] context [SEP] response [SEP]``.
        token_type_ids: `L` segment ids (0: ``[CLS] context [SEP]``, 1: ``response [SEP]``).
    """

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.input_ids)


def truncate_pair(
    context: Sequence[int], response: Sequence[int], max_length: int
) -> tuple[list[int], list[int]]:
    """Cut a tokenised pair to ``max_length`` tokens with the special tokens.

    Args:
        context: Context token ids (no special tokens).
        response: Response token ids (no special tokens).
        max_length: Total length with ``[CLS]`` and both ``[SEP]`` (at least 4).

    Returns:
        ``(context, response)``: the context's last tokens and the response's first tokens;
        unchanged when they fit. The response keeps ``min(len(response), max(budget // 2,
        budget - len(context)))`` tokens, where ``budget = max_length - 3``, and the context
        the rest of the budget.

    Raises:
        InputDataError: ``max_length < 4``.
    """
    if max_length < SPECIAL_TOKENS + 1:
        raise InputDataError(f"max_length must be at least 4, got {max_length}")
    budget = max_length - SPECIAL_TOKENS
    if len(context) + len(response) <= budget:
        return list(context), list(response)
    keep_response = min(len(response), max(budget // 2, budget - len(context)))
    keep_context = budget - keep_response
    kept_context = list(context[len(context) - keep_context :]) if keep_context else []
    return kept_context, list(response[:keep_response])


def cross_encoder_tokens(
    tokenizer: Any, contexts: Sequence[str], responses: Sequence[str], max_length: int
) -> list[PairTokens]:
    """Tokenise `n` (context, response) pairs for a BERT-style cross-encoder.

    Args:
        tokenizer: A Hugging Face tokenizer with ``cls_token_id`` and ``sep_token_id``.
        contexts: `n` context (query) strings.
        responses: `n` response (candidate) strings.
        max_length: Tokens per pair, special tokens included (see :func:`truncate_pair`).

    Returns:
        `n` :class:`PairTokens`, in input order.

    Raises:
        InputDataError: the inputs do not pair up, the tokenizer has no ``[CLS]``/``[SEP]``
            tokens, or ``max_length < 4``.
    """
    if len(contexts) != len(responses):
        raise InputDataError(
            f"{len(contexts)} contexts but {len(responses)} responses; they must pair up"
        )
    cls, sep = getattr(tokenizer, "cls_token_id", None), getattr(tokenizer, "sep_token_id", None)
    if cls is None or sep is None:
        raise InputDataError("the tokenizer has no [CLS] / [SEP] tokens (a BERT-style one)")
    if max_length < SPECIAL_TOKENS + 1:
        raise InputDataError(f"max_length must be at least 4, got {max_length}")
    if not contexts:
        return []
    left = tokenizer(list(contexts), add_special_tokens=False)["input_ids"]
    right = tokenizer(list(responses), add_special_tokens=False)["input_ids"]
    pairs = []
    for a, b in zip(left, right, strict=True):
        a, b = truncate_pair(a, b, max_length)
        ids = (cls, *a, sep, *b, sep)
        types = (0,) * (len(a) + 2) + (1,) * (len(b) + 1)
        pairs.append(PairTokens(ids, types))
    return pairs
