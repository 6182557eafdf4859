"""GPF-BERT / SNGP protocol: five relevance heads on one frozen encoder, in-domain and shift.

A config names the training, validation and test sets (``ubuntu:train``, ``ubuntu:dev``,
``ubuntu:test``, ``mediqa:train``, ``mediqa:validation``, ``mediqa:test``, ``liveqa:test``),
the encoder (default: frozen all-MiniLM-L6-v2 in bi-encoder mode, features ``(u, v, u*v, |u-v|)``
cached on disk; a relative ``cache_dir`` is resolved against the project root) and the heads.
For every seed and head the protocol builds a :class:`~probrank.models.gpf_ranker.GPFRanker`
from the head's :class:`~probrank.models.gpf_ranker.GPFRankerSettings` (``[heads]`` merged
with ``[heads.<head>]``; what they leave out is the model's default) and calls its
:meth:`~probrank.models.gpf_ranker.GPFRanker.fit_features`: the epochs (``[heads] epochs``,
overridable per head), GPF's focal ``gamma`` (``[heads.gpf] gamma``, a value or a list) and the
GP heads' mean-field factor (``[calibration] mean_field_factors``) are chosen by validation NLL
(:mod:`probrank.models.gpf_ranker.selection`); with ``[calibration] temperature = true`` (the
default) every head is also reported as ``<head>+T`` with a validation-fitted temperature.
On the test set: ranking measures (``R10@1``, ``MAP``, ``MRR``) over candidate lists with at
least one relevant candidate, and ``accuracy`` (threshold 0.5), ``ECE`` (10 bins, top-label),
``Brier`` and ``NLL`` over all (query, candidate) pairs. The per-seed values, the selections
and seed 0's reliability diagrams are written with the run's results
(:mod:`probrank.experiments.provenance`).

What runs in parallel (``[experiment] executor = "ray"``): one task per (seed, head), each
training the head's grid and selecting on validation from the standardised features, which are
encoded once here and shared; every task seeds itself, so the results equal the local
executor's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from torch import Tensor

from probrank._config import as_table
from probrank.data.candidates import CandidateList, num_pairs
from probrank.evaluation.calibration_plots import reliability_figure
from probrank.exceptions import InputDataError
from probrank.executors import Task, open_executor
from probrank.experiments.gpf.config import GPFRankerExperimentSettings, GPFRankerHeadsSettings
from probrank.experiments.gpf.data import load_split, pair_features
from probrank.experiments.gpf.measures import HEADS, MEASURES, evaluate_head
from probrank.experiments.results import ExperimentResult
from probrank.models.gpf_ranker import (
    GP_HEADS,
    Family,
    GPFRanker,
    GPFRankerSettings,
    HeadKind,
)

__all__ = ["run", "seed0_panels"]

_SMOKE_FEATURES = 64
"""Random features of the GP heads in smoke runs."""


_SHARED_KEYS = ("hidden", "num_layers", "dropout")
_FIT_KEYS = ("epochs", "batch_size", "lr", "weight_decay")


def _own(heads: GPFRankerHeadsSettings, name: str) -> dict[str, Any]:
    """The keys ``[heads.<name>]`` sets, in the config's order."""
    table = getattr(heads, name)
    return as_table(table) if table is not None else {}


def _head_options(heads: GPFRankerHeadsSettings, name: str) -> dict[str, Any]:
    """The head's constructor keys a config sets: ``[heads]`` hidden, num_layers and dropout,
    overridden by ``[heads.<name>]``'s own keys."""
    shared = as_table(heads)
    common = {k: shared[k] for k in _SHARED_KEYS if k in shared}
    own = {k: v for k, v in _own(heads, name).items() if k not in _FIT_KEYS}
    return {**common, **own}


def _fit_settings(heads: GPFRankerHeadsSettings, name: str) -> dict[str, Any]:
    """``[heads]`` training settings, overridden by ``[heads.<name>]``."""
    merged = {**as_table(heads), **_own(heads, name)}
    return {k: merged[k] for k in _FIT_KEYS if k in merged}


