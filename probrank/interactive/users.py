"""Users who answer "which of these two answers is better?": simulated and human.

A user implements :class:`User`: ``judge(first, second)`` returns a :class:`Response`.

* :class:`SimulatedUser` prefers ``a`` over ``b`` with probability
  ``1 / (1 + exp(-(f_a - f_b) / t))`` for known utilities ``f`` and noise temperature ``t``.
* :func:`utilities_from_grades` builds ``f`` from graded labels, breaking ties within a grade
  by ROUGE-L against the best-graded answers; :func:`simulated_user_seed` gives each
  (run seed, question) its own stable user seed.
* :class:`TerminalUser` shows the question and the two answers on a text stream and reads
  ``1``, ``2``, ``s`` (skip) or ``q`` (quit).
"""

from __future__ import annotations

import hashlib
import math
import shutil
import sys
import textwrap
from collections.abc import Sequence
from enum import Enum
from typing import ClassVar, Protocol, TextIO

import torch
from torch import Tensor

from probrank._extras import require
from probrank.acquisition.pairs import candidate_index
from probrank.exceptions import InputDataError

__all__ = [
    "Response",
    "SimulatedUser",
    "TerminalUser",
    "User",
    "rouge_l_fmeasure",
    "simulated_user_seed",
    "utilities_from_grades",
]


class Response(str, Enum):
    """A user's answer to "which of the two is better?"."""

    FIRST = "1"
    """The first answer shown is better."""
    SECOND = "2"
    """The second answer shown is better."""
    SKIP = "s"
    """No judgement on this pair; it is not offered again."""
    QUIT = "q"
    """End the session."""


class User(Protocol):
    """Anyone who can compare two candidates of the current question."""

    def judge(self, first: int, second: int) -> Response: ...


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


class SimulatedUser:
    """A noisy user with known utilities (the paper's simulation).

    Args:
        utilities: `n` true utilities of the candidates.
        temperature: Noise ``t > 0``; ``P(a over b) = sigmoid((f_a - f_b) / t)``.
        seed: Seed of the user's own generator (each call to :meth:`judge` draws once).
    """

    def __init__(self, utilities: Sequence[float] | Tensor, temperature: float, seed: int) -> None:
        values = torch.as_tensor(utilities, dtype=torch.float64).detach().cpu().clone()
        if values.dim() != 1 or values.numel() < 2:
            raise InputDataError(f"utilities must be a vector of >= 2, got {tuple(values.shape)}")
        if not torch.isfinite(values).all():
            raise InputDataError("utilities hold NaN or infinite values")
        if not (temperature > 0 and math.isfinite(temperature)):
            raise InputDataError(f"temperature must be positive and finite, got {temperature}")
        self.utilities = values
        self.temperature = float(temperature)
        self.seed = int(seed)
        self._generator = torch.Generator().manual_seed(self.seed)

    def probability(self, a: int, b: int) -> float:
        """``P(a preferred to b) = 1 / (1 + exp(-(f_a - f_b) / t))``."""
        n = self.utilities.shape[0]
        i, j = candidate_index(a, n), candidate_index(b, n)
        return _sigmoid(float(self.utilities[i] - self.utilities[j]) / self.temperature)

    def judge(self, first: int, second: int) -> Response:
        """Draw a preference between ``first`` and ``second`` (never skips or quits)."""
        p = self.probability(first, second)
        u = float(torch.rand((), generator=self._generator, dtype=torch.float64))
        return Response.FIRST if u < p else Response.SECOND

    def __repr__(self) -> str:
        return (
            f"SimulatedUser(n={self.utilities.shape[0]}, temperature={self.temperature}, "
            f"seed={self.seed})"
        )


