"""Data and features of MEDIQA 2019 Task 3 (:mod:`~probrank.experiments.mediqa.protocol`).

Loads the three MEDIQA splits and their official keys, fits the question-entailment
classifier on the RQE training pairs (C by validation log-loss) and scores it on the RQE test
pairs, indexes MedQuAD for the entailed-question features, and builds the joint features of
every (question, answer) with :class:`~probrank.models.multitask.mediqa_features.MediqaFeaturizer`
fitted on the training lists. In smoke mode everything is cut before it is read or encoded:
a few questions per split, a few hundred RQE pairs, and only the smallest MedQuAD source
folder is parsed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from probrank.data.datasets.mediqa import MediqaList, load_mediqa
from probrank.data.datasets.medquad import read_medquad
from probrank.data.datasets.rqe import read_rqe
from probrank.data.paths import shared_data_dir
from probrank.encoders.config import encoder_from_config
from probrank.evaluation.mediqa import MediqaRow, read_mediqa_rows
from probrank.experiments.mediqa.config import MediqaMultitaskExperimentSettings
from probrank.models.multitask.entailment import EntailedQuestionFinder, EntailmentClassifier
from probrank.models.multitask.mediqa_features import FeatureSet, MediqaFeaturizer

__all__ = ["RQE_FILES", "MediqaData", "build_mediqa_data", "smallest_subfolder"]

RQE_FILES = {
    "train": "MEDIQA2019-Task2-RQE-TrainingSet-AMIA2016.xml",
    "validation": "MEDIQA2019-Task2-RQE-ValidationSet-AMIA2016.xml",
    "test": "MEDIQA2019-Task2-RQE-TestSet-wLabels.xml",
}
SMOKE_SIZES = {"train": 12, "validation": 6, "test": 8}
SMOKE_RQE = {"train": 200, "validation": 60, "test": 60}


@dataclass
class MediqaData:
    """Everything the MEDIQA protocol fits and scores on.

    Attributes:
        lists: ``{"train" | "validation" | "test": question lists}``.
        features: The same splits' :class:`FeatureSet` s (rows follow the lists' order).
        keys: ``{"validation" | "test": official key rows}``.
        rqe_accuracy: Accuracy of the entailment classifier on the RQE test pairs (None when
            entailment features are disabled).
        rqe_best_c: Its regularisation strength chosen on the RQE validation pairs.
        notes: Sizes and choices, for the printed report.
    """

    lists: dict[str, list[MediqaList]]
    features: dict[str, FeatureSet]
    keys: dict[str, list[MediqaRow]]
    rqe_accuracy: float | None = None
    rqe_best_c: float | None = None
    notes: list[str] = field(default_factory=list)


def _data_path(folder: str) -> Path:
    value = Path(folder)
    return value if value.is_absolute() else shared_data_dir(*value.parts)


def smallest_subfolder(root: Path) -> Path:
    """The sub-folder of ``root`` holding the fewest entries (``root`` itself if it has none);
    smoke runs read only that one of MedQuAD's 12 source folders."""
    folders = [entry for entry in os.scandir(root) if entry.is_dir()]
    if not folders:
        return root
    best = min(folders, key=lambda entry: (sum(1 for _ in os.scandir(entry.path)), entry.name))
    return Path(best.path)


def build_mediqa_data(
    config: MediqaMultitaskExperimentSettings,
    *,
    smoke: bool = False,
    config_path: str | Path | None = None,
) -> MediqaData:
    """Load, encode and featurise the protocol's data (see the module docstring).

    Args:
        config: The experiment's settings (its ``data``, ``encoder`` and ``entailment``).
        smoke: Cut every input to a few items before reading or encoding it.
        config_path: The config file (resolves a relative encoder ``cache_dir``).

    Raises:
        InputDataError: missing or malformed data files.
    """
    data_cfg, qe_cfg = config.data, config.entailment
    folder = _data_path(data_cfg.mediqa)
    lists = {split: load_mediqa(folder, split) for split in ("train", "validation", "test")}
    if smoke:
        lists = {split: items[: SMOKE_SIZES[split]] for split, items in lists.items()}
    keys = {
        "validation": read_mediqa_rows(folder / "validation-ground-truth.csv"),
        "test": read_mediqa_rows(folder / "test-ground-truth.csv"),
    }
    rqe, medquad, medquad_root = None, None, None
    if qe_cfg.enabled:  # every file is read before the encoder loads
        rqe_dir = _data_path(data_cfg.rqe)
        rqe = {split: read_rqe(rqe_dir / name) for split, name in RQE_FILES.items()}
        if smoke:
            rqe = {split: pairs[: SMOKE_RQE[split]] for split, pairs in rqe.items()}
        medquad_root = _data_path(data_cfg.medquad)
        if smoke:
            medquad_root = smallest_subfolder(medquad_root)
        medquad = read_medquad(medquad_root)
    encoder = encoder_from_config(config.encoder.table(), config_path)
    notes = [
        "questions (answers): "
        + ", ".join(
            f"{split} {len(items)} ({sum(len(x) for x in items)})" for split, items in lists.items()
        )
    ]
    finder, rqe_accuracy, rqe_c = None, None, None
    if rqe is not None and medquad is not None and medquad_root is not None:
        classifier = EntailmentClassifier(encoder).fit(rqe["train"], rqe["validation"])
        test_pairs = rqe["test"]
        probs = classifier.predict_proba([p.chq for p in test_pairs], [p.faq for p in test_pairs])
        rqe_accuracy = float(np.mean((probs > 0.5) == np.array([p.entails for p in test_pairs])))
        rqe_c = classifier.best_c
        notes.append(
            f"RQE classifier: C {rqe_c:g} (validation log-loss), test accuracy "
            f"{rqe_accuracy:.4f} on {len(test_pairs)} pairs"
        )
        notes.append(f"MedQuAD pairs with an answer: {len(medquad)} (from {medquad_root.name})")
        finder = EntailedQuestionFinder(
            medquad,
            classifier,
            first_stage=qe_cfg.first_stage,
            top_n=qe_cfg.top_n,
            threshold=qe_cfg.threshold,
        )
    featurizer = MediqaFeaturizer(encoder, finder).fit(lists["train"])
    features = {split: featurizer.transform(items) for split, items in lists.items()}
    notes.append(f"features per answer: {features['train'].features.shape[1]}")
    return MediqaData(lists, features, keys, rqe_accuracy, rqe_c, notes)
