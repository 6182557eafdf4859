"""GPF-BERT / SNGP protocol: five relevance heads on one frozen encoder, in-domain and shift.

A config names the training, validation and test sets (``ubuntu:train``, ``ubuntu:dev``,
``ubuntu:test``, ``mediqa:train``, ``mediqa:validation``, ``mediqa:test``, ``liveqa:test``),
the encoder (default: frozen all-MiniLM-L6-v2 in bi-encoder mode, features ``(u, v, u*v, |u-v|)``
cached on disk; a relative ``cache_dir`` is resolved against the project root) and the heads.
For every seed and head, the epochs (``[heads] epochs``, overridable per head), GPF's focal
``gamma`` (``[heads.gpf] gamma``, a value or a list) and the GP heads' mean-field factor
(``[calibration] mean_field_factors``) are chosen by validation NLL
(:mod:`probrank.experiments.gpf_selection`); with ``[calibration] temperature = true`` (the
default) every head is also reported as ``<head>+T`` with a validation-fitted temperature.
On the test set: ranking measures (``R10@1``, ``MAP``, ``MRR``) over candidate lists with at
least one relevant candidate, and ``accuracy`` (threshold 0.5), ``ECE`` (10 bins, top-label),
``Brier`` and ``NLL`` over all (query, candidate) pairs. Reliability diagrams of seed 0 are
saved as PNG and the per-seed values and selections as JSON beside the config (not in smoke
mode).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from tqdm.auto import tqdm

from probrank._files import new_figure, save_figure, write_text_atomically
from probrank.data.datasets.candidate_lists import CandidateList, num_pairs, pair_texts
from probrank.data.paths import shared_data_dir
from probrank.evaluation.calibration import (
    brier_score,
    expected_calibration_error,
    negative_log_likelihood,
    plot_reliability_diagram,
    reliability_curve,
)
from probrank.evaluation.tensor_metrics import average_precision, recall_n_at_k, reciprocal_rank
from probrank.exceptions import InputDataError
from probrank.experiments.results import ExperimentResult

__all__ = [
    "HEADS",
    "MEASURES",
    "demo_section",
    "evaluate_head",
    "load_split",
    "pair_features",
    "reliability_figure",
    "run",
]

HEADS = ("deterministic", "mc_dropout", "ensemble", "sngp", "gpf")
"""Head names, in table order."""

MEASURES = ("R10@1", "MAP", "MRR", "accuracy", "ECE", "Brier", "NLL")
"""Every measure the protocol can report."""


def _ubuntu(split: str, data: dict[str, Any], smoke: bool) -> list[CandidateList]:
    from probrank.data.datasets.ubuntu_irc import load_ubuntu_irc

    folder = Path(data.get("ubuntu_dir") or shared_data_dir("dialog", "ubuntu-irc"))
    limit = int(data.get(f"ubuntu_{split}_contexts", 0)) or None
    if smoke:
        limit = min(limit or 40, 40)
    return load_ubuntu_irc(folder / split, max_contexts=limit, seed=int(data.get("seed", 0)))


def _mediqa(split: str, data: dict[str, Any], smoke: bool) -> list[CandidateList]:
    from probrank.data.datasets.mediqa import load_mediqa

    folder = Path(data.get("mediqa_dir") or shared_data_dir("qa", "mediqa2019-task3"))
    lists: list[CandidateList] = list(load_mediqa(folder, split))
    return lists[:8] if smoke else lists


def _liveqa(split: str, data: dict[str, Any], smoke: bool) -> list[CandidateList]:
    import warnings

    from probrank.data.datasets.liveqa_med import load_liveqa_med

    if split != "test":
        raise InputDataError(f"liveqa has only a test split, got {split!r}")
    folder = Path(data.get("liveqa_dir") or shared_data_dir("qa", "liveqa-med"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        lists = load_liveqa_med(folder).lists
    return lists[:8] if smoke else lists


_LOADERS: dict[str, Callable[[str, dict[str, Any], bool], list[CandidateList]]] = {
    "ubuntu": _ubuntu,
    "mediqa": _mediqa,
    "liveqa": _liveqa,
}


def load_split(name: str, data: dict[str, Any], smoke: bool = False) -> list[CandidateList]:
    """Candidate lists of ``"dataset:split"`` (e.g. ``"ubuntu:dev"``)."""
    dataset, _, split = name.partition(":")
    if dataset not in _LOADERS or not split:
        raise InputDataError(
            f"data split must be 'dataset:split' with dataset in {', '.join(_LOADERS)}, "
            f"got {name!r}"
        )
    return _LOADERS[dataset](split, data, smoke)


def pair_features(encoder: Any, lists: list[CandidateList]) -> tuple[Tensor, Tensor]:
    """`n x d` features and `n` labels of all (query, candidate) pairs, list by list."""
    queries, candidates = pair_texts(lists)
    labels = torch.tensor([y for item in lists for y in item.labels], dtype=torch.float32)
    with torch.no_grad():
        features = encoder.encode_pairs(queries, candidates).float().cpu()
    return features, labels


def _padded(lists: list[CandidateList], values: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    width = max(len(item) for item in lists)
    scores = torch.zeros(len(lists), width, dtype=torch.float64)
    relevant = torch.zeros(len(lists), width, dtype=torch.float64)
    mask = torch.zeros(len(lists), width, dtype=torch.bool)
    start = 0
    for row, item in enumerate(lists):
        n = len(item)
        scores[row, :n] = values[start : start + n].double()
        relevant[row, :n] = torch.tensor(item.labels, dtype=torch.float64)
        mask[row, :n] = True
        start += n
    return scores, relevant, mask


def evaluate_head(
    probs: Tensor, labels: Tensor, lists: list[CandidateList], measures: list[str]
) -> dict[str, float]:
    """The requested measures of `n` probabilities of the pairs of ``lists``."""
    scores, relevant, mask = _padded(lists, probs)
    keep = relevant.sum(-1) > 0
    scores, relevant, mask = scores[keep], relevant[keep], mask[keep]
    values: dict[str, Callable[[], float]] = {
        "R10@1": lambda: float(recall_n_at_k(scores, relevant, 1, mask).mean()),
        "MAP": lambda: float(average_precision(scores, relevant, relevant.sum(-1), mask).mean()),
        "MRR": lambda: float(reciprocal_rank(scores, relevant, mask).mean()),
        "accuracy": lambda: float(((probs > 0.5).float() == labels).float().mean()),
        "ECE": lambda: expected_calibration_error(probs, labels.long(), n_bins=10),
        "Brier": lambda: brier_score(probs, labels.long()),
        "NLL": lambda: negative_log_likelihood(probs, labels.long()),
    }
    return {m: values[m]() for m in measures}


def _head_options(heads: dict[str, Any], name: str) -> dict[str, Any]:
    common = {k: heads[k] for k in ("hidden", "num_layers", "dropout") if k in heads}
    own = {k: v for k, v in heads.get(name, {}).items() if k not in _FIT_KEYS}
    return {**common, **own}


_FIT_KEYS = ("epochs", "batch_size", "lr", "weight_decay")


def _fit_settings(heads: dict[str, Any], name: str) -> dict[str, Any]:
    """``[heads]`` training settings, overridden by ``[heads.<name>]``."""
    merged = {**heads, **heads.get(name, {})}
    return {k: merged[k] for k in _FIT_KEYS if k in merged}


def _gammas(options: dict[str, Any], name: str) -> list[float | None]:
    if name != "gpf":
        return [None]
    from probrank.nn.losses import check_focal_gamma

    value = options.pop("gamma", 2.0)
    values = value if isinstance(value, list) else [value]
    return [check_focal_gamma(float(g)) for g in values]


def run(config: dict, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult:
    """Train and evaluate the configured heads over ``seeds`` seeds (see the module doc)."""
    from probrank.experiments.gpf_selection import Family, restore, select, train_checkpoints
    from probrank.nn.calibration import DEFAULT_MEAN_FIELD_FACTORS
    from probrank.nn.heads import FitOptions

    torch.set_num_threads(int(config.get("experiment", {}).get("threads", 2)))
    data = config.get("data", {})
    heads_cfg = config.get("heads", {})
    names = heads_cfg.get("names", list(HEADS))
    unknown = [n for n in names if n not in HEADS]
    if unknown:
        raise InputDataError(
            f"unknown head {unknown[0]!r}; choose from {', '.join(HEADS)}", path=config_path
        )
    measures = config.get("evaluation", {}).get("measures", list(MEASURES))
    bad = [m for m in measures if m not in MEASURES]
    if bad:
        raise InputDataError(
            f"unknown measure {bad[0]!r}; choose from {', '.join(MEASURES)}", path=config_path
        )
    calibration_cfg = config.get("calibration", {})
    factors = [
        float(f) for f in calibration_cfg.get("mean_field_factors", DEFAULT_MEAN_FIELD_FACTORS)
    ]
    families = [Family.PLAIN]
    if calibration_cfg.get("temperature", True):
        families.append(Family.TEMPERATURE)
    from probrank.encoders.config import encoder_from_config

    loaded = {}
    for role in ("train", "validation", "test"):  # every file is read before the encoder loads
        if role not in data:
            raise InputDataError(f"[data] {role} missing", path=config_path)
        loaded[role] = load_split(data[role], data, smoke)
    encoder = encoder_from_config(
        config.get("encoder"),
        config_path,
        show_progress=not config.get("experiment", {}).get("quiet", False),
    )
    splits = {}
    for role, lists in loaded.items():
        features, labels = pair_features(encoder, lists)
        splits[role] = (lists, features, labels)
    mean = splits["train"][1].mean(0)
    std = splits["train"][1].std(0).clamp_min(1e-6)
    standard = {role: ((f - mean) / std, y) for role, (_, f, y) in splits.items()}
    x_train, y_train = standard["train"]
    x_val, y_val = standard["validation"]
    x_test, y_test = standard["test"]
    rows = [_row(n, f) for n in names for f in families]
    values: dict[str, dict[str, list[float]]] = {r: {m: [] for m in measures} for r in rows}
    chosen: dict[str, dict[str, float]] = {}
    test_probs: dict[str, Tensor] = {}
    epochs_used: dict[str, list[int]] = {}
    bar = tqdm(
        [(seed, name) for seed in range(seeds) for name in names],
        desc="heads",
        unit="head",
        disable=bool(config.get("experiment", {}).get("quiet", False)),
    )
    for seed, name in bar:
        bar.set_postfix_str(f"seed {seed}, {name}")
        options = _head_options(heads_cfg, name)
        if smoke and name in ("sngp", "gpf"):
            options["num_features"] = 64
        gammas = _gammas(options, name)
        if smoke:
            gammas = gammas[:1]
        grid = [{**options, "seed": seed, **({} if g is None else {"gamma": g})} for g in gammas]
        settings = _fit_settings(heads_cfg, name)
        epochs_grid = [1] if smoke else [int(e) for e in settings.pop("epochs", [5, 15])]
        epochs_used[name] = epochs_grid
        checkpoints = train_checkpoints(
            name,
            x_train.shape[1],
            grid,
            (x_train, y_train),
            x_val,
            epochs_grid,
            FitOptions(seed=seed, **settings),
        )
        for family in families:
            selection = select(name, checkpoints, y_val, family, factors)
            row = _row(name, family)
            chosen[f"{row} (seed {seed})"] = selection.settings
            head = restore(name, x_train.shape[1], selection)
            probs = head.predict_proba(x_test).detach().double()
            scores = evaluate_head(probs, y_test.double(), splits["test"][0], measures)
            for measure, value in scores.items():
                values[row][measure].append(value)
            if seed == 0:
                test_probs[row] = probs
    notes = [
        f"train {data['train']}: {len(splits['train'][0])} lists, {num_pairs(splits['train'][0])} "
        f"pairs; validation {data['validation']}: {len(splits['validation'][0])} lists, "
        f"{num_pairs(splits['validation'][0])} pairs; test {data['test']}: "
        f"{len(splits['test'][0])} lists, {num_pairs(splits['test'][0])} pairs",
        f"encoder {encoder.path.parent.name}/{encoder.path.name} ({encoder.mode.value}, "
        f"{encoder.pooling.value} pooling, frozen, features {encoder.feature_dim})",
        "selected per head and seed by validation NLL: epochs from "
        + "; ".join(f"{n} {e}" for n, e in epochs_used.items())
        + f"; GPF gamma from {_gammas(_head_options(heads_cfg, 'gpf'), 'gpf')}"
        + f"; GP mean-field factor lambda from {[round(f, 4) for f in factors]}"
        + ("; rows '+T' add a validation-fitted temperature" if len(families) > 1 else ""),
    ]
    title = config.get("experiment", {}).get("title", f"gpf_ranker: {config_path.stem}")
    result = ExperimentResult(title, values, extra={"selected on validation": chosen}, notes=notes)
    if not smoke and config.get("output", {}).get("save", True):
        _save(
            result,
            test_probs,
            y_test,
            config_path.parent,
            config_path.stem,
            config.get("output", {}),
        )
    return result


def _row(name: str, family: Any) -> str:
    return name if family.value == "plain" else f"{name}+T"


def reliability_figure(panels: dict[str, tuple[dict[str, Tensor], Tensor]], ncols: int = 2) -> Any:
    """A grid of reliability diagrams of P(relevant), one panel per entry.

    Args:
        panels: ``{title: ({row: n probabilities}, n 0/1 labels)}``, laid out row by row.
        ncols: Panels per row of the grid.

    Returns:
        The matplotlib figure, detached from pyplot (:func:`probrank._files.new_figure`).
    """
    ncols = max(1, min(ncols, len(panels)))
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(nrows, ncols, figsize=(4.8 * ncols, 4.8 * nrows), squeeze=False)
    for ax, (title, (rows, labels)) in zip(axes.flat, panels.items(), strict=False):
        curves = {
            name: reliability_curve(p, labels.long(), n_bins=10, kind="positive")
            for name, p in rows.items()
        }
        plot_reliability_diagram(curves, ax=ax, title=title)
        ax.set_xlabel("predicted P(relevant)")
        ax.set_ylabel("fraction relevant")
        ax.legend(fontsize=7, loc="upper left")
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def _save(
    result: ExperimentResult,
    probs: dict[str, Tensor],
    labels: Tensor,
    base: Path,
    stem: str,
    output: dict[str, Any],
) -> None:
    folder = base / output.get("folder", "results")
    folder.mkdir(parents=True, exist_ok=True)
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
    panels = {title: panel for title, panel in panels.items() if panel[0]}
    save_figure(reliability_figure(panels), folder / f"{stem}_reliability.png", dpi=80, tight=False)
    payload = {
        "title": result.title,
        "values": result.values,
        "extra": result.extra,
        "notes": result.notes,
    }
    write_text_atomically(folder / f"{stem}.json", json.dumps(payload, indent=2) + "\n")


def demo_section(output_dir: str | Path, seed: int = 0, quick: bool = True) -> tuple[str, dict]:
    """Deterministic vs GPF head on synthetic features (no encoder), for ``probrank demo``.

    See :func:`probrank.experiments.gpf_demo.demo_section`.
    """
    from probrank.experiments.gpf_demo import demo_section as _demo

    return _demo(output_dir, seed=seed, quick=quick)