def _lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison & Dix; Hyyro 2004)."""
    masks: dict[str, int] = {}
    for position, token in enumerate(first):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(first)) - 1
    v = full
    for token in second:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(first) - bin(v).count("1")


def rouge_l_fmeasure(reference: Sequence[str], candidate: Sequence[str]) -> float:
    """ROUGE-L F-measure of two token lists, as ``rouge-score``'s ``rougeL`` computes it.

    Same value as ``RougeScorer(["rougeL"]).score(reference, candidate)`` on the texts the
    tokens came from (``rouge_score.tokenizers.DefaultTokenizer``), with the LCS computed in
    ``O(len(reference) * len(candidate) / word size)`` instead of a Python dynamic program.
    """
    if not reference or not candidate:
        return 0.0
    lcs = _lcs_length(reference, candidate)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(candidate), lcs / len(reference)
    return 2.0 * precision * recall / (precision + recall)


def utilities_from_grades(
    grades: Sequence[float],
    texts: Sequence[str],
    *,
    tie_break: float = 0.5,
    use_stemmer: bool = True,
) -> Tensor:
    """Utilities from graded labels, with a ROUGE-L tie-break within each grade.

    ``u_i = g_i + tie_break * delta * r_i`` where ``delta`` is the smallest positive difference
    between two grades (1 for integer grades; 1 if all grades are equal) and ``r_i`` in
    ``[0, 1]`` is the mean ROUGE-L F-measure (``rouge-score``, ``rougeL``) of answer ``i``
    against the best-graded answers other than itself (``r_i = 1`` for an answer that is the
    only best-graded one). As ``tie_break < 1``, ``u_i - u_j`` has the sign of ``g_i - g_j``
    whenever the grades differ: the tie-break never overturns a grade.

    Args:
        grades: `n` grades (higher is better).
        texts: `n` answer texts.
        tie_break: Fraction of ``delta`` the tie-break may add, in ``[0, 1)``.
        use_stemmer: Porter-stem tokens before ROUGE-L.

    Returns:
        `n` float64 utilities.
    """
    if len(grades) != len(texts):
        raise InputDataError(f"{len(grades)} grades but {len(texts)} texts")
    if not 0.0 <= tie_break < 1.0:
        raise InputDataError(f"tie_break must be in [0, 1), got {tie_break}")
    values = torch.as_tensor([float(g) for g in grades], dtype=torch.float64)
    if values.numel() == 0 or not torch.isfinite(values).all():
        raise InputDataError("grades must be a non-empty list of finite numbers")
    distinct = torch.unique(values)
    delta = float((distinct[1:] - distinct[:-1]).min()) if distinct.numel() > 1 else 1.0
    tokenizers = require(
        "rouge_score.tokenizers",
        extra="interactive",
        purpose="the simulated user's ROUGE-L tie-break (utilities_from_grades)",
    )
    tokenizer = tokenizers.DefaultTokenizer(use_stemmer=use_stemmer)
    tokens = [tokenizer.tokenize(text) for text in texts]
    best = [i for i, g in enumerate(values.tolist()) if g == float(values.max())]
    similarity = torch.zeros_like(values)
    for i in range(len(texts)):
        references = [b for b in best if b != i]
        if not references:
            similarity[i] = 1.0
            continue
        scores = [rouge_l_fmeasure(tokens[b], tokens[i]) for b in references]
        similarity[i] = sum(scores) / len(scores)
    return values + tie_break * delta * similarity


class TerminalUser:
    """A person at a terminal: shows the question and two answers, reads 1 / 2 / s / q.

    Accepted replies (case-insensitive, surrounding spaces ignored): ``1``, ``2``, ``s`` or
    ``skip``, ``q`` or ``quit``. Anything else repeats the prompt; end of input counts as quit.

    Args:
        question: The question text.
        answers: `n` candidate answer texts.
        stdin: Stream to read replies from (default ``sys.stdin``).
        stdout: Stream to write to (default ``sys.stdout``).
        width: Wrap width (default the terminal width, at most 100).
    """

    PROMPT = "Which answer is better? [1/2/s(kip)/q(uit)]: "
    _REPLIES: ClassVar[dict[str, Response]] = {
        "1": Response.FIRST,
        "2": Response.SECOND,
        "s": Response.SKIP,
        "skip": Response.SKIP,
        "q": Response.QUIT,
        "quit": Response.QUIT,
    }

    def __init__(
        self,
        question: str,
        answers: Sequence[str],
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        width: int | None = None,
    ) -> None:
        if len(answers) < 2:
            raise InputDataError(f"need at least 2 answers, got {len(answers)}")
        self.question = question
        self.answers = tuple(answers)
        self._stdin = stdin
        self._stdout = stdout
        self.width = width
        self.shown = 0

    def _wrap(self, text: str, indent: str) -> str:
        width = self.width or min(shutil.get_terminal_size((80, 24)).columns, 100)
        return textwrap.fill(
            " ".join(text.split()),
            width=max(width, 20),
            initial_indent=indent,
            subsequent_indent=indent,
        )

    def judge(self, first: int, second: int) -> Response:
        """Show the pair and wait for a valid reply."""
        stdin = self._stdin if self._stdin is not None else sys.stdin
        stdout = self._stdout if self._stdout is not None else sys.stdout
        n = len(self.answers)
        i, j = candidate_index(first, n), candidate_index(second, n)
        self.shown += 1
        blocks = [
            f"\n=== Pair {self.shown} ===",
            "Question:",
            self._wrap(self.question, "  "),
            "[1]",
            self._wrap(self.answers[i], "  "),
            "[2]",
            self._wrap(self.answers[j], "  "),
        ]
        stdout.write("\n".join(blocks) + "\n")
        while True:
            stdout.write(self.PROMPT)
            stdout.flush()
            line = stdin.readline()
            if not line:
                stdout.write("\n")
                stdout.flush()
                return Response.QUIT
            reply = self._REPLIES.get(line.strip().lower())
            if reply is not None:
                return reply
            stdout.write(f"Please type 1, 2, s or q (got {line.strip()!r}).\n")


def simulated_user_seed(seed: int, qid: str) -> int:
    """A stable seed of the simulated user of question ``qid`` in run ``seed`` (the first six
    bytes of ``sha256(f"{seed}:{qid}")``, little-endian)."""
    digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
    return int.from_bytes(digest[:6], "little")
