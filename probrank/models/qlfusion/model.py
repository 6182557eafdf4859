"""QLFusion as a library object: fit quantifiers on your runs and qrels, fuse new topics.

:class:`QLFusion` trains one Bayesian quantifier per input run
(:func:`~probrank.models.qlfusion.network.train_quantifier`: the paper's network, binomial
likelihood, SVI, one batch size per run chosen on validation MAE) on the training topics, with
a validation split carved from them at random (``validation_fraction``, seeded). To fuse, each
run's min-max normalised top-``depth`` scores of a topic are multiplied by the predicted
proportion of relevant documents in that list and summed over runs
(:func:`probrank.fusion.fuse` with ``method="weighted"``): the rule of the paper and of the
``qlfusion_cv`` protocol.

The posterior over proportions (:meth:`QLFusion.posterior`) is **sample-based**: draws of the
Bayesian output layer's weights from its fitted mean-field guide, pushed through the network
(`S x R x n` draws of ``p_hat``; epistemic uncertainty only, no binomial noise).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch
from torch import Tensor

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import check_runs, query_order
from probrank.fusion.fuse import fuse
from probrank.models import _persist
from probrank.models._settings import (
    check_fraction,
    check_positive,
    check_positive_int,
    check_unit_interval,
    int_tuple,
    set_enum,
    settings_from_json,
    settings_to_json,
)
from probrank.models.qlfusion.network import (
    QLFusionNet,
    QuantifierLoss,
    list_features,
    relevant_counts,
    train_quantifier,
)
from probrank.nn.bayesian_linear import Estimator

__all__ = ["ProportionPosterior", "QLFusion", "QLFusionSettings", "WeightRule"]


class WeightRule(str, Enum):
    """How the posterior draws of a list's proportion become its fusion weight."""

    MEAN = "mean"
    """The posterior mean (the paper's rule)."""
    LOWER = "lower"
    """The ``lower_quantile`` quantile of the draws: uncertain lists weigh less."""


