"""QLFusion protocol: k-fold cross-validation over topics of learned rank fusion.

Per fold ``f`` of ``F`` (topics split at random with ``fold_seed``): the test topics are fold
``f``, the validation topics fold ``f + 1`` (mod ``F``), the rest train. One quantifier per
(fold, input run) predicts the proportion of relevant documents in the run's top ``depth`` list
of each test topic; hyperparameters (batch size, LR's ridge penalty, RF's leaf size) are chosen
on the validation fold only. Every topic is fused with the quantifiers of the fold that held it
out (QLFusion: CombSUM of min-max scores times ``p_hat``), and the fused run is evaluated once
over all topics. CombSUM, CombMNZ and META need no training.

The input runs are the ``top_runs`` runs with the highest MAP over all topics (the paper's
setup; this uses test judgements for run *selection* only, as the paper does).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from probrank.data.paths import shared_data_dir
from probrank.data.trec import Qrels, Run
from probrank.evaluation.measures import evaluate
from probrank.exceptions import InputDataError
from probrank.experiments.results import ExperimentResult
from probrank.fusion.comb import query_order
from probrank.fusion.fuse import fuse
from probrank.fusion.selection import top_runs
from probrank.models.qlfusion import (
    QuantifierLoss,
    TrainedQuantifier,
    list_features,
    relevant_counts,
    train_quantifier,
)

__all__ = [
    "DEFAULT_MEASURES",
    "CVData",
    "QuantifierSettings",
    "cross_validated_weights",
    "load_runs",
    "make_folds",
    "prepare_cv",
    "qlfusion_demo",
    "reference_weights",
    "run",
    "svi_vs_nuts",
]

DEFAULT_MEASURES = (
    "P@5", "R@5", "nDCG@5", "P@10", "R@10", "nDCG@10", "P@20", "R@20", "nDCG@20",
)  # fmt: skip

# Variants of the paper's Table 2: (bayesian, loss) -> method name.
_GRID = {
    (True, QuantifierLoss.BINOMIAL): "qlfusion",
    (True, QuantifierLoss.MSE): "qlfusion_prob_mse",
    (False, QuantifierLoss.BINOMIAL): "qlfusion_det_binomial",
    (False, QuantifierLoss.MSE): "qlfusion_det",
}


@dataclass(frozen=True)
class QuantifierSettings:
    """Training settings of the neural quantifiers (the paper's values by default)."""

    hidden: int = 32
    lr: float = 5e-4
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16)
    max_epochs: int = 500
    patience: int = 20
    max_steps: int | None = None
    estimator: str = "flipout"
    posterior_samples: int = 100
    rf_trees: int = 100

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> QuantifierSettings:
        known = set(cls.__dataclass_fields__)
        unknown = set(table) - known
        if unknown:
            raise InputDataError(f"unknown [quantifier] keys: {sorted(unknown)}")
        values = dict(table)
        if "batch_sizes" in values:
            values["batch_sizes"] = tuple(int(b) for b in values["batch_sizes"])
        return cls(**values)


@dataclass(frozen=True)
class CVData:
    """Per-(fold, run) member tensors of a cross-validation.

    Members are ordered ``fold * R + run``. ``train``/``val``/``test`` hold ``x`` (`M x n x k`),
    ``counts`` (`M x n`), ``mask`` (`M x n`) and ``index`` (`M x n` topic indices, -1 on
    padding).
    """

    topics: list[str]
    run_names: list[str]
    folds: list[list[int]]
    train: dict[str, Tensor]
    val: dict[str, Tensor]
    test: dict[str, Tensor]


def make_folds(num_topics: int, folds: int, seed: int = 0) -> list[list[int]]:
    """Split topic indices ``0..n-1`` into ``folds`` near-equal random folds (sorted)."""
    if folds < 3:
        raise InputDataError(f"cross-validation needs at least 3 folds, got {folds}")
    if num_topics < folds:
        raise InputDataError(f"{num_topics} topics cannot fill {folds} folds")
    order = torch.randperm(num_topics, generator=torch.Generator().manual_seed(seed)).tolist()
    return [sorted(order[i::folds]) for i in range(folds)]


