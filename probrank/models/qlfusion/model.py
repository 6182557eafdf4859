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
from typing import Any

import torch
from torch import Tensor

from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.comb import check_runs, query_order
from probrank.fusion.fuse import fuse
from probrank.models import _persist
from probrank.models._settings import (
    check_positive_int,
    check_unit_interval,
    settings_from_json,
    settings_to_json,
)
from probrank.models.qlfusion.members import CrossFit, CrossFitData, prepare_members
from probrank.models.qlfusion.network import (
    QLFusionNet,
    QuantifierLoss,
    list_features,
    relevant_counts,
    train_quantifier,
)
from probrank.models.qlfusion.predictive import (
    interval_coverage,
    predictive_interval,
    predictive_shares,
)
from probrank.models.qlfusion.quantifiers import (
    VARIANTS,
    Inputs,
    TrainingGroup,
    group_predictions,
    merge_group_predictions,
    model_parts,
    training_groups,
)
from probrank.models.qlfusion.settings import QLFusionSettings, WeightRule

__all__ = ["CrossFit", "ProportionPosterior", "QLFusion", "QLFusionSettings", "WeightRule"]

GroupResult = tuple[dict[str, Tensor], dict[str, Any]]
"""What :meth:`QLFusion.cross_fit_group` returns: ``({variant: p_hat}, info)``."""


