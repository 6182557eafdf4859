"""Moved to :mod:`probrank.models.multitask.entailment`; this name keeps old imports working."""

from probrank.models.multitask.entailment import (
    EntailedQuestion,
    EntailedQuestionFinder,
    EntailmentClassifier,
)

__all__ = ["EntailedQuestion", "EntailedQuestionFinder", "EntailmentClassifier"]