@dataclass(frozen=True)
class QLFusionSettings:
    """Settings of :class:`QLFusion` (the model card's values by default).

    Attributes:
        depth: `k`, the list length the quantifiers read and fusion uses.
        hidden: Hidden width of the quantifier.
        lr: Adam learning rate.
        batch_sizes: Candidate mini-batch sizes, one chosen per run on validation MAE.
        max_epochs: Epoch limit (in each batch size's own epochs).
        patience: Early-stopping patience on validation MAE, in epochs.
        max_steps: Cap on SVI steps (None: no cap).
        estimator: Gradient estimator of the Bayesian output layer.
        init_scale: Initial standard deviation of the output layer's guide.
        validation_fraction: Share of the training topics held out for validation
            (at least one topic).
        posterior_samples: Draws of the output layer per prediction.
        weight_rule: How draws become a fusion weight (:class:`WeightRule`).
        lower_quantile: The quantile of the ``lower`` rule.
        credible_level: Mass of the credible intervals :meth:`QLFusion.proportions` reports.
        relevance_level: Lowest qrels grade counted relevant.
        seed: Seeds the split, training and the posterior draws.
        progress: Show a progress bar while training (tqdm).
    """

    depth: int = 100
    hidden: int = 32
    lr: float = 5e-4
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16)
    max_epochs: int = 500
    patience: int = 20
    max_steps: int | None = 1000
    estimator: Estimator = Estimator.FLIPOUT
    init_scale: float = 1e-2
    validation_fraction: float = 0.1
    posterior_samples: int = 100
    weight_rule: WeightRule = WeightRule.MEAN
    lower_quantile: float = 0.1
    credible_level: float = 0.9
    relevance_level: int = 1
    seed: int = 0
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("depth", "hidden", "max_epochs", "patience", "posterior_samples"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("max_steps", self.max_steps, allow_none=True)
        object.__setattr__(self, "batch_sizes", int_tuple("batch_sizes", self.batch_sizes))
        check_positive("lr", self.lr)
        check_positive("init_scale", self.init_scale)
        check_fraction("validation_fraction", self.validation_fraction)
        check_unit_interval("lower_quantile", self.lower_quantile)
        check_unit_interval("credible_level", self.credible_level)
        if isinstance(self.relevance_level, bool) or not isinstance(self.relevance_level, int):
            raise InputDataError(
                f"relevance_level must be an integer, got {self.relevance_level!r}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputDataError(f"seed must be an integer, got {self.seed!r}")
        if not isinstance(self.progress, bool):
            raise InputDataError(f"progress must be true or false, got {self.progress!r}")
        set_enum(self, "estimator", Estimator)
        set_enum(self, "weight_rule", WeightRule)


@dataclass(frozen=True)
class ProportionPosterior:
    """Posterior draws of the proportion of relevant documents in each (run, topic) list.

    Attributes:
        draws: `S x R x n` draws of ``p_hat`` (the output layer's guide pushed through the net).
        run_names: The `R` runs, in the model's order.
        query_ids: The `n` topics.
        present: `R x n` bool, True where the run retrieved something for the topic (the
            other entries are predictions for an empty list and are not used).
    """

    draws: Tensor
    run_names: tuple[str, ...]
    query_ids: tuple[str, ...]
    present: Tensor

    @property
    def mean(self) -> Tensor:
        """`R x n` posterior means."""
        return self.draws.mean(0)

    def quantile(self, q: float) -> Tensor:
        """`R x n` ``q`` quantiles of the draws."""
        check_unit_interval("q", q, open_interval=False)
        return torch.quantile(self.draws, torch.tensor(q, dtype=self.draws.dtype), dim=0)

    def interval(self, level: float = 0.9) -> tuple[Tensor, Tensor]:
        """`R x n` lower and upper ends of the central ``level`` credible interval."""
        check_unit_interval("level", level)
        tail = (1.0 - level) / 2.0
        return self.quantile(tail), self.quantile(1.0 - tail)


class QLFusion:
    """QLFusion: quantifier-weighted CombSUM with one Bayesian quantifier per input run.

    Args:
        settings: :class:`QLFusionSettings` (default: the model card's).

    Example::

        model = QLFusion(QLFusionSettings(depth=50)).fit(train_runs, qrels)
        fused = model.fuse(test_runs)                      # a probrank.data.Run
        table = model.proportions(test_runs)               # mean, lower, upper per list
    """

    def __init__(self, settings: QLFusionSettings | None = None) -> None:
        if settings is not None and not isinstance(settings, QLFusionSettings):
            raise InputDataError(f"settings must be QLFusionSettings, got {type(settings)!r}")
        self.settings = settings or QLFusionSettings()
        self._net: QLFusionNet | None = None
        self._run_names: tuple[str, ...] = ()
        self._info: dict[str, Any] = {}

    # -- fitting --------------------------------------------------------------------------

    def fit(self, runs: Sequence[Run], qrels: Qrels, *, seed: int | None = None) -> QLFusion:
        """Train one quantifier per run on the topics of ``qrels`` the runs retrieved.

        Args:
            runs: The `R` input runs (names must be unique); not modified.
            qrels: Judgements of the training topics.
            seed: Overrides ``settings.seed``.

        Returns:
            ``self``.

        Raises:
            InputDataError: no runs, duplicate run names, fewer than two judged topics, or
                bad training settings.
        """
        s = self.settings
        seed = s.seed if seed is None else seed
        check_runs(runs)
        names = _unique_names(runs)
        if not isinstance(qrels, Qrels):
            raise InputDataError(f"qrels must be a probrank.data.Qrels, got {type(qrels)!r}")
        judged = set(qrels)
        topics = query_order(q for run in runs for q in run if q in judged)
        if len(topics) < 2:
            raise InputDataError(
                f"QLFusion needs at least 2 judged topics the runs retrieved, got {len(topics)}"
            )
        n_val = min(len(topics) - 1, max(1, round(s.validation_fraction * len(topics))))
        order = torch.randperm(len(topics), generator=torch.Generator().manual_seed(seed))
        val_idx = sorted(order[:n_val].tolist())
        train_idx = sorted(order[n_val:].tolist())
        x = torch.stack([list_features(run, topics, s.depth) for run in runs])
        counts = torch.stack(
            [relevant_counts(run, qrels, topics, s.depth, s.relevance_level) for run in runs]
        )

        def part(index: list[int]) -> dict[str, Tensor]:
            return {
                "x": x[:, index],
                "counts": counts[:, index],
                "mask": torch.ones(len(runs), len(index), dtype=torch.bool),
            }

        trained = train_quantifier(
            part(train_idx),
            part(val_idx),
            bayesian=True,
            losses=(QuantifierLoss.BINOMIAL,),
            batch_sizes=s.batch_sizes,
            lr=s.lr,
            max_epochs=s.max_epochs,
            patience=s.patience,
            max_steps=s.max_steps,
            hidden=s.hidden,
            estimator=s.estimator.value,
            init_scale=s.init_scale,
            layer_norm=True,
            total_count=s.depth,
            seed=seed,
            progress=s.progress,
        )
        # keep only each run's member with the chosen batch size (members: size * R + run)
        chosen = trained.chosen[0]
        members = chosen * len(runs) + torch.arange(len(runs))
        net = self._new_net(len(runs), seed)
        net.load_state_dict({k: v[members] for k, v in trained.net.state_dict().items()})
        self._net = net
        self._run_names = names
        self._info = {
            "train_topics": [topics[i] for i in train_idx],
            "validation_topics": [topics[i] for i in val_idx],
            "batch_sizes": [s.batch_sizes[int(i)] for i in chosen],
            "validation_mae": [float(trained.val_mae[int(c), 0, r]) for r, c in enumerate(chosen)],
            "best_epoch": [int(trained.best_epoch[int(c), 0, r]) for r, c in enumerate(chosen)],
            "seed": seed,
        }
        return self

    def _new_net(self, runs: int, seed: int) -> QLFusionNet:
        s = self.settings
        return QLFusionNet(
            s.depth,
            s.hidden,
            num_models=runs,
            bayesian=True,
            loss=QuantifierLoss.BINOMIAL,
            estimator=s.estimator.value,
            init_scale=s.init_scale,
            layer_norm=True,
            total_count=s.depth,
            seed=seed,
        )

    # -- use ------------------------------------------------------------------------------

    @property
    def run_names(self) -> tuple[str, ...]:
        """The names of the runs the model was fitted on (one quantifier each)."""
        self._require_fitted()
        return self._run_names

    @property
    def training_info(self) -> dict[str, Any]:
        """Topics of the split, chosen batch size, validation MAE and best epoch per run."""
        self._require_fitted()
        return dict(self._info)

    def _require_fitted(self) -> QLFusionNet:
        if self._net is None:
            raise InputDataError("QLFusion is not fitted: call fit(runs, qrels) or load() first")
        return self._net

    def _ordered(self, runs: Sequence[Run]) -> list[Run]:
        """``runs`` in the model's run order, matched by name."""
        self._require_fitted()
        check_runs(runs)
        by_name = dict(zip(_unique_names(runs), runs, strict=True))
        unknown = sorted(set(by_name) - set(self._run_names))
        missing = [n for n in self._run_names if n not in by_name]
        if unknown or missing:
            raise InputDataError(
                f"QLFusion was fitted on runs {list(self._run_names)}; got unknown runs "
                f"{unknown} and lacks {missing} (runs are matched by name)"
            )
        return [by_name[n] for n in self._run_names]

    def posterior(
        self, runs: Sequence[Run], *, num_samples: int | None = None, seed: int | None = None
    ) -> ProportionPosterior:
        """Posterior draws of the proportion of relevant documents in every list of ``runs``.

        Args:
            runs: The fitted runs (matched by name; typically on new topics); not modified.
            num_samples: `S` (default ``settings.posterior_samples``).
            seed: Seeds the draws (default ``settings.seed``).

        Returns:
            A :class:`ProportionPosterior` over the topics any run retrieved.
        """
        net = self._require_fitted()
        ordered = self._ordered(runs)
        topics = query_order(q for run in ordered for q in run if run[q])
        if not topics:
            raise InputDataError("the runs retrieve no documents")
        s = self.settings
        x = torch.stack([list_features(run, topics, s.depth) for run in ordered])
        present = torch.tensor(
            [[q in run.as_dict() and bool(run.as_dict()[q]) for q in topics] for run in ordered]
        )
        num_samples = s.posterior_samples if num_samples is None else num_samples
        check_positive_int("num_samples", num_samples)
        draws = net.predict(x, num_samples, seed=s.seed if seed is None else seed)
        return ProportionPosterior(draws, self._run_names, tuple(topics), present)

    def proportions(self, runs: Sequence[Run], *, level: float | None = None) -> Any:
        """Posterior mean and credible interval of each list's proportion of relevant documents.

        Args:
            runs: The fitted runs (matched by name); not modified.
            level: Interval mass (default ``settings.credible_level``).

        Returns:
            A ``pandas.DataFrame`` with columns ``run, qid, mean, lower, upper``, one row per
            (run, topic) list the run retrieved.
        """
        import pandas as pd

        post = self.posterior(runs)
        lower, upper = post.interval(self.settings.credible_level if level is None else level)
        mean = post.mean
        rows = [
            {
                "run": name,
                "qid": qid,
                "mean": float(mean[r, t]),
                "lower": float(lower[r, t]),
                "upper": float(upper[r, t]),
            }
            for r, name in enumerate(post.run_names)
            for t, qid in enumerate(post.query_ids)
            if bool(post.present[r, t])
        ]
        return pd.DataFrame(rows, columns=["run", "qid", "mean", "lower", "upper"])

    def weights(self, runs: Sequence[Run]) -> dict[str, dict[str, float]]:
        """Fusion weights ``{run: {qid: w}}`` from the posterior by ``settings.weight_rule``."""
        post = self.posterior(runs)
        s = self.settings
        values = post.mean if s.weight_rule is WeightRule.MEAN else post.quantile(s.lower_quantile)
        return {
            name: {
                qid: float(values[r, t])
                for t, qid in enumerate(post.query_ids)
                if bool(post.present[r, t])
            }
            for r, name in enumerate(post.run_names)
        }

    def fuse(self, runs: Sequence[Run], *, name: str = "qlfusion") -> Run:
        """Fuse ``runs``: min-max scores of each list times its weight, summed over runs.

        Args:
            runs: The fitted runs (matched by name); not modified.
            name: The fused run's name and tag.

        Returns:
            The fused run over every topic some run retrieved.
        """
        weights = self.weights(runs)
        return fuse(
            runs, "weighted", norm="minmax", depth=self.settings.depth, weights=weights, name=name
        )

    def to_inference_data(
        self, runs: Sequence[Run] | None = None, *, num_samples: int = 1000, seed: int | None = None
    ) -> Any:
        """ArviZ data of the posterior.

        Args:
            runs: None: draws of the Bayesian output layer's ``weight`` and ``bias`` (dims
                ``member`` = run, ``output``, ``feature``); runs: draws of the proportions
                ``p_hat`` of their lists (dims ``run``, ``topic``).
            num_samples: Draws.
            seed: Seeds the draws (default ``settings.seed``).

        Returns:
            ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x), one chain.
        """
        from probrank.diagnostics import to_inference_data

        net = self._require_fitted()
        seed = self.settings.seed if seed is None else seed
        if runs is None:
            return to_inference_data(
                net, num_samples=num_samples, seed=seed, coords={"member": list(self._run_names)}
            )
        post = self.posterior(runs, num_samples=num_samples, seed=seed)
        return to_inference_data(
            {"p_hat": post.draws},
            chains=False,
            dims={"p_hat": ["run", "topic"]},
            coords={"run": list(post.run_names), "topic": list(post.query_ids)},
        )

    # -- persistence ----------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Any:
        """Save to a folder (manifest + safetensors; see :mod:`probrank.models._persist`)."""
        net = self._require_fitted()
        return _persist.save_model(
            path,
            model_class=type(self).__name__,
            settings=settings_to_json(self.settings),
            tensors={"quantifiers": net.state_dict()},
            state={"run_names": list(self._run_names), "training": self._info},
            encoder=None,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> QLFusion:
        """A model saved by :meth:`save`; its predictions equal the saved model's.

        Raises:
            InputDataError: see :func:`probrank.models._persist.load_model`.
        """
        manifest, tensors = _persist.load_model(path, cls.__name__)
        settings = settings_from_json(QLFusionSettings, manifest.settings)
        model = cls(settings)
        names = tuple(str(n) for n in manifest.state.get("run_names", []))
        if not names:
            raise InputDataError("damaged manifest: no run names", path=path)
        net = model._new_net(len(names), settings.seed)
        try:
            net.load_state_dict(tensors["quantifiers"])
        except (KeyError, RuntimeError) as exc:
            raise InputDataError(f"weights do not fit the settings ({exc})", path=path) from None
        model._net, model._run_names = net, names
        model._info = dict(manifest.state.get("training", {}))
        return model

    def __repr__(self) -> str:
        fitted = f"runs={list(self._run_names)}" if self._net is not None else "unfitted"
        return f"QLFusion({fitted}, depth={self.settings.depth})"


def _unique_names(runs: Sequence[Run]) -> tuple[str, ...]:
    names = tuple(run.name for run in runs)
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InputDataError(f"run names must be unique (they key the quantifiers): {duplicated}")
    return names
