"""GPF-BERT's calibration claim on a CPU budget: the top encoder layers fine-tuned with each head.

The paper's effect (a fine-tuned encoder makes a deterministic head over-confident; a spectrally
normalised encoder with an RFF-GP head and focal loss stays calibrated) needs a fine-tuned
encoder, which end to end is out of reach of 2 CPU cores. This protocol (``gpf_top_layers``)
fine-tunes only the top ``n - k`` layers:

1. the lower ``k`` layers run once over every split (a cross-encoder, ``[CLS] context [SEP]
   response [SEP]``, the context cut from the left) and their token states are cached on disk
   (:class:`probrank.encoders.hidden_states.HiddenStateEncoder`, ``[encoder] frozen_layers``);
2. per seed and training run, a fresh copy of layers ``k+1..n`` (pretrained weights; with
   ``[heads.<head>] layer_spectral_bound``, spectrally normalised dense layers) and a head are
   trained together on the cached states
   (:func:`probrank.encoders.top_layers_fit.fine_tune_top_layers`; AdamW, the head's own loss,
   BCE or focal, plus the GP prior penalty ``/ n``). The deterministic and MC-dropout rows share
   one run (the same network; MC dropout differs at prediction only: ``T`` dropout passes in
   the head, or in the top layers and the head, ``[heads.mc_dropout] scope``); SNGP runs once,
   GPF once per focal ``gamma`` of its grid;
3. after every epoch of ``[heads] epochs`` the GP heads' exact Laplace pass runs over the
   training pairs' pooled features, and each row's validation predictive ``(m, v)`` and the
   network's state are kept;
4. per row, the checkpoint (epochs, gamma) and calibration (the mean-field factor ``lambda`` of
   the GP heads; ``+T`` rows also a validation-fitted temperature) with the lowest validation NLL
   are chosen (:func:`probrank.models.gpf_ranker.selection.select`, as in the other GPF
   protocols); the test set and the ``[data] shift`` sets are scored only at the choice.

Rows of a shift set are named ``<row> [dataset:split]``. The per-seed values, the selections,
the GP heads' mean predictive variance of the logit on each set and seed 0's reliability
diagrams are written with the run's results (:mod:`probrank.experiments.provenance`). On a GPU
the same config runs end to end with ``frozen_layers = 0`` and ``device = "cuda"``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank._config import as_table
from probrank._progress import progress_bar
from probrank.data.candidates import CandidateList, num_pairs
from probrank.encoders.hidden_states import HiddenStateEncoder
from probrank.evaluation.calibration_plots import reliability_figure
from probrank.exceptions import InputDataError
from probrank.experiments.gpf.config import GPFFinetuneDataSettings
from probrank.experiments.gpf.data import load_split
from probrank.experiments.gpf.measures import evaluate_head
from probrank.experiments.gpf.top_layers_config import (
    TOP_LAYER_HEADS,
    GPFTopLayersExperimentSettings,
    TopLayersEncoderSettings,
)
from probrank.experiments.results import ExperimentResult
from probrank.models.gpf_ranker import (
    GP_HEADS,
    Family,
    GPFRanker,
    GPFRankerSettings,
    HeadKind,
    TopLayersSettings,
)
from probrank.models.gpf_ranker.top_layers import ROW_GROUPS, TopLayerSplit

__all__ = ["run"]

_FIT_KEYS = ("epochs", "batch_size", "lr", "encoder_lr", "weight_decay")
_LAYER_KEYS = ("layer_spectral_bound", "layer_spectral_mode")
_SMOKE_FEATURES = 64


@dataclass(frozen=True)
class _Group:
    """One training unit per seed: the rows one network serves, its model and training
    settings, and its ``[heads.<table>]``."""

    rows: tuple[str, ...]
    model: GPFRankerSettings
    training: TopLayersSettings
    table: str


def _groups(
    names: list[str], heads: Mapping[str, Any], factors: list[float], smoke: bool, pooling: str
) -> list[_Group]:
    """The row groups of ``names`` (:data:`ROW_GROUPS`) with their typed settings (``heads``:
    the ``[heads]`` table)."""
    groups = []
    for group in ROW_GROUPS:
        rows = tuple(n for n in group if n in names)
        if not rows:
            continue
        table = "deterministic" if "deterministic" in group else rows[0]
        overrides: dict[str, Any] = {"mean_field_factors": factors}
        if "mc_dropout" in rows:
            mc = heads.get("mc_dropout", {})
            overrides.update(
                head="mc_dropout",
                num_samples=int(mc.get("num_samples", 10)),
                prediction_seed=int(mc.get("prediction_seed", 0)),
            )
        if smoke and table in GP_HEADS:
            overrides["num_features"] = _SMOKE_FEATURES
        model = GPFRankerSettings.from_heads_table(table, heads, **overrides)
        if smoke and model.head is HeadKind.GPF:
            model = replace(model, gammas=model.gammas[:1])
        training = TopLayersSettings.from_table(
            {
                **heads,
                **heads.get(table, {}),
                "pooling": pooling,
                "scope": heads.get("mc_dropout", {}).get("scope", "head"),
                **({"epochs": [1]} if smoke else {}),
            }
        )
        groups.append(_Group(rows, model, training, table))
    return groups


@dataclass
class _Tally:
    """What the seeds add up to: per-seed measures, selections, GP variances, seed 0's
    probabilities."""

    values: dict[str, dict[str, list[float]]]
    chosen: dict[str, dict[str, float]] = field(default_factory=dict)
    variances: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    seed0: dict[str, dict[str, Tensor]] = field(default_factory=dict)


def _encoder(table: TopLayersEncoderSettings, config_path: Path, quiet: bool) -> HiddenStateEncoder:
    from probrank.encoders.config import encoder_cache_dir

    return HiddenStateEncoder(
        table.name_or_path or table.model or None,
        frozen_layers=table.frozen_layers,  # None: n - 1
        max_length=table.max_length,
        batch_size=table.batch_size,
        dtype=table.state_dtype,
        device=table.device,
        cache_dir=encoder_cache_dir(as_table(table), config_path),
        show_progress=not quiet and table.progress_bars,
    )


def _load_splits(
    data: GPFFinetuneDataSettings, shifts: list[str], config_path: Path, smoke: bool
) -> dict[str, tuple[str, list[CandidateList]]]:
    loaded = {}
    for role, name in (("train", data.train), ("validation", data.validation), ("test", data.test)):
        loaded[role] = (name, load_split(name, data, smoke))
    for name in shifts:
        loaded[name] = (name, load_split(name, data, smoke))
    return loaded


def run(
    config: GPFTopLayersExperimentSettings, *, config_path: Path, seeds: int, smoke: bool
) -> ExperimentResult:
    """Fine-tune the top layers with each configured head over ``seeds`` seeds (module doc).

    Args:
        config: The config's typed settings (:func:`~probrank.experiments.load_config`).
        config_path: The config file (resolves a relative ``cache_dir``).
        seeds: Seeds ``0 .. seeds - 1``.
        smoke: A few lists per split, one epoch, a small GP.
    """
    experiment = config.experiment
    torch.set_num_threads(experiment.threads)
    quiet = experiment.quiet
    data = config.data
    heads = config.heads
    names = list(heads.names)
    unknown = [n for n in names if n not in TOP_LAYER_HEADS]
    if unknown:
        raise InputDataError(
            f"head {unknown[0]!r} is not trained by this protocol; choose from "
            f"{', '.join(TOP_LAYER_HEADS)}",
            path=config_path,
        )
    measures = list(config.evaluation.measures)
    factors = [float(f) for f in config.calibration.mean_field_factors]
    families = [Family.PLAIN]
    if config.calibration.temperature:
        families.append(Family.TEMPERATURE)
    shifts = [str(s) for s in data.shift]
    loaded = _load_splits(data, shifts, config_path, smoke)  # every file read before the model
    encoder = _encoder(config.encoder, config_path, quiet)
    splits: dict[str, TopLayerSplit] = {}
    for role, (name, lists) in loaded.items():
        splits[role] = TopLayerSplit.encode(encoder, name, lists)
    groups = _groups(names, as_table(heads), factors, smoke, config.encoder.pooling)
    targets = ["test", *shifts]
    rows = [_row(n, f, t) for t in targets for n in names for f in families]
    tally = _Tally({r: {m: [] for m in measures} for r in rows}, seed0={t: {} for t in targets})
    work = [(seed, g) for seed in range(seeds) for g in groups]
    bar = progress_bar(work, desc="top-layer runs", unit="head", disable=quiet)
    for seed, group in bar:
        bar.set_postfix_str(f"seed {seed}, {'/'.join(group.rows)}")
        fit = GPFRanker(group.model).fit_top_layers(
            encoder,
            splits["train"],
            splits["validation"],
            {target: splits[target] for target in targets},
            training=group.training,
            rows=group.rows,
            families=families,
            seed=seed,
            show_progress=not quiet,
        )
        for (row, family), selection in fit.selections.items():
            tally.chosen[f"{_row(row, family, 'test')} (seed {seed})"] = selection.settings
            if row in GP_HEADS and family is Family.PLAIN:
                tally.variances.setdefault(row, {}).setdefault(
                    splits["validation"].name, []
                ).append(float(selection.checkpoint.val_variance.mean()))
        for (row, family), by_target in fit.predictions.items():
            for target, (probs, variance) in by_target.items():
                split = splits[target]
                result = evaluate_head(probs, split.labels.double(), split.lists, measures)
                for measure, value in result.items():
                    tally.values[_row(row, family, target)][measure].append(value)
                if seed == 0:
                    tally.seed0[target][_row(row, family, "test")] = probs
                if row in GP_HEADS and family is Family.PLAIN:
                    tally.variances.setdefault(row, {}).setdefault(split.name, []).append(
                        float(variance.mean())
                    )
    return _result(config, config_path, encoder, splits, groups, tally, factors, families)


def _result(
    config: GPFTopLayersExperimentSettings,
    config_path: Path,
    encoder: HiddenStateEncoder,
    splits: dict[str, TopLayerSplit],
    groups: list[_Group],
    tally: _Tally,
    factors: list[float],
    families: list[Family],
) -> ExperimentResult:
    shifts = [str(s) for s in config.data.shift]
    names = list(dict.fromkeys(row for g in groups for row in g.rows))
    heads = as_table(config.heads)
    targets = ["test", *shifts]
    notes = [
        "; ".join(
            f"{role if role in ('train', 'validation', 'test') else 'shift'} {s.name}: "
            f"{len(s.lists)} lists, {num_pairs(s.lists)} pairs, "
            f"{float(s.states.lengths.double().mean()):.1f} tokens per pair"
            for role, s in splits.items()
        ),
        f"encoder {encoder.path.parent.name}/{encoder.path.name}: layers "
        f"1..{encoder.frozen_layers} of {encoder.num_layers} frozen and cached "
        f"({encoder.dtype.value}), "
        f"{encoder.num_layers - encoder.frozen_layers} fine-tuned with each head; "
        f"{encoder.max_length} tokens, context cut from the left; device {encoder.device}",
        "selected per row and seed by validation NLL: the epoch, gamma (GPF) and lambda (GP "
        f"heads) from {[round(f, 4) for f in factors]}"
        + ("; rows '+T' add a validation-fitted temperature" if len(families) > 1 else ""),
    ]
    title = config.experiment.title or f"gpf_top_layers: {config_path.stem}"
    panels = {
        f"{splits[target].name}, seed 0: {label}": (
            {r: p for r, p in tally.seed0[target].items() if r.endswith("+T") == with_t},
            splits[target].labels,
        )
        for target in targets
        for label, with_t in (("no temperature", False), ("+ validation temperature", True))
        if any(r.endswith("+T") == with_t for r in tally.seed0[target])
    }
    variance_table = {
        row: {split: statistics.fmean(v) for split, v in by_split.items()}
        for row, by_split in tally.variances.items()
    }
    encoder_table = as_table(config.encoder)
    encoder_table.update(
        frozen_layers=encoder.frozen_layers,
        max_length=encoder.max_length,
        state_dtype=encoder.dtype.value,
        device=str(encoder.device),
    )
    settings = {
        "encoder": encoder_table,
        "runs": [
            {
                "head": g.model.head.value,
                "rows": list(g.rows),
                "options": {k: v for k, v in options.items() if k != "seed"},
                "fit": {k: merged[k] for k in _FIT_KEYS if k in merged},
                "layer_spectral_bound": g.training.layer_spectral_bound,
                "layer_spectral_mode": g.training.layer_spectral_mode.value,
            }
            for g in groups
            for merged in [{**heads, **heads.get(g.table, {})}]
            for options in g.model.head_options()
        ],
        "heads": {"names": names},
        "calibration": {"mean_field_factors": factors, "temperature": len(families) > 1},
        "data": {"shift": shifts},
    }
    extra = {"selected on validation": tally.chosen}
    if variance_table:
        extra["mean predictive variance of the logit, GP heads (plain rows, mean over seeds)"] = (
            variance_table
        )
    return ExperimentResult(
        title,
        tally.values,
        extra=extra,
        notes=notes,
        data={"predictive variance per seed": tally.variances},
        figures={"reliability": reliability_figure(panels)} if panels else {},
        settings=settings,
    )


def _row(name: str, family: Family, target: str) -> str:
    row = name if family is Family.PLAIN else f"{name}+T"
    return row if target == "test" else f"{row} [{target}]"
