"""GPF-BERT / SNGP protocol: five relevance heads on one frozen encoder, in-domain and shift.

A config names the training, validation and test sets (``ubuntu:train``, ``ubuntu:dev``,
``ubuntu:test``, ``mediqa:train``, ``mediqa:validation``, ``mediqa:test``, ``liveqa:test``),
the encoder (default: frozen all-MiniLM-L6-v2 in bi-encoder mode, features ``(u, v, u*v, |u-v|)``
cached on disk) and the heads. For every seed and head, the number of epochs is chosen among
``[heads] epochs`` by the validation NLL, and the head is evaluated on the test set: ranking
measures (``R10@1``, ``MAP``, ``MRR``) over candidate lists with at least one relevant
candidate, and ``accuracy`` (threshold 0.5), ``ECE`` (10 bins, top-label), ``Brier`` and
``NLL`` over all (query, candidate) pairs. Reliability diagrams of seed 0 are saved as PNG
and the per-seed values as JSON beside the config (not in smoke mode).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from probrank.data.datasets.candidate_lists import CandidateList, num_pairs
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

__all__ = ["HEADS", "MEASURES", "evaluate_head", "load_split", "pair_features", "run"]

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
    queries = [item.query for item in lists for _ in item.candidates]
    candidates = [c for item in lists for c in item.candidates]
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
    return {**common, **heads.get(name, {})}


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, suffix=path.suffix)
    os.close(handle)
    try:
        write(temp)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def run(config: dict, *, config_path: Path, seeds: int, smoke: bool) -> ExperimentResult:
    """Train and evaluate the configured heads over ``seeds`` seeds (see the module doc)."""
    from probrank.encoders.transformer import TransformerEncoder
    from probrank.nn.heads import FitOptions, build_head

    torch.set_num_threads(int(config.get("experiment", {}).get("threads", 2)))
    data = config.get("data", {})
    enc = config.get("encoder", {})
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
    base = config_path.parent
    cache_dir = enc.get("cache_dir", ".probrank-cache")
    encoder = TransformerEncoder(
        enc.get("name_or_path") or None,
        mode=enc.get("mode", "bi"),
        pooling=enc.get("pooling", "mean"),
        max_length=int(enc.get("max_length", 256)),
        batch_size=int(enc.get("batch_size", 32)),
        cache_dir=cache_dir if Path(cache_dir).is_absolute() else Path.cwd() / cache_dir,
        show_progress=not config.get("experiment", {}).get("quiet", False),
    )
    splits = {}
    for role in ("train", "validation", "test"):
        if role not in data:
            raise InputDataError(f"[data] {role} missing", path=config_path)
        lists = load_split(data[role], data, smoke)
        features, labels = pair_features(encoder, lists)
        splits[role] = (lists, features, labels)
    mean = splits["train"][1].mean(0)
    std = splits["train"][1].std(0).clamp_min(1e-6)
    standard = {role: ((f - mean) / std, y) for role, (_, f, y) in splits.items()}
    epochs_grid = [int(e) for e in heads_cfg.get("epochs", [5, 15])]
    if smoke:
        epochs_grid = [1]
    fit = {k: heads_cfg[k] for k in ("batch_size", "lr", "weight_decay") if k in heads_cfg}
    values: dict[str, dict[str, list[float]]] = {n: {m: [] for m in measures} for n in names}
    chosen: dict[str, dict[str, float]] = {n: {} for n in names}
    test_probs: dict[str, Tensor] = {}
    x_train, y_train = standard["train"]
    x_val, y_val = standard["validation"]
    x_test, y_test = standard["test"]
    for seed in range(seeds):
        for name in names:
            options = _head_options(heads_cfg, name)
            if smoke and name in ("sngp", "gpf"):
                options["num_features"] = 64
            candidates = []
            for epochs in epochs_grid:
                head = build_head(name, x_train.shape[1], seed=seed, **options)
                head.fit(x_train, y_train, FitOptions(epochs=epochs, seed=seed, **fit))
                nll = negative_log_likelihood(head.predict_proba(x_val), y_val.long())
                candidates.append((nll, epochs, head))
            _, epochs, head = min(candidates, key=lambda item: item[0])
            chosen[name][f"seed {seed}"] = float(epochs)
            probs = head.predict_proba(x_test).detach().double()
            scores = evaluate_head(probs, y_test.double(), splits["test"][0], measures)
            for measure, value in scores.items():
                values[name][measure].append(value)
            if seed == 0:
                test_probs[name] = probs
    notes = [
        f"train {data['train']}: {len(splits['train'][0])} lists, {num_pairs(splits['train'][0])} "
        f"pairs; validation {data['validation']}: {len(splits['validation'][0])} lists; "
        f"test {data['test']}: {len(splits['test'][0])} lists, "
        f"{num_pairs(splits['test'][0])} pairs",
        f"encoder {encoder.path.name} ({encoder.mode.value}, {encoder.pooling.value} pooling, "
        f"frozen, features {encoder.feature_dim}); epochs chosen by validation NLL from "
        f"{epochs_grid}",
    ]
    title = config.get("experiment", {}).get("title", f"gpf_ranker: {config_path.stem}")
    result = ExperimentResult(title, values, extra={"epochs chosen": chosen}, notes=notes)
    if not smoke and config.get("output", {}).get("save", True):
        _save(result, test_probs, y_test, base, config_path.stem, config.get("output", {}))
    return result


def _save(
    result: ExperimentResult,
    probs: dict[str, Tensor],
    labels: Tensor,
    base: Path,
    stem: str,
    output: dict[str, Any],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = base / output.get("folder", "results")
    curves = {
        name: reliability_curve(p, labels.long(), n_bins=10, kind="positive")
        for name, p in probs.items()
    }
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    plot_reliability_diagram(curves, ax=ax, title=f"{stem}: P(relevant), seed 0")
    ax.set_xlabel("predicted P(relevant)")
    ax.set_ylabel("fraction relevant")
    fig.tight_layout()
    _atomic_write(
        folder / f"{stem}_reliability.png", lambda p: fig.savefig(p, dpi=80, format="png")
    )
    plt.close(fig)
    payload = {
        "title": result.title,
        "values": result.values,
        "extra": result.extra,
        "notes": result.notes,
    }
    _atomic_write(
        folder / f"{stem}.json",
        lambda p: _write_text(p, json.dumps(payload, indent=2) + "\n"),
    )


def _write_text(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")