def _stack(
    features: Tensor, counts: Tensor, folds: list[list[int]], part: str
) -> dict[str, Tensor]:
    n_runs, _, depth = features.shape
    count = len(folds)
    rows = []
    for f in range(count):
        if part == "test":
            rows.append(folds[f])
        elif part == "val":
            rows.append(folds[(f + 1) % count])
        else:
            rows.append(sorted(i for g in range(count) if g not in (f, (f + 1) % count)
                               for i in folds[g]))  # fmt: skip
    width = max(len(r) for r in rows)
    members = count * n_runs
    out = {
        "x": torch.zeros(members, width, depth),
        "counts": torch.zeros(members, width),
        "mask": torch.zeros(members, width, dtype=torch.bool),
        "index": torch.full((members, width), -1, dtype=torch.long),
    }
    for f, idx in enumerate(rows):
        index = torch.tensor(idx, dtype=torch.long)
        for r in range(n_runs):
            m = f * n_runs + r
            out["x"][m, : len(idx)] = features[r, index]
            out["counts"][m, : len(idx)] = counts[r, index]
            out["mask"][m, : len(idx)] = True
            out["index"][m, : len(idx)] = index
    return out


def prepare_cv(
    runs: Sequence[Run], qrels: Qrels, *, folds: int = 10, depth: int = 100, fold_seed: int = 0
) -> CVData:
    """Features, relevant counts and fold splits for every (fold, run) member.

    Topics are those of the qrels that at least one run retrieved, in natural order.
    """
    judged = set(qrels)
    topics = query_order(q for run in runs for q in run if q in judged)
    if not topics:
        raise InputDataError("the runs and the qrels share no topic")
    features = torch.stack([list_features(run, topics, depth) for run in runs])
    counts = torch.stack([relevant_counts(run, qrels, topics, depth) for run in runs])
    split = make_folds(len(topics), folds, fold_seed)
    return CVData(
        topics=topics,
        run_names=[run.name for run in runs],
        folds=split,
        train=_stack(features, counts, split, "train"),
        val=_stack(features, counts, split, "val"),
        test=_stack(features, counts, split, "test"),
    )


def _weights_from_test(data: CVData, p_hat: Tensor) -> dict[str, dict[str, float]]:
    """``{run: {topic: p_hat}}`` from `M x n_test` test predictions."""
    n_runs = len(data.run_names)
    out: dict[str, dict[str, float]] = {name: {} for name in data.run_names}
    index, mask = data.test["index"], data.test["mask"]
    for m in range(index.shape[0]):
        name = data.run_names[m % n_runs]
        for j in range(index.shape[1]):
            if bool(mask[m, j]):
                out[name][data.topics[int(index[m, j])]] = float(p_hat[m, j])
    return out