@dataclass(frozen=True)
class ProportionPosterior:
    """Posterior draws of the proportion of relevant documents in each (run, topic) list.

    Attributes:
        draws: `S x R x n` draws of the proportion: the likelihood's mean share given the
            logits (:func:`probrank.likelihoods.mean_proportion`) under the output layer's
            guide pushed through the net; ``sigmoid(logits)`` for the built-in likelihoods.
        run_names: The `R` runs, in the model's order.
        query_ids: The `n` topics.
        present: `R x n` bool, True where the run retrieved something for the topic (the
            other entries are predictions for an empty list and are not used).
        latent: `S x R x n` the same draws' ``sigmoid(logits)``, the likelihood's input
            (what the posterior predictive draws counts from); None: ``draws``.
    """

    draws: Tensor
    run_names: tuple[str, ...]
    query_ids: tuple[str, ...]
    present: Tensor
    latent: Tensor | None = None

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
            **model_parts(s),
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
        validation = part(val_idx)
        shares = predictive_shares(
            net.predict(validation["x"], s.posterior_samples, seed=seed, latent=True),
            net.likelihoods()[0],
            s.depth,
            seed=seed,
        )
        self._info = {
            "train_topics": [topics[i] for i in train_idx],
            "validation_topics": [topics[i] for i in val_idx],
            "batch_sizes": [s.batch_sizes[int(i)] for i in chosen],
            "validation_mae": [float(trained.val_mae[int(c), 0, r]) for r, c in enumerate(chosen)],
            "best_epoch": [int(trained.best_epoch[int(c), 0, r]) for r, c in enumerate(chosen)],
            "seed": seed,
            "validation_coverage": interval_coverage(shares, validation["counts"] / s.depth),
        }
        if net.concentration is not None:  # a learned over-dispersion, one per run
            self._info["concentration"] = net.concentration.reshape(-1).tolist()
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
            **model_parts(s),
            seed=seed,
        )

    # -- cross-fitting --------------------------------------------------------------------

    @staticmethod
    def training_groups(variants: Sequence[str] = ("qlfusion",)) -> list[TrainingGroup]:
        """The independent training groups of ``variants`` (the unit of parallel work of
        :meth:`cross_fit_group`; see
        :class:`~probrank.models.qlfusion.quantifiers.TrainingGroup`).

        Raises:
            InputDataError: an unknown variant.
        """
        return training_groups(variants)

    def prepare_cross_fit(
        self,
        runs: Sequence[Run],
        qrels: Qrels,
        *,
        folds: int = 10,
        fold_seed: int = 0,
        variants: Sequence[str] = ("qlfusion",),
    ) -> CrossFitData:
        """The members of a cross-fitting: features, relevant counts and folds.

        Args:
            runs: The `R` input runs; not modified.
            qrels: Judgements; topics are those of the qrels some run retrieved.
            folds: Number of folds (at least 3: test, validation and training folds).
            fold_seed: Seeds the split (:func:`probrank.data.folds.fold_indices`).
            variants: The variants to be trained (the ``plus`` ones need more inputs).
        """
        self.training_groups(variants)  # unknown variants fail before any work
        s = self.settings
        return prepare_members(
            runs,
            qrels,
            folds=folds,
            depth=s.depth,
            fold_seed=fold_seed,
            plus=any(VARIANTS[v].inputs is Inputs.PLUS for v in variants),
            relevance_level=s.relevance_level,
        )

    def cross_fit(
        self,
        runs: Sequence[Run],
        qrels: Qrels,
        *,
        folds: int = 10,
        fold_seed: int = 0,
        variants: Sequence[str] = ("qlfusion",),
        seed: int | None = None,
    ) -> CrossFit:
        """Cross-fit quantifiers over folds of topics, so that every topic is weighted by
        quantifiers that never saw its judgements.

        For fold ``f`` the test topics are fold ``f``, the validation topics fold ``f + 1``
        (mod ``folds``; it chooses each quantifier's batch size and epoch, and the ridge
        penalty and forest leaf size of the scikit-learn variants), the rest train. One
        quantifier per (fold, run) and variant is trained with these settings. The model's own
        fitted state (:meth:`fit`) is not touched.

        Args:
            runs: The `R` input runs (unique names); not modified.
            qrels: Judgements.
            folds: Number of folds (at least 3).
            fold_seed: Seeds the split.
            variants: Names from :data:`~probrank.models.qlfusion.quantifiers.VARIANTS`
                (``qlfusion`` is the paper's model; the others are its ablations and
                extensions).
            seed: Seeds training (default ``settings.seed``).

        Returns:
            A :class:`CrossFit`.
        """
        data = self.prepare_cross_fit(
            runs, qrels, folds=folds, fold_seed=fold_seed, variants=variants
        )
        return self.cross_fit_data(data, variants=variants, seed=seed)

    def cross_fit_data(
        self,
        data: CrossFitData,
        *,
        variants: Sequence[str] = ("qlfusion",),
        seed: int | None = None,
    ) -> CrossFit:
        """:meth:`cross_fit` on prepared members (:meth:`prepare_cross_fit`)."""
        results = [
            self.cross_fit_group(data, group, seed=seed) for group in self.training_groups(variants)
        ]
        return self.merge_cross_fit(data, variants, results)

    def cross_fit_group(
        self, data: CrossFitData, group: TrainingGroup, *, seed: int | None = None
    ) -> GroupResult:
        """Train one training group of a cross-fitting (it may run in another process: groups
        seed their own generators, so the merged result is the same, bit for bit on CPU).

        Args:
            data: From :meth:`prepare_cross_fit`.
            group: One of :meth:`training_groups`.
            seed: Seeds training (default ``settings.seed``).

        Returns:
            ``({variant: p_hat}, info)`` for :meth:`merge_cross_fit`.
        """
        s = self.settings
        return group_predictions(
            data.parts,
            group,
            seed=s.seed if seed is None else seed,
            settings=s,
            progress=s.progress,
        )

    def merge_cross_fit(
        self, data: CrossFitData, variants: Sequence[str], results: Sequence[GroupResult]
    ) -> CrossFit:
        """The :class:`CrossFit` of ``variants`` from :meth:`cross_fit_group`'s results for
        every group of one seed."""
        preds, info = merge_group_predictions(data.parts, variants, results)
        return CrossFit(
            data=data,
            depth=self.settings.depth,
            predictions=preds,
            test_mae=info["test_mae"],
            val_mae=info["val_mae"],
            val_predictions=info["val_predictions"],
            batch_sizes=info["batch_sizes"],
            seconds=info["seconds"],
            quantifiers=info["quantifiers"],
            coverage=info["coverage"],
            loo=info["loo"],
            concentration=info["concentration"],
        )

    def svi_vs_nuts(
        self,
        data: CrossFitData,
        *,
        fold: int = 0,
        run_index: int = 0,
        seed: int = 0,
        num_samples: int = 300,
        warmup_steps: int = 300,
        num_chains: int = 2,
        progress: bool = False,
    ) -> dict[str, dict[str, float]]:
        """SVI against NUTS for the output layer of one (fold, run) cross-fitting quantifier
        (:func:`probrank.models.qlfusion.nuts.svi_vs_nuts`, which documents the table)."""
        from probrank.models.qlfusion.nuts import svi_vs_nuts

        return svi_vs_nuts(
            self.settings, data, fold=fold, run_index=run_index, seed=seed,
            num_samples=num_samples, warmup_steps=warmup_steps, num_chains=num_chains,
            progress=progress,
        )  # fmt: skip

    # -- use ------------------------------------------------------------------------------

    @property
    def run_names(self) -> tuple[str, ...]:
        """The names of the runs the model was fitted on (one quantifier each)."""
        self._require_fitted()
        return self._run_names

    @property
    def training_info(self) -> dict[str, Any]:
        """Topics of the split, chosen batch size, validation MAE and best epoch per run, and
        ``validation_coverage``: the share of held-out validation lists whose observed
        proportion lies in its 50% / 90% posterior predictive interval
        (:meth:`~QLFusion.proportions` with ``predictive=True``)."""
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
        logits = net.logit_draws(x, num_samples, seed=s.seed if seed is None else seed)
        latent, draws = torch.sigmoid(logits), net.mean_proportion(logits)
        return ProportionPosterior(draws, self._run_names, tuple(topics), present, latent)

    def proportions(
        self, runs: Sequence[Run], *, level: float | None = None, predictive: bool = False
    ) -> Any:
        """Posterior mean and interval of each list's proportion of relevant documents.

        Args:
            runs: The fitted runs (matched by name); not modified.
            level: Interval mass (default ``settings.credible_level``).
            predictive: The posterior *predictive* interval of the share of relevant documents
                the list will show when judged (a count drawn from the settings' likelihood
                for each posterior draw, over ``depth``;
                :mod:`~probrank.models.qlfusion.predictive`) in place of the credible
                interval of its mean ``p_hat``. Only the predictive interval covers observed
                shares at its nominal rate (``training_info["validation_coverage"]``).

        Returns:
            A ``pandas.DataFrame`` with columns ``run, qid, mean, lower, upper``, one row per
            (run, topic) list the run retrieved; ``mean`` is the posterior mean of the
            likelihood's mean proportion (:class:`ProportionPosterior`), the number fusion
            weighs by.
        """
        import pandas as pd

        post = self.posterior(runs)
        s = self.settings
        level = s.credible_level if level is None else level
        if predictive:
            check_unit_interval("level", level)
            latent = post.draws if post.latent is None else post.latent
            shares = predictive_shares(
                latent, self._require_fitted().likelihoods()[0], s.depth, seed=s.seed
            )
            lower, upper = predictive_interval(shares, level)
        else:
            lower, upper = post.interval(level)
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
        settings = manifest.read_settings(lambda data: settings_from_json(QLFusionSettings, data))
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
