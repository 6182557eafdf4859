"""Generated questions for the interactive ranker: runs without data, encoder or network.

Each question has a vector ``u`` and each candidate answer a vector ``v`` (``h`` dimensions);
the features are the bi-encoder's ``(u, v, u*v, |u-v|)`` layout, so every posterior (GPPL's
cosine prior included) runs on them unchanged. The latent quality of an answer is::

    q(v) = a * cos(u, v) + w^T v + 0.5 * tanh(c^T v) + noise

with ``a, w, c`` shared by all questions (what a warm start can learn) and a per-question
perturbation of ``w`` (what only interaction reveals). Grades 1..4 are the per-question quartiles
of ``q``; the simulated user's utilities are ``grade + 0.5 * (rank of q within the grade)``.
"""

from __future__ import annotations

import torch

from probrank.exceptions import InputDataError
from probrank.experiments.interactive.data import Question

__all__ = ["synthetic_questions"]


def synthetic_questions(
    num_questions: int,
    *,
    min_candidates: int = 10,
    max_candidates: int = 20,
    hidden: int = 8,
    question_shift: float = 0.7,
    seed: int = 0,
    prefix: str = "S",
) -> list[Question]:
    """Generate questions with `n` candidates each (``min_candidates..max_candidates``).

    Args:
        num_questions: How many questions.
        min_candidates: Fewest candidates per question (>= 2).
        max_candidates: Most candidates per question.
        hidden: ``h``; features are ``4h`` wide.
        question_shift: Size of the per-question perturbation of ``w``.
        seed: The shared parameters ``a, w, c`` come from seed 0 (the same for every split);
            the questions from ``seed``. Use different seeds for train / validation / test.
        prefix: Question ids are ``f"{prefix}{k}"``.
    """
    if num_questions < 1 or not 2 <= min_candidates <= max_candidates or hidden < 1:
        raise InputDataError("need num_questions >= 1, 2 <= min <= max candidates, hidden >= 1")
    shared = torch.Generator().manual_seed(0)
    w = torch.randn(hidden, generator=shared, dtype=torch.float64) / hidden**0.5
    c = torch.randn(hidden, generator=shared, dtype=torch.float64)
    generator = torch.Generator().manual_seed(10_000 + seed)
    questions = []
    for k in range(num_questions):
        n = int(torch.randint(min_candidates, max_candidates + 1, (1,), generator=generator))
        u = torch.randn(hidden, generator=generator, dtype=torch.float64)
        v = u + 1.2 * torch.randn(n, hidden, generator=generator, dtype=torch.float64)
        w_q = w + question_shift * torch.randn(hidden, generator=generator, dtype=torch.float64)
        cosine = torch.nn.functional.cosine_similarity(u.expand_as(v), v, dim=-1)
        quality = 1.5 * cosine + v @ w_q + 0.5 * torch.tanh(v @ c)
        quality = quality + 0.1 * torch.randn(n, generator=generator, dtype=torch.float64)
        order = torch.argsort(torch.argsort(quality))  # 0 = worst
        grades = (1 + (4 * order) // n).clamp(max=4)
        within = torch.zeros(n, dtype=torch.float64)
        for g in grades.unique():
            members = (grades == g).nonzero().squeeze(-1)
            ranks = torch.argsort(torch.argsort(quality[members])).double()
            within[members] = ranks / max(members.numel() - 1, 1)
        features = torch.cat([u.expand_as(v), v, u * v, (u - v).abs()], dim=-1).float()
        questions.append(
            Question(
                qid=f"{prefix}{k}",
                query=f"synthetic question {prefix}{k}",
                candidates=tuple(f"synthetic answer {j} to {prefix}{k}" for j in range(n)),
                grades=tuple(int(g) for g in grades),
                features=features,
                utilities=grades.double() + 0.5 * within,
            )
        )
    return questions
