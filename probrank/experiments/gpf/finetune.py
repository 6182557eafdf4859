"""GPF-BERT protocol in the paper's regime: encoder and head fine-tuned together, end to end.

The frozen-encoder protocol (:mod:`probrank.experiments.gpf.frozen`) trains heads on fixed
features. The paper fine-tunes BERT with each head, and its calibration gap (a deterministic
head's ECE 0.125 against GPF's 0.025 on MS Dialog) comes from that regime, where the encoder
itself becomes over-confident. This protocol reproduces it for the heads that need one
fine-tuning run each (``deterministic``, ``sngp``, ``gpf``; MC dropout and the ensemble would
need T passes or M fine-tunes and are left to the frozen protocol):

1. per seed and head, a fresh encoder (``[encoder]``, cross-encoder ``[CLS] q [SEP] a`` by
   default, ``freeze = false``) and head are trained together with AdamW
   (:func:`probrank.encoders.fine_tune.fine_tune`; the head's own loss, BCE or focal, plus the
   GP prior penalty ``/ n`` for SNGP/GPF, as in head-only training);
2. after every epoch of ``[heads] epochs`` the posterior is completed on the training pairs (the
   exact Laplace pass of the GP heads) and the predictive ``(m, v)`` of the validation, test
   and any ``[data] shift`` pairs is recorded;
3. the epoch and, for GP heads, the mean-field factor are chosen by validation NLL, without and
   with a validation-fitted temperature (rows ``<head>`` and ``<head>+T``), exactly as in
   :mod:`probrank.models.gpf_ranker.selection`; the test and shift sets are only scored, at the
   chosen epoch. Rows of a shift set are named ``<row> [dataset:split]``.

The per-seed values, the selections and seed 0's reliability diagrams (one row of panels per
test or shift set, without and with the temperature) are written with the run's results
(:mod:`probrank.experiments.provenance`).

On a CPU this is slow (MiniLM at 128 tokens: about 2 s per step of 16 pairs on 2 cores); it
uses CUDA when present.

What runs in parallel (``[experiment] executor = "ray"``): one task per (seed, head), each a
whole fine-tuning run (one GPU each where the cluster has GPUs); every task seeds itself
(``torch.manual_seed(seed)`` and the seeded batch order), so the results equal the local
executor's on the same hardware.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank._config import as_table
from probrank.data.candidates import num_pairs
from probrank.evaluation.calibration_plots import reliability_figure
from probrank.exceptions import InputDataError
from probrank.executors import ExecutorKind, Task, open_executor
from probrank.experiments.gpf.config import GPFFinetuneDataSettings, GPFFinetuneExperimentSettings
from probrank.experiments.gpf.data import load_split
from probrank.experiments.gpf.measures import FINE_TUNED_HEADS, MEASURES, evaluate_head
from probrank.experiments.results import ExperimentResult
from probrank.models.gpf_ranker import (
    Family,
    FineTuneSettings,
    GPFRanker,
    GPFRankerSettings,
    RegimeFit,
)
from probrank.models.gpf_ranker.fine_tuning import PairSplit, fine_tune_encoder, pair_split

__all__ = ["run"]


def _split(name: str, data: GPFFinetuneDataSettings, smoke: bool) -> PairSplit:
    return pair_split(name, load_split(name, data, smoke))


def _fit(
    settings: GPFRankerSettings,
    training: FineTuneSettings,
    encoder_table: dict[str, Any] | None,
    splits: dict[str, PairSplit],
    targets: list[str],
    seed: int,
    show_progress: bool,
) -> RegimeFit:
    """One (seed, head) task: :meth:`GPFRanker.fit_fine_tuned` on the shared splits."""
    return GPFRanker(settings).fit_fine_tuned(
        splits["train"],
        splits["validation"],
        {target: splits[target] for target in targets},
        training=training,
        encoder=partial(fine_tune_encoder, encoder_table, show_progress=show_progress),
        seed=seed,
    )


def run(
    config: GPFFinetuneExperimentSettings, *, config_path: Path, seeds: int, smoke: bool
) -> ExperimentResult:
    """Fine-tune and evaluate the configured heads over ``seeds`` seeds (see the module doc).

    Args:
        config: The config's typed settings (:func:`~probrank.experiments.load_config`).
        config_path: The config file (resolves a relative encoder ``cache_dir``).
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: A few lists per split.
    """
    threads = config.experiment.threads
    torch.set_num_threads(threads)
    data = config.data
    names = list(config.heads.names)
    unknown = [n for n in names if n not in FINE_TUNED_HEADS]
    if unknown:
        raise InputDataError(
            f"head {unknown[0]!r} is not fine-tuned by this protocol; choose from "
            f"{', '.join(FINE_TUNED_HEADS)}",
            path=config_path,
        )
    measures = list(config.evaluation.measures)
    bad = [m for m in measures if m not in MEASURES]
    if bad:
        raise InputDataError(
            f"unknown measure {bad[0]!r}; choose from {', '.join(MEASURES)}", path=config_path
        )
    factors = [float(f) for f in config.calibration.mean_field_factors]
    shifts = [str(s) for s in data.shift]
    splits: dict[str, PairSplit] = {}
    roles = {"train": data.train, "validation": data.validation, "test": data.test}
    for role, split_name in roles.items():
        splits[role] = _split(split_name, data, smoke)
    for name in shifts:
        splits[name] = _split(name, data, smoke)
    heads_table = as_table(config.heads)  # the [heads] table, as the model's fine-tuning reads it
    encoder_table = config.encoder.table()
    quiet = config.experiment.quiet
    targets = ["test", *shifts]
    rows = [
        _row(head, family, target)
        for target in targets
        for head in names
        for family in (Family.PLAIN, Family.TEMPERATURE)
    ]
    values: dict[str, dict[str, list[float]]] = {r: {m: [] for m in measures} for r in rows}
    chosen: dict[str, dict[str, float]] = {}
    seed0: dict[str, dict[str, Tensor]] = {target: {} for target in targets}
    models = {  # a [heads.gpf] without gamma: the GPF head's default focal gamma 2
        name: GPFRankerSettings.from_heads_table(
            name, heads_table, defaults={"gammas": (2.0,)}, mean_field_factors=factors
        )
        for name in names
    }
    training = {
        name: FineTuneSettings.from_table({**heads_table, **heads_table.get(name, {})})
        for name in names
    }
    pairs = [(seed, name) for seed in range(seeds) for name in names]
    with open_executor(config.experiment.executor_settings()) as executor:
        local = executor.kind is ExecutorKind.LOCAL
        shared = executor.share(splits)
        tasks = [
            Task(
                f"seed {seed}, {name}",
                _fit,
                (
                    models[name],
                    training[name],
                    encoder_table,
                    shared,
                    targets,
                    seed,
                    not quiet and local,
                ),
                threads=threads,
                gpu=True,
            )
            for seed, name in pairs
        ]
        tuned = executor.map(tasks, desc="fine-tuned heads", progress=not quiet)
    for (seed, name), fit in zip(pairs, tuned, strict=True):
        for family in (Family.PLAIN, Family.TEMPERATURE):
            selection = fit.selections[(name, family)]
            chosen[f"{_row(name, family, 'test')} (seed {seed})"] = selection.settings
            for target in targets:
                probs, _ = fit.predictions[(name, family)][target]
                split = splits[target]
                scores = evaluate_head(probs, split.labels.double(), split.lists, measures)
                for measure, value in scores.items():
                    values[_row(name, family, target)][measure].append(value)
                if seed == 0:
                    seed0[target][_row(name, family, "test")] = probs
    notes = [
        "; ".join(
            f"{role if role in ('train', 'validation', 'test') else 'shift'} {s.name}: "
            f"{len(s.lists)} lists, {num_pairs(s.lists)} pairs"
            for role, s in splits.items()
        ),
        f"encoder fine-tuned end to end with each head: {encoder_table}",
        "selected per head and seed by validation NLL: the epoch and (GP heads) the mean-field "
        f"factor from {[round(f, 4) for f in factors]}; rows '+T' add a validation-fitted "
        "temperature; test and shift sets scored at the chosen epoch",
    ]
    title = config.experiment.title or f"gpf_finetune: {config_path.stem}"
    panels = {
        f"{splits[target].name}, seed 0: {label}": (
            {r: p for r, p in seed0[target].items() if r.endswith("+T") == with_t},
            splits[target].labels,
        )
        for target in targets
        for label, with_t in (("no temperature", False), ("+ validation temperature", True))
    }
    per_head: dict[str, dict[str, Any]] = {
        name: {**heads_table, **(heads_table[name] if name in heads_table else {})}
        for name in names
    }
    for table in per_head.values():
        for other in FINE_TUNED_HEADS:
            table.pop(other, None)
    settings = {
        "heads": per_head,
        "calibration": {"mean_field_factors": factors},
        "evaluation": {"measures": list(measures)},
        "data": {"shift": shifts},
    }
    return ExperimentResult(
        title,
        values,
        extra={"selected on validation": chosen},
        notes=notes,
        figures={"reliability": reliability_figure(panels)},
        settings=settings,
    )


def _row(name: str, family: Family, target: str) -> str:
    row = name if family is Family.PLAIN else f"{name}+T"
    return row if target == "test" else f"{row} [{target}]"