def head_settings(
    heads: GPFRankerHeadsSettings, name: str, factors: list[float], *, smoke: bool
) -> GPFRankerSettings:
    """The :class:`~probrank.models.gpf_ranker.GPFRankerSettings` of head ``name`` from
    ``[heads]`` and ``[heads.<name>]`` (what a table leaves out is the model's default; a
    smoke run trains one epoch, one gamma and a small GP)."""
    values: dict[str, Any] = {**_head_options(heads, name), **_fit_settings(heads, name)}
    gamma = values.pop("gamma", None)
    if gamma is not None and name == "gpf":
        values["gammas"] = tuple(float(g) for g in (gamma if isinstance(gamma, list) else [gamma]))
    elif gamma is not None:
        values["focal_gamma"] = float(gamma)
    if "epochs" in values:
        values["epochs"] = tuple(int(e) for e in values["epochs"])
    settings = GPFRankerSettings(head=HeadKind(name), mean_field_factors=tuple(factors), **values)
    if not smoke:
        return settings
    smaller: dict[str, Any] = {"epochs": (1,), "gammas": settings.gammas[:1]}
    if name in GP_HEADS:
        smaller["num_features"] = _SMOKE_FEATURES
    return replace(settings, **smaller)


@dataclass(frozen=True)
class _Features:
    """The raw features and labels of the three splits (shared by every task)."""

    x_train: Tensor
    y_train: Tensor
    x_val: Tensor
    y_val: Tensor
    x_test: Tensor
    y_test: Tensor
    test_lists: list[CandidateList]


@dataclass(frozen=True)
class _HeadOutcome:
    """What one (seed, head) task sends back."""

    chosen: dict[str, dict[str, float]]  # row -> selected settings
    scores: dict[str, dict[str, float]]  # row -> measure -> value
    probs: dict[str, Tensor]  # row -> test probabilities (seed 0 only)


def _fit_head(
    data: _Features,
    settings: GPFRankerSettings,
    seed: int,
    families: list[Family],
    measures: list[str],
) -> _HeadOutcome:
    """One task: the head's validation-selection fit for ``seed`` (one
    :class:`~probrank.models.gpf_ranker.GPFRanker` per calibration family), scored on test."""
    fitted = GPFRanker(settings).fit_features(
        (data.x_train, data.y_train), (data.x_val, data.y_val), families=families, seed=seed
    )
    name = settings.head.value
    outcome = _HeadOutcome({}, {}, {})
    for family, model in fitted.items():
        row = _row(name, family)
        outcome.chosen[row] = {k: v for k, v in model.selected.items() if k != "seed"}
        probs = model.predict_features(data.x_test)
        outcome.scores[row] = evaluate_head(probs, data.y_test.double(), data.test_lists, measures)
        if seed == 0:
            outcome.probs[row] = probs
    return outcome


