"""The options of :func:`probrank.evaluation.significance.compare`: tests and corrections.

Kept apart from the tests themselves (which load numpy, scipy and pandas) so that
``probrank eval`` builds its ``--test`` and ``--correction`` choices from them at no cost.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Correction", "SignificanceTest"]


class SignificanceTest(str, Enum):
    """Paired two-sided tests on per-query differences."""

    T = "t"
    """Student's paired t-test (``scipy.stats.ttest_rel``)."""
    WILCOXON = "wilcoxon"
    """Wilcoxon signed-rank test (``scipy.stats.wilcoxon``; zero differences dropped)."""
    RANDOMIZATION = "randomization"
    """Fisher's randomisation test: random sign flips of the differences (10,000 draws)."""


class Correction(str, Enum):
    """Family-wise error correction across the runs compared with the baseline, per measure."""

    NONE = "none"
    """No correction."""
    HOLM = "holm"
    """Holm's step-down procedure (uniformly more powerful than Bonferroni)."""
    BONFERRONI = "bonferroni"
    """Multiply each p-value by the number of tests."""