def _sklearn_predictions(data: CVData, kind: str, seed: int, trees: int) -> Tensor:
    """Test ``p_hat`` of LR (ridge) or RF quantifiers; hyperparameters chosen on validation."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import Ridge

    x, p, mask = (
        data.train["x"],
        data.train["counts"] / data.train["x"].shape[-1],
        data.train["mask"],
    )
    vx, vp, vmask = data.val["x"], data.val["counts"] / data.val["x"].shape[-1], data.val["mask"]
    tx = data.test["x"]
    out = torch.zeros(tx.shape[:2])
    grid: list[dict[str, Any]] = (
        [{"alpha": a} for a in (1e-3, 1e-2, 0.1, 1.0, 10.0)]
        if kind == "lr"
        else [{"min_samples_leaf": leaf} for leaf in (1, 5)]
    )
    for m in range(x.shape[0]):
        keep, vkeep = mask[m].numpy(), vmask[m].numpy()
        xm, pm = x[m].numpy()[keep], p[m].numpy()[keep]
        best, best_err = None, math.inf
        for options in grid:
            model = (
                Ridge(**options)
                if kind == "lr"
                else RandomForestRegressor(n_estimators=trees, random_state=seed, **options)
            )
            model.fit(xm, pm)
            err = float(np.abs(model.predict(vx[m].numpy()[vkeep]) - vp[m].numpy()[vkeep]).mean())
            if err < best_err:
                best, best_err = model, err
        if best is None:
            raise InputDataError(f"no {kind} quantifier could be fitted for member {m}")
        out[m] = torch.from_numpy(np.clip(best.predict(tx[m].numpy()), 0.0, 1.0)).float()
    return out


def cross_validated_weights(
    data: CVData,
    *,
    seed: int = 0,
    settings: QuantifierSettings | None = None,
    variants: Sequence[str] = ("qlfusion",),
    progress: bool = True,
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, Any]]:
    """Held-out ``p_hat`` of every topic and run, for each requested quantifier variant.

    Args:
        data: From :func:`prepare_cv`.
        seed: Seeds the quantifiers' training.
        settings: Training settings.
        variants: Names among ``qlfusion``, ``qlfusion_prob_mse``, ``qlfusion_det_binomial``,
            ``qlfusion_det``, ``qlfusion_lr``, ``qlfusion_rf``.
        progress: Show progress bars.

    Returns:
        ``({variant: {run: {topic: p_hat}}}, info)`` where ``info`` holds test MAE per variant,
        the trained quantifiers and chosen batch sizes.
    """
    settings = settings or QuantifierSettings()
    known = {*_GRID.values(), "qlfusion_lr", "qlfusion_rf"}
    unknown = set(variants) - known
    if unknown:
        raise InputDataError(
            f"unknown quantifier variants {sorted(unknown)}; known: {sorted(known)}"
        )
    depth = data.test["x"].shape[-1]
    true_p = data.test["counts"] / depth
    preds: dict[str, Tensor] = {}
    info: dict[str, Any] = {"quantifiers": {}, "test_mae": {}, "batch_sizes": {}}
    for bayesian in (True, False):
        losses = [loss for (b, loss), name in _GRID.items() if b is bayesian and name in variants]
        if not losses:
            continue
        trained: TrainedQuantifier = train_quantifier(
            data.train,
            data.val,
            bayesian=bayesian,
            losses=losses,
            batch_sizes=settings.batch_sizes,
            lr=settings.lr,
            max_epochs=settings.max_epochs,
            patience=settings.patience,
            max_steps=settings.max_steps,
            hidden=settings.hidden,
            estimator=settings.estimator,
            seed=seed,
            progress=progress,
        )
        for loss in losses:
            name = _GRID[(bayesian, loss)]
            preds[name] = trained.predict(
                data.test["x"], loss, settings.posterior_samples, seed=seed
            )
            info["quantifiers"][name] = trained
            info["batch_sizes"][name] = trained.chosen_batch_sizes()[trained.losses.index(loss)]
    for kind in ("lr", "rf"):
        if f"qlfusion_{kind}" in variants:
            preds[f"qlfusion_{kind}"] = _sklearn_predictions(data, kind, seed, settings.rf_trees)
    mask = data.test["mask"]
    for name, p_hat in preds.items():
        info["test_mae"][name] = float((p_hat - true_p).abs()[mask].mean())
    return {name: _weights_from_test(data, p) for name, p in preds.items()}, info


def load_runs(config: Mapping[str, Any], config_path: Path) -> tuple[Qrels, list[Run]]:
    """Read the qrels and runs a config's ``[data]`` table names.

    ``[data] shared = "fusion/robust03"`` resolves through
    :func:`~probrank.data.shared_data_dir`; otherwise ``[data] path`` is relative to the
    config file. ``qrels`` and ``runs`` (a glob) are relative to that folder.
    """
    table = config.get("data", {})
    if "shared" in table:
        base = shared_data_dir(*str(table["shared"]).split("/"))
    elif "path" in table:
        base = (config_path.parent / table["path"]).resolve()
    else:
        raise InputDataError("[data] needs 'shared' or 'path'", path=config_path)
    qrels = Qrels.read(base / table.get("qrels", "qrels.txt"))
    paths = sorted(base.glob(table.get("runs", "runs/*")))
    if not paths:
        raise InputDataError(f"no run files match {table.get('runs', 'runs/*')!r} in {base}")
    return qrels, [Run.read(p, on_duplicate="max") for p in paths]


def _strip_name(run: Run) -> str:
    return run.name[len("input.") :] if run.name.startswith("input.") else run.name


def run(
    config: dict, *, config_path: Path, seeds: int = 3, smoke: bool = False, progress: bool = True
) -> ExperimentResult:
    """Run the QLFusion cross-validation a config describes (see the module docstring)."""
    torch.set_num_threads(int(config.get("experiment", {}).get("threads", 2)))
    protocol = dict(config.get("protocol", {}))
    quantifier = dict(config.get("quantifier", {}))
    if smoke:
        protocol.update(config.get("smoke", {}).get("protocol", {}))
        quantifier.update(config.get("smoke", {}).get("quantifier", {}))
    settings = QuantifierSettings.from_config(quantifier)
    depth = int(protocol.get("depth", 100))
    measures = list(protocol.get("measures", DEFAULT_MEASURES))
    if smoke and "data" in config.get("smoke", {}):
        config = {**config, "data": {**config.get("data", {}), **config["smoke"]["data"]}}
    qrels, all_runs = load_runs(config, config_path)
    selected = top_runs(qrels, all_runs, int(protocol.get("top_runs", 6)), "AP")
    if "topics" in protocol:  # smoke: the first few topics only
        keep = query_order(qrels)[: int(protocol["topics"])]
        qrels = Qrels({q: qrels[q] for q in keep}, name=qrels.name)
        selected = [r.restrict(keep) for r in selected]
    data = prepare_cv(
        selected,
        qrels,
        folds=int(protocol.get("folds", 10)),
        depth=depth,
        fold_seed=int(protocol.get("fold_seed", 0)),
    )
    values: dict[str, dict[str, list[float]]] = {}
    for method in ("combsum", "combmnz", "meta"):
        fused = fuse(selected, method, norm="minmax", depth=depth, name=method)
        scores = evaluate(qrels, fused, measures)
        values[method] = {m: [scores[m]] * seeds for m in measures}
    variants = ["qlfusion_lr", "qlfusion_rf", *_GRID.values()]
    grid_values: dict[str, dict[str, list[float]]] = {}
    mae: dict[str, list[float]] = {}
    seconds: list[float] = []
    chosen: dict[str, list[int]] = {}
    for seed in tqdm(range(seeds), desc="seeds", disable=not progress):
        start = time.perf_counter()
        weights, info = cross_validated_weights(
            data, seed=seed, settings=settings, variants=variants, progress=progress
        )
        seconds.append(time.perf_counter() - start)
        for name, w in weights.items():
            fused = fuse(selected, "weighted", norm="minmax", depth=depth, weights=w, name=name)
            scores = evaluate(qrels, fused, measures)
            target = (
                grid_values if name in ("qlfusion_prob_mse", "qlfusion_det_binomial") else values
            )
            for m in measures:
                target.setdefault(name, {}).setdefault(m, []).append(scores[m])
            mae.setdefault(name, []).append(info["test_mae"][name])
        for name, sizes in info["batch_sizes"].items():
            chosen.setdefault(name, []).extend(sizes)
    order = ["combsum", "combmnz", "meta", "qlfusion_lr", "qlfusion_rf", "qlfusion", "qlfusion_det"]
    values = {k: values[k] for k in order}
    every = {**values, **grid_values}
    extra: dict[str, dict[str, dict[str, float]]] = {}
    for measure in [m for m in ("P@5", "nDCG@5", "nDCG@10") if m in measures]:
        extra[f"Table 2 ({measure}, mean over seeds)"] = {
            "probabilistic": {
                "proposed loss": statistics.fmean(every["qlfusion"][measure]),
                "MSE": statistics.fmean(every["qlfusion_prob_mse"][measure]),
            },
            "deterministic": {
                "proposed loss": statistics.fmean(every["qlfusion_det_binomial"][measure]),
                "MSE": statistics.fmean(every["qlfusion_det"][measure]),
            },
        }
    extra["Quantifier test MAE of p_hat (mean over seeds)"] = {
        name: {"MAE": statistics.fmean(v)} for name, v in mae.items()
    }
    extra["Chosen batch sizes (share of fold x run models)"] = {
        name: {str(b): sizes.count(b) / len(sizes) for b in settings.batch_sizes}
        for name, sizes in chosen.items()
    }
    notes = [
        f"runs: {', '.join(_strip_name(r) for r in selected)} (top {len(selected)} by MAP)",
        f"topics: {len(data.topics)}; folds: {len(data.folds)}; depth: {depth}; seeds: {seeds}",
        "quantifier training per seed (all folds, runs, batch sizes, Table 2 variants, LR, RF): "
        + ", ".join(f"{s:.1f}s" for s in seconds),
    ]
    return ExperimentResult(
        title=str(config.get("experiment", {}).get("title", "QLFusion")),
        values=values,
        extra=extra,
        notes=notes,
    )


def qlfusion_demo(
    runs: Sequence[Run], qrels: Qrels, seed: int = 0, quick: bool = True
) -> dict[str, dict[str, float]]:
    """CombSUM, CombMNZ and QLFusion on any runs by 5-fold CV (small settings for a demo).

    Args:
        runs: Input runs (e.g. generated ones); not modified.
        qrels: Their judgements.
        seed: Seeds training.
        quick: Few epochs and two batch sizes (seconds); otherwise the paper's settings.

    Returns:
        ``{method: {measure: value}}`` for ``combsum``, ``combmnz`` and ``qlfusion``, with
        P@5, nDCG@5, nDCG@10 and AP, plus ``{"qlfusion_mae": {"MAE": ...}}``.
    """
    depth = 100
    measures = ["P@5", "nDCG@5", "nDCG@10", "AP"]
    settings = (
        QuantifierSettings(batch_sizes=(4, 16), max_epochs=30, patience=5, posterior_samples=20)
        if quick
        else QuantifierSettings()
    )
    data = prepare_cv(runs, qrels, folds=5, depth=depth, fold_seed=seed)
    out = {
        m: evaluate(qrels, fuse(runs, m, norm="minmax", depth=depth), measures)
        for m in ("combsum", "combmnz")
    }
    weights, info = cross_validated_weights(
        data, seed=seed, settings=settings, variants=["qlfusion"], progress=False
    )
    fused = fuse(runs, "weighted", norm="minmax", depth=depth, weights=weights["qlfusion"])
    out["qlfusion"] = evaluate(qrels, fused, measures)
    out["qlfusion_mae"] = {"MAE": info["test_mae"]["qlfusion"]}
    return out


def _member_subset(part: dict[str, Tensor], members: slice) -> dict[str, Tensor]:
    return {k: v[members] for k, v in part.items()}


def svi_vs_nuts(
    config_path: str | Path,
    *,
    fold: int = 0,
    run_index: int = 0,
    seed: int = 0,
    num_samples: int = 300,
    warmup_steps: int = 300,
    num_chains: int = 2,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Compare the output layer's SVI posterior with NUTS for one (fold, run) quantifier.

    The quantifiers of ``fold`` are trained as in :func:`run` (SVI, flipout, binomial loss);
    then, holding the learned layer norm and hidden layer fixed, NUTS samples the output
    layer's 33 weights under the same N(0, 1) priors and binomial likelihood on the member's
    training lists. Both posteriors predict the member's test lists.

    Returns:
        ``{"SVI": {...}, "NUTS": {...}}`` with the posterior mean of ``|w|``, the mean posterior
        sd, test MAE of the posterior predictive mean ``p_hat``, coverage of the test lists'
        observed proportions by 90% posterior predictive intervals (binomial noise
        included), and for NUTS the largest R-hat and smallest bulk ESS; plus
        ``{"SVI vs NUTS": {"mean |diff| / NUTS sd": ..., "SVI sd / NUTS sd": ...}}``.
    """
    import pyro
    import pyro.distributions as dist

    from probrank.diagnostics.arviz import output_layer_dims, summary, to_inference_data
    from probrank.experiments import load_config
    from probrank.inference.mcmc import fit_nuts

    config_path = Path(config_path)
    config = load_config(config_path)
    protocol = dict(config.get("protocol", {}))
    settings = QuantifierSettings.from_config(dict(config.get("quantifier", {})))
    depth = int(protocol.get("depth", 100))
    qrels, all_runs = load_runs(config, config_path)
    selected = top_runs(qrels, all_runs, int(protocol.get("top_runs", 6)), "AP")
    data = prepare_cv(selected, qrels, folds=int(protocol.get("folds", 10)), depth=depth,
                      fold_seed=int(protocol.get("fold_seed", 0)))  # fmt: skip
    n_runs = len(selected)
    part = slice(fold * n_runs, (fold + 1) * n_runs)
    train, val, test = (_member_subset(d, part) for d in (data.train, data.val, data.test))
    trained = train_quantifier(
        train, val, bayesian=True, losses=["binomial"], batch_sizes=settings.batch_sizes,
        lr=settings.lr, max_epochs=settings.max_epochs, patience=settings.patience,
        max_steps=settings.max_steps, hidden=settings.hidden, estimator=settings.estimator,
        seed=seed, progress=progress,
    )  # fmt: skip
    member = int(trained.chosen[0, run_index]) * n_runs + run_index
    net = trained.net
    out = net.output
    keep, tkeep = train["mask"][run_index], test["mask"][run_index]
    with torch.no_grad():
        copies = len(trained.batch_sizes)
        h = net.features(train["x"].repeat(copies, 1, 1))[member][keep].double()
        th = net.features(test["x"].repeat(copies, 1, 1))[member][tkeep].double()
        w_loc = out.weight_loc[member, 0].double()  # type: ignore[index]
        w_sd = out.weight_scale[member, 0].double()  # type: ignore[index]
        b_loc = out.bias_loc[member, 0].double()  # type: ignore[index]
        b_sd = out.bias_scale[member, 0].double()  # type: ignore[index]
    counts = train["counts"][run_index][keep].double()
    true_p = test["counts"][run_index][tkeep].double() / depth
    zero = torch.tensor(0.0, dtype=torch.float64)

    def model(h: Tensor, counts: Tensor | None = None) -> None:
        w = pyro.sample("output.weight", dist.Normal(zero, 1.0).expand([h.shape[-1]]).to_event(1))
        b = pyro.sample("output.bias", dist.Normal(zero, 1.0))
        with pyro.plate("topics", h.shape[0]):
            pyro.sample("k_rel", dist.Binomial(depth, logits=h @ w + b), obs=counts)

    draws = fit_nuts(model, h, counts, num_samples=num_samples, warmup_steps=warmup_steps,
                     num_chains=num_chains, seed=seed, progress=progress)  # fmt: skip
    generator = torch.Generator().manual_seed(seed)
    svi_w = w_loc + w_sd * torch.randn(num_chains * num_samples, w_loc.shape[0],
                                       generator=generator, dtype=torch.float64)  # fmt: skip
    svi_b = b_loc + b_sd * torch.randn(num_chains * num_samples, generator=generator,
                                       dtype=torch.float64)  # fmt: skip
    nuts_w = draws["output.weight"].reshape(-1, w_loc.shape[0])
    nuts_b = draws["output.bias"].reshape(-1)

    def predictive(w: Tensor, b: Tensor) -> dict[str, float]:
        p = torch.sigmoid(th @ w.T + b)  # n_test x S
        # posterior predictive of the observed proportion: binomial noise on top of p_hat
        k = torch.binomial(torch.full_like(p, float(depth)), p, generator=generator) / depth
        low, high = torch.quantile(k, torch.tensor([0.05, 0.95], dtype=p.dtype), dim=1)
        return {
            "posterior mean |w|": float(w.mean(0).abs().mean()),
            "mean posterior sd of w": float(w.std(0).mean()),
            "test MAE of p_hat": float((p.mean(1) - true_p).abs().mean()),
            "90% interval coverage": float(((true_p >= low) & (true_p <= high)).double().mean()),
        }

    dims, coords = output_layer_dims("output", w_loc.shape[0], 1)
    dims = {"output.weight": ["hidden"], "output.bias": []}
    idata = to_inference_data(draws, dims=dims, coords={"hidden": coords["hidden"]})
    table = summary(idata)
    result = {"SVI": predictive(svi_w, svi_b), "NUTS": predictive(nuts_w, nuts_b)}
    result["NUTS"]["max R-hat"] = float(table["r_hat"].max())
    result["NUTS"]["min bulk ESS"] = float(table["ess_bulk"].min())
    nuts_sd = nuts_w.std(0)
    result["SVI vs NUTS"] = {
        "mean |diff of means| / NUTS sd": float(((w_loc - nuts_w.mean(0)).abs() / nuts_sd).mean()),
        "mean SVI sd / NUTS sd": float((w_sd / nuts_sd).mean()),
        "training lists": float(h.shape[0]),
        "batch size chosen": float(trained.batch_sizes[int(trained.chosen[0, run_index])]),
    }
    return result


