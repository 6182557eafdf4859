"""What the demo's sections share (:class:`DemoContext`) and their names (:class:`DemoSection`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from probrank.data.datasets.synthetic import SyntheticCollection

__all__ = ["DemoContext", "DemoSection"]


class DemoSection(str, Enum):
    """The demo's sections, in the order they run (``probrank demo --sections``)."""

    EVALUATION = "evaluation"
    """trec_eval measures of the generated runs and randomisation tests."""
    FUSION = "fusion"
    """CombSUM, CombMNZ and QLFusion by 5-fold cross-validation."""
    CALIBRATION = "calibration"
    """Deterministic vs GPF relevance heads, in domain and shifted."""
    MULTITASK = "multitask"
    """The multi-task filter + re-rank head on generated answer lists."""
    INTERACTIVE = "interactive"
    """A simulated interactive session (EI, random, GPPL + EUBO)."""


@dataclass
class DemoContext:
    """What the sections share: the generated collection, the output folder, the seed.

    Attributes:
        collection: The generated runs and qrels.
        output_dir: Report folder; sections write their PNGs here.
        seed: Seed of every model.
        quick: Smallest sizes (for tests).
        results: ``{section: JSON-able results}``, written to ``results.json``.
        figures: PNG file names written so far, in order.
    """

    collection: SyntheticCollection
    output_dir: Path
    seed: int
    quick: bool
    results: dict[str, object] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)

    def figure_path(self, name: str) -> Path:
        """Path of a PNG in the report folder, remembered for the summary."""
        self.figures.append(name)
        return self.output_dir / name
