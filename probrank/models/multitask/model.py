"""The multi-task filter + re-ranker as a library object, on any labelled candidate lists.

:class:`MultiTaskRanker` featurises each (query, answer) with the encoder and list-context groups
(:class:`~probrank.models.multitask.features.AnswerFeaturizer`; the MEDIQA protocol's metadata and
entailment groups need MEDIQA's fields and are not used here), then does what the
``mediqa_multitask`` protocol does per seed: one
:class:`~probrank.models.multitask.network.MultiTaskNet` per ranking weight lambda, fitted by SVI
with early stopping on the validation lists
(:func:`~probrank.models.multitask.network.fit_multitask`), and lambda, the P(keep) threshold and
the keep-top rule chosen together by validation accuracy, ties by validation MRR (MEDIQA's MRR: 1 /
position of the first kept and correct answer). Without validation lists a share of the training
lists is held out (``validation_fraction``, seeded).

The posterior over a set of answers' utilities (:meth:`MultiTaskRanker.posterior`) is
**exact** for the mean-field output layer: utilities are linear in its weights, so they are
jointly Gaussian with covariance ``H diag(s_w^2) H^T + s_b^2`` (``H`` the `n x width` hidden
activations), returned with the low-rank root ``[H diag(s_w), s_b]`` as a BoTorch
``GPyTorchPosterior``.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import numpy as np
import torch
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DiagLinearOperator
from torch import Tensor

from probrank.data.candidates import CandidateList, check_lists, split_lists
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models import _encoder, _persist
from probrank.models._settings import (
    check_fraction,
    check_positive,
    check_positive_int,
    float_tuple,
    set_enum,
    settings_from_json,
    settings_to_json,
)
from probrank.models.multitask.features import AnswerFeaturizer
from probrank.models.multitask.network import MultiTaskData, MultiTaskNet, predict_multitask
from probrank.models.multitask.selection import (
    DEFAULT_THRESHOLDS,
    KeepTop,
    MultiTaskChoice,
    Scorer,
    keep_labels,
    select_multitask,
)
from probrank.nn.heads import POINT_MASS_VARIANCE
from probrank.nn.mvn import low_rank_mvn

__all__ = ["DEFAULT_THRESHOLDS", "KeepTop", "MultiTaskRanker", "MultiTaskSettings", "RankedAnswers"]


@dataclass(frozen=True)
class MultiTaskSettings:
    """Settings of :class:`MultiTaskRanker` (the MEDIQA model card's values by default).

    Attributes:
        hidden: Hidden tanh units.
        dropout: Dropout on the hidden layer while training.
        skip: The output layer also reads the features (wide and deep).
        prior_scale: Standard deviation of the output layer's Normal prior.
        bayesian: Bayesian output layer (SVI) or its deterministic twin.
        weight_decay: Adam's L2 penalty on the point-estimated weights; the loss is a sum over
            answers, so scale it with the data (the card's 1000 is for ~1,700 answers).
        lr: Adam learning rate.
        max_epochs: Full-batch steps at most.
        patience: Steps without a better validation loss before stopping.
        ranking_weights: Candidate lambdas of ``(1 - lambda) filtering + lambda ranking``.
        thresholds: Candidate P(keep) thresholds.
        keep_top: :class:`KeepTop`.
        validation_fraction: Share of the training lists held out when no validation lists
            are given (at least one list).
        posterior_samples: Draws of the output layer for P(keep).
        list_context: Include the list-context features.
        seed: Seeds the split, initialisation, training and the draws.
        progress: Show a progress bar while training (tqdm).
    """

    hidden: int = 64
    dropout: float = 0.1
    skip: bool = False
    prior_scale: float = 1.0
    bayesian: bool = True
    weight_decay: float = 1000.0
    lr: float = 1e-3
    max_epochs: int = 300
    patience: int = 40
    ranking_weights: tuple[float, ...] = (0.6, 0.75, 0.9)
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    keep_top: KeepTop = KeepTop.CHOOSE
    validation_fraction: float = 0.2
    posterior_samples: int = 200
    list_context: bool = True
    seed: int = 0
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("hidden", "max_epochs", "patience", "posterior_samples"):
            check_positive_int(name, getattr(self, name))
        check_positive("lr", self.lr)
        check_positive("prior_scale", self.prior_scale)
        if not 0.0 <= float(self.dropout) < 1.0:
            raise InputDataError(f"dropout must lie in [0, 1), got {self.dropout!r}")
        if float(self.weight_decay) < 0:
            raise InputDataError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        weights = float_tuple("ranking_weights", self.ranking_weights)
        if any(not 0.0 <= w <= 1.0 for w in weights):
            raise InputDataError(f"ranking_weights must lie in [0, 1], got {weights}")
        thresholds = float_tuple("thresholds", self.thresholds)
        if any(not 0.0 < t < 1.0 for t in thresholds):
            raise InputDataError(f"thresholds must lie in (0, 1), got {thresholds}")
        object.__setattr__(self, "ranking_weights", weights)
        object.__setattr__(self, "thresholds", thresholds)
        check_fraction("validation_fraction", self.validation_fraction)
        for name in ("skip", "bayesian", "list_context", "progress"):
            if not isinstance(getattr(self, name), bool):
                raise InputDataError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputDataError(f"seed must be an integer, got {self.seed!r}")
        set_enum(self, "keep_top", KeepTop)


@dataclass(frozen=True)
class RankedAnswers:
    """One list filtered and ranked.

    Attributes:
        qid: The query id.
        candidate_ids: All answers, best first (by posterior mean utility).
        probabilities: P(keep) of each, in that order (posterior mean of the filter).
        utility_mean: Posterior mean utility of each.
        utility_sd: Posterior standard deviation of each utility.
        keep: Whether each answer is kept (P(keep) above the threshold, or the top one under
            the keep-top rule).
    """

    qid: str
    candidate_ids: tuple[str, ...]
    probabilities: tuple[float, ...]
    utility_mean: tuple[float, ...]
    utility_sd: tuple[float, ...]
    keep: tuple[bool, ...]

    @property
    def kept(self) -> tuple[str, ...]:
        """The kept answers, best first."""
        return tuple(c for c, k in zip(self.candidate_ids, self.keep, strict=True) if k)


class LabelledAnswers(Protocol):
    """Precomputed answer features with labels, grades and list groups."""

    @property
    def features(self) -> Tensor: ...  # `n x d`
    @property
    def labels(self) -> Tensor | None: ...  # `n`
    @property
    def groups(self) -> list[list[int]]: ...
    @property
    def grades(self) -> list[int]: ...


def _accuracy_mrr(
    data: LabelledAnswers, scores: np.ndarray, predicted: np.ndarray
) -> tuple[float, float]:
    """Accuracy of the kept/dropped labels and MEDIQA's MRR (first kept and correct answer)."""
    if data.labels is None:
        raise InputDataError("validation lists need labels")
    truth = data.labels.numpy().astype(int)
    accuracy = float((predicted == truth).mean())
    reciprocal = []
    for group in data.groups:
        order = sorted(group, key=lambda i: -scores[i])
        first = next(
            (1.0 / pos for pos, i in enumerate(order, 1) if predicted[i] and truth[i]), 0.0
        )
        reciprocal.append(first)
    return accuracy, float(np.mean(reciprocal))


class MultiTaskRanker:
    """Filter and re-rank candidate answers with one shared Bayesian utility.

    Args:
        settings: :class:`MultiTaskSettings` (default: the model card's).
        encoder: A frozen :class:`~probrank.encoders.TransformerEncoder`; None: the packaged
            all-MiniLM-L6-v2 (bi-encoder, mean pooling), built on first use.

    Example::

        ranker = MultiTaskRanker().fit(train_lists)          # lists with labels and grades
        for answers in ranker.filter_and_rank(new_lists):
            print(answers.qid, answers.kept)
    """

    def __init__(
        self, settings: MultiTaskSettings | None = None, encoder: TransformerEncoder | None = None
    ) -> None:
        if settings is not None and not isinstance(settings, MultiTaskSettings):
            raise InputDataError(f"settings must be MultiTaskSettings, got {type(settings)!r}")
        self.settings = settings or MultiTaskSettings()
        self._encoder = encoder
        self._featurizer: AnswerFeaturizer | None = None
        self._net: MultiTaskNet | None = None
        self._chosen: MultiTaskChoice | None = None
        self._choice: dict[str, Any] = {}

    @property
    def encoder(self) -> TransformerEncoder:
        """The encoder (the default one is built on first use)."""
        if self._encoder is None:
            self._encoder = _encoder.default_encoder()
        return self._encoder

    # -- fitting --------------------------------------------------------------------------

    def fit(
        self,
        train_lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> MultiTaskRanker:
        """Fit on labelled lists (grades order the ranking pairs; labels are the filter's).

        Args:
            train_lists: Labelled training lists; not modified.
            validation_lists: Labelled lists for early stopping and selection (default: a
                ``validation_fraction`` share of ``train_lists``, held out at random).
            seed: Overrides ``settings.seed``.

        Returns:
            ``self``.

        Raises:
            InputDataError: unlabelled or empty lists, or too few lists to hold some out.
        """
        s = self.settings
        seed = s.seed if seed is None else seed
        train, val = split_lists(train_lists, validation_lists, s.validation_fraction, seed=seed)
        featurizer = AnswerFeaturizer(self.encoder, list_context=s.list_context).fit(train)
        train_x, val_x = featurizer.transform(train), featurizer.transform(val)
        self.fit_features(train_x, val_x, seed=seed)
        self._featurizer = featurizer
        return self

    def fit_features(
        self,
        train: LabelledAnswers,
        validation: LabelledAnswers,
        *,
        scorer: Scorer | None = None,
        seed: int | None = None,
    ) -> MultiTaskRanker:
        """The multi-task training loop on precomputed answer features.

        One net per ranking weight lambda of ``settings.ranking_weights`` is fitted by SVI
        with early stopping on the validation answers; lambda, the P(keep) threshold and the
        keep-top rule are chosen together by ``scorer`` (default: the accuracy of the
        kept/dropped labels and MEDIQA's MRR), ties by its second value.

        Args:
            train: Training answers: ``features`` `n x d` float64, ``labels`` `n`,
                ``groups`` (each list's row indices) and ``grades`` `n` (e.g.
                :class:`~probrank.models.multitask.features.AnswerFeatures` or the MEDIQA
                protocol's :class:`~probrank.models.multitask.mediqa_features.FeatureSet`).
            validation: Validation answers, the same fields.
            scorer: ``(scores, labels) -> (accuracy, MRR)`` of the validation answers (each
                `n_val`), compared as a tuple.
            seed: Overrides ``settings.seed``.

        Returns:
            ``self`` (predict with :meth:`predict_features`; :meth:`predict` and
            :meth:`save` need a fit on lists).
        """
        s = self.settings
        seed = s.seed if seed is None else seed

        def default_scorer(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
            return _accuracy_mrr(validation, scores, labels)

        chosen = select_multitask(
            lambda weight: self._new_net(train.features.shape[1], weight, seed),
            _as_data(train),
            _as_data(validation),
            validation.groups,
            scorer or default_scorer,
            ranking_weights=s.ranking_weights,
            thresholds=s.thresholds,
            keep_top=s.keep_top,
            lr=s.lr,
            weight_decay=s.weight_decay,
            max_epochs=s.max_epochs,
            patience=s.patience,
            num_samples=s.posterior_samples,
            seed=seed,
            progress=s.progress,
        )
        choice = {
            "ranking_weight": chosen.ranking_weight,
            "threshold": chosen.threshold,
            "keep_top": chosen.keep_top,
            "validation_accuracy": chosen.validation_accuracy,
            "validation_mrr": chosen.validation_mrr,
            "best_epoch": chosen.best_epoch,
        }
        self._featurizer, self._choice, self._net = None, {**choice, "seed": seed}, chosen.net
        self._chosen = chosen
        return self

    def predict_features(
        self, features: Tensor, groups: Sequence[Sequence[int]], *, seed: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, labels, P(keep))`` of `n` answers given by their features (each `n`):
        posterior mean utility, kept (1) / dropped (0) by the chosen threshold and keep-top
        rule, posterior mean P(keep).

        Args:
            features: `n x d` float64 features (as :meth:`fit_features` took them).
            groups: Each list's row indices.
            seed: Seeds the draws (default: the fit's seed).
        """
        if self._chosen is None:
            raise InputDataError("MultiTaskRanker is not fitted: call fit or fit_features first")
        seed = int(self._choice["seed"]) if seed is None else seed
        return self._chosen.predict(
            features, groups, num_samples=self.settings.posterior_samples, seed=seed
        )

    def predictive_features(
        self, features: Tensor, *, seed: int | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Posterior predictive of `n` answers given by their features (as :meth:`predict`
        gives it for lists).

        Args:
            features: `n x d` float64 features (as :meth:`fit_features` took them).
            seed: Seeds the draws (default: the fit's seed).

        Returns:
            ``(probability, utility_mean, utility_sd)``, each `n` float64: posterior mean
            P(keep), posterior mean and standard deviation of the utility (zeros for the
            deterministic twin).
        """
        if self._chosen is None:
            raise InputDataError("MultiTaskRanker is not fitted: call fit or fit_features first")
        seed = int(self._choice["seed"]) if seed is None else seed
        return predict_multitask(
            self._chosen.net, features, num_samples=self.settings.posterior_samples, seed=seed
        )

    def _new_net(self, in_features: int, ranking_weight: float, seed: int) -> MultiTaskNet:
        s = self.settings
        return MultiTaskNet(
            in_features,
            hidden=s.hidden,
            bayesian=s.bayesian,
            ranking_weight=ranking_weight,
            dropout=s.dropout,
            skip=s.skip,
            prior_scale=s.prior_scale,
            seed=seed,
        ).double()

    # -- use ------------------------------------------------------------------------------

    @property
    def choice(self) -> dict[str, Any]:
        """Chosen lambda, threshold and keep-top rule, with their validation scores."""
        if self._net is None:
            raise InputDataError("MultiTaskRanker is not fitted: call fit or fit_features first")
        return dict(self._choice)

    def _require_fitted(self) -> tuple[AnswerFeaturizer, MultiTaskNet]:
        if self._net is None or self._featurizer is None:
            raise InputDataError(
                "MultiTaskRanker is not fitted: call fit(train_lists) or load() first"
            )
        return self._featurizer, self._net

    def features(self, lists: Sequence[CandidateList]) -> Tensor:
        """`n x d` standardised float64 features of all answers of ``lists``, list by list."""
        featurizer, _ = self._require_fitted()
        check_lists(lists, labelled=False)
        return featurizer.transform(lists).features

    def predict(
        self, lists: Sequence[CandidateList], *, seed: int | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Posterior predictive of every answer of ``lists`` (list by list).

        Args:
            lists: Candidate lists (labels not needed); not modified.
            seed: Seeds the draws (default: the fit's seed).

        Returns:
            ``(probability, utility_mean, utility_sd)``, each `n` float64: posterior mean
            P(keep), posterior mean and standard deviation of the utility.
        """
        _, net = self._require_fitted()
        x = self.features(lists)
        seed = int(self._choice["seed"]) if seed is None else seed
        return predict_multitask(net, x, num_samples=self.settings.posterior_samples, seed=seed)

    def filter_and_rank(
        self, lists: Sequence[CandidateList], *, seed: int | None = None
    ) -> list[RankedAnswers]:
        """Every list's answers ranked by posterior mean utility, with P(keep) and the kept set.

        Args:
            lists: Candidate lists; not modified.
            seed: Seeds the draws (default: the fit's seed).

        Returns:
            One :class:`RankedAnswers` per list, in input order.
        """
        probs, mean, sd = self.predict(lists, seed=seed)
        groups, start = [], 0
        for item in lists:
            groups.append(list(range(start, start + len(item))))
            start += len(item)
        p, scores = probs.numpy(), mean.numpy()
        labels = keep_labels(
            groups, scores, p, float(self._choice["threshold"]), bool(self._choice["keep_top"])
        )
        out = []
        for item, group in zip(lists, groups, strict=True):
            order = sorted(group, key=lambda i: (-scores[i], i))
            out.append(
                RankedAnswers(
                    qid=item.qid,
                    candidate_ids=tuple(item.candidate_ids[i - group[0]] for i in order),
                    probabilities=tuple(float(p[i]) for i in order),
                    utility_mean=tuple(float(scores[i]) for i in order),
                    utility_sd=tuple(float(sd[i]) for i in order),
                    keep=tuple(bool(labels[i]) for i in order),
                )
            )
        return out

    def posterior(self, lists: Sequence[CandidateList]) -> GPyTorchPosterior:
        """Joint posterior of the utilities of all answers of ``lists`` (list by list).

        Exact for the mean-field output layer (see the module docstring); a near point mass
        (variance :data:`~probrank.nn.heads.POINT_MASS_VARIANCE`) for the deterministic twin.

        Returns:
            A BoTorch ``GPyTorchPosterior`` over `n` utilities (float64; ``mean`` `n x 1`).
        """
        return GPyTorchPosterior(self._utility_posterior(self.features(lists)))

    def _utility_posterior(self, x: Tensor) -> MultivariateNormal:
        """MVN over the utilities of `batch_shape x q x d` standardised features (float64)."""
        _, net = self._require_fitted()
        with torch.no_grad():
            h = net.features_to_hidden(x.double())
            out = net.output
            if out is None:
                mean = torch.nn.functional.linear(h, net.out_weight, net.out_bias).squeeze(-1)
                diagonal = torch.full_like(mean, POINT_MASS_VARIANCE)
                return MultivariateNormal(mean, DiagLinearOperator(diagonal))
            w_loc, w_scale = cast(Tensor, out.weight_loc), cast(Tensor, out.weight_scale)
            b_loc, b_scale = cast(Tensor, out.bias_loc), cast(Tensor, out.bias_scale)
            mean = (h @ w_loc.transpose(-1, -2) + b_loc).squeeze(-1)
            root = torch.cat([h * w_scale.squeeze(0), b_scale.expand(*h.shape[:-1], 1)], dim=-1)
        return low_rank_mvn(mean, root)

    def botorch_model(self) -> Any:
        """A BoTorch ``Model`` over answers given by their standardised features.

        ``model.posterior(X)`` for ``X`` `batch_shape x q x d` (rows of :meth:`features`) is
        the exact joint posterior of the `q` utilities (float64).
        """
        from probrank.posteriors.model import UtilityModel

        self._require_fitted()
        return UtilityModel(self._utility_posterior)

    def to_inference_data(self, *, num_samples: int = 1000, seed: int | None = None) -> Any:
        """ArviZ data: draws of the Bayesian output layer's ``weight`` and ``bias`` from its
        fitted guide (one chain; dims ``output``, ``feature``).

        Raises:
            InputDataError: unfitted, or the deterministic twin (no posterior to draw from).
        """
        from probrank.diagnostics import to_inference_data

        _, net = self._require_fitted()
        if net.output is None:
            raise InputDataError("the deterministic twin (bayesian=False) has no weight posterior")
        seed = int(self._choice["seed"]) if seed is None else seed
        return to_inference_data(net.output, num_samples=num_samples, seed=seed)

    # -- persistence ----------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Any:
        """Save to a folder (manifest + safetensors; see :mod:`probrank.models._persist`)."""
        featurizer, net = self._require_fitted()
        if featurizer.mean is None or featurizer.std is None:
            raise InputDataError("MultiTaskRanker is not fitted")
        return _persist.save_model(
            path,
            model_class=type(self).__name__,
            settings=settings_to_json(self.settings),
            tensors={
                "network": net.state_dict(),
                "scaler": {"mean": featurizer.mean, "std": featurizer.std},
            },
            state={"choice": self._choice, "in_features": int(featurizer.mean.shape[0])},
            encoder=_encoder.encoder_spec(self.encoder),
        )

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], encoder: TransformerEncoder | None = None
    ) -> MultiTaskRanker:
        """A model saved by :meth:`save`; its predictions equal the saved model's.

        Args:
            path: The folder.
            encoder: The encoder it was fitted with (checked against the manifest); None:
                rebuilt from the manifest (its folder, or the packaged default model).

        Raises:
            InputDataError: see :func:`probrank.models._persist.load_model`, or an encoder
                other than the one the model was fitted with.
        """
        manifest, tensors = _persist.load_model(path, cls.__name__)
        settings = manifest.read_settings(lambda data: settings_from_json(MultiTaskSettings, data))
        if encoder is None:
            encoder = _encoder.encoder_for_load(manifest.encoder)
        else:
            _encoder.check_encoder(manifest.encoder or {}, encoder)
        model = cls(settings, encoder)
        choice = dict(manifest.state.get("choice", {}))
        try:
            featurizer = AnswerFeaturizer(encoder, list_context=settings.list_context)
            featurizer.mean = tensors["scaler"]["mean"]
            featurizer.std = tensors["scaler"]["std"]
            net = model._new_net(
                int(manifest.state["in_features"]),
                float(choice["ranking_weight"]),
                int(choice["seed"]),
            )
            net.load_state_dict(tensors["network"])
        except (KeyError, RuntimeError) as exc:
            raise InputDataError(f"damaged saved model ({exc})", path=path) from None
        model._featurizer, model._net, model._choice = featurizer, net, choice
        model._chosen = MultiTaskChoice(
            net,
            float(choice["ranking_weight"]),
            float(choice["threshold"]),
            bool(choice["keep_top"]),
            float(choice.get("validation_accuracy", float("nan"))),
            float(choice.get("validation_mrr", float("nan"))),
            int(choice.get("best_epoch", 0)),
        )
        return model

    def __repr__(self) -> str:
        state = "fitted" if self._net is not None else "unfitted"
        return f"MultiTaskRanker({state}, bayesian={self.settings.bayesian})"


def _as_data(data: LabelledAnswers) -> MultiTaskData:
    if data.labels is None:
        raise InputDataError("training and validation lists need labels")
    return MultiTaskData(
        data.features, data.labels, MultiTaskData.pairs_from_grades(data.groups, data.grades)
    )