def reference_weights(config_path: str | Path) -> dict[str, dict[str, float]]:
    """Diagnostics without training: QLFusion with reference weights instead of a quantifier.

    * ``constant``: each (fold, run) predicts its training topics' mean proportion for every
      test topic (a quantifier that ignores its input; legitimate, uses training data only).
    * ``oracle``: the true proportion of relevant documents in each test list (uses test
      judgements; an upper bound on what a perfect quantifier could give, not a method).

    Returns:
        ``{name: {measure: value}}`` with the fused runs' measures and the weights' test MAE.
    """
    from probrank.experiments import load_config

    config_path = Path(config_path)
    config = load_config(config_path)
    protocol = dict(config.get("protocol", {}))
    depth = int(protocol.get("depth", 100))
    measures = list(protocol.get("measures", DEFAULT_MEASURES))
    qrels, all_runs = load_runs(config, config_path)
    selected = top_runs(qrels, all_runs, int(protocol.get("top_runs", 6)), "AP")
    data = prepare_cv(selected, qrels, folds=int(protocol.get("folds", 10)), depth=depth,
                      fold_seed=int(protocol.get("fold_seed", 0)))  # fmt: skip
    train_p = data.train["counts"] / depth
    mask = data.train["mask"].to(train_p.dtype)
    mean = (train_p * mask).sum(-1) / mask.sum(-1)
    true_p = data.test["counts"] / depth
    out = {}
    for name, p_hat in (
        ("constant", mean.unsqueeze(-1).expand_as(true_p)),
        ("oracle", true_p),
    ):
        weights = _weights_from_test(data, p_hat)
        fused = fuse(selected, "weighted", norm="minmax", depth=depth, weights=weights, name=name)
        scores = evaluate(qrels, fused, measures)
        scores["MAE"] = float((p_hat - true_p).abs()[data.test["mask"]].mean())
        out[name] = scores
    return out