def run(
    config: GPFRankerExperimentSettings, *, config_path: Path, seeds: int, smoke: bool
) -> ExperimentResult:
    """Train and evaluate the configured heads over ``seeds`` seeds (see the module doc).

    Args:
        config: The config's typed settings (:func:`~probrank.experiments.load_config`).
        config_path: The config file (resolves a relative encoder ``cache_dir``).
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: A few lists per split, one epoch, one gamma, a small GP.
    """
    import torch

    threads = config.experiment.threads
    torch.set_num_threads(threads)
    data = config.data
    heads_cfg = config.heads
    names = list(heads_cfg.names)
    unknown = [n for n in names if n not in HEADS]
    if unknown:
        raise InputDataError(
            f"unknown head {unknown[0]!r}; choose from {', '.join(HEADS)}", path=config_path
        )
    measures = list(config.evaluation.measures)
    bad = [m for m in measures if m not in MEASURES]
    if bad:
        raise InputDataError(
            f"unknown measure {bad[0]!r}; choose from {', '.join(MEASURES)}", path=config_path
        )
    factors = [float(f) for f in config.calibration.mean_field_factors]
    families = [Family.PLAIN]
    if config.calibration.temperature:
        families.append(Family.TEMPERATURE)
    from probrank.encoders.config import encoder_from_config

    roles = {"train": data.train, "validation": data.validation, "test": data.test}
    loaded = {}
    for role, split in roles.items():  # every file is read before the encoder loads
        loaded[role] = load_split(split, data, smoke)
    encoder = encoder_from_config(
        config.encoder.table(), config_path, show_progress=not config.experiment.quiet
    )
    splits = {}
    for role, lists in loaded.items():
        features, labels = pair_features(encoder, lists)
        splits[role] = (lists, features, labels)
    raw = {role: (f, y) for role, (_, f, y) in splits.items()}
    prepared = _Features(*raw["train"], *raw["validation"], *raw["test"], splits["test"][0])
    rows = [_row(n, f) for n in names for f in families]
    values: dict[str, dict[str, list[float]]] = {r: {m: [] for m in measures} for r in rows}
    chosen: dict[str, dict[str, float]] = {}
    test_probs: dict[str, Tensor] = {}
    per_head = {name: head_settings(heads_cfg, name, factors, smoke=smoke) for name in names}
    epochs_used = {name: [int(e) for e in per_head[name].epochs] for name in names}
    pairs = [(seed, name) for seed in range(seeds) for name in names]
    with open_executor(config.experiment.executor_settings()) as executor:
        shared = executor.share(prepared)
        tasks = [
            Task(
                f"seed {seed}, {name}",
                _fit_head,
                (shared, per_head[name], seed, families, measures),
                threads=threads,
            )
            for seed, name in pairs
        ]
        outcomes = executor.map(tasks, desc="heads", progress=not config.experiment.quiet)
    for (seed, _name), outcome in zip(pairs, outcomes, strict=True):
        for row, settings_chosen in outcome.chosen.items():
            chosen[f"{row} (seed {seed})"] = settings_chosen
            for measure, value in outcome.scores[row].items():
                values[row][measure].append(value)
        test_probs.update(outcome.probs)
    notes = [
        f"train {data.train}: {len(splits['train'][0])} lists, {num_pairs(splits['train'][0])} "
        f"pairs; validation {data.validation}: {len(splits['validation'][0])} lists, "
        f"{num_pairs(splits['validation'][0])} pairs; test {data.test}: "
        f"{len(splits['test'][0])} lists, {num_pairs(splits['test'][0])} pairs",
        f"encoder {encoder.path.parent.name}/{encoder.path.name} ({encoder.mode.value}, "
        f"{encoder.pooling.value} pooling, frozen, features {encoder.feature_dim})",
        "selected per head and seed by validation NLL: epochs from "
        + "; ".join(f"{n} {e}" for n, e in epochs_used.items())
        + f"; GPF gamma from {_gpf_gammas(heads_cfg, factors)}"
        + f"; GP mean-field factor lambda from {[round(f, 4) for f in factors]}"
        + ("; rows '+T' add a validation-fitted temperature" if len(families) > 1 else ""),
    ]
    title = config.experiment.title or f"gpf_ranker: {config_path.stem}"
    settings = {
        "heads": {
            name: {
                **_head_options(heads_cfg, name),
                **_fit_settings(heads_cfg, name),
                "epochs": epochs_used[name],
            }
            for name in names
        },
        "calibration": {"mean_field_factors": factors, "temperature": len(families) > 1},
        "evaluation": {"measures": list(measures)},
    }
    panels = seed0_panels(config_path.stem, test_probs, prepared.y_test)
    return ExperimentResult(
        title,
        values,
        extra={"selected on validation": chosen},
        notes=notes,
        figures={"reliability": reliability_figure(panels)} if panels else {},
        settings=settings,
    )


def _gpf_gammas(heads: GPFRankerHeadsSettings, factors: list[float]) -> list[float]:
    """The configured GPF gamma grid (the model's default when not given)."""
    return list(head_settings(heads, "gpf", factors, smoke=False).gammas)


def _row(name: str, family: Any) -> str:
    return name if family.value == "plain" else f"{name}+T"


def seed0_panels(
    stem: str, probs: dict[str, Tensor], labels: Tensor
) -> dict[str, tuple[dict[str, Tensor], Tensor]]:
    """The reliability panels of seed 0's test probabilities: without and with the
    validation temperature (rows ``<head>`` and ``<head>+T``); empty panels are left out."""
    panels = {
        f"{stem}, seed 0: no temperature": (
            {n: p for n, p in probs.items() if not n.endswith("+T")},
            labels,
        ),
        f"{stem}, seed 0: + validation temperature": (
            {n: p for n, p in probs.items() if n.endswith("+T")},
            labels,
        ),
    }
    return {title: panel for title, panel in panels.items() if panel[0]}
