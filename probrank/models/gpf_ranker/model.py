"""The GPF ranker as a library object: calibrated P(relevant) with uncertainty, and reranking.

:class:`GPFRanker` encodes each (query, candidate) pair with a frozen encoder (default: the
packaged all-MiniLM-L6-v2, bi-encoder features ``(u, v, u*v, |u-v|)``), standardises the
features with the training means and standard deviations, and trains a relevance head (default
GPF: spectrally normalised hidden layer, random-Fourier-feature GP output layer with a Laplace
posterior, focal loss). As in the ``gpf_ranker`` protocol, the epochs, GPF's focal ``gamma``
and the calibration (the mean-field factor ``lambda`` and, by default, a temperature ``T``) are
chosen by validation NLL (:mod:`probrank.models.gpf_ranker.selection`); without validation
lists a share of the training lists is held out (``validation_fraction``, seeded).

:meth:`GPFRanker.posterior` returns the head's joint Gaussian over the candidates' logits
(divided by ``T``) as a BoTorch ``GPyTorchPosterior`` (float64): for the GP heads the low-rank
Laplace covariance ``Phi Sigma Phi^T`` (root ``Phi L^{-T}``, never the `n x n` matrix).
:meth:`GPFRanker.botorch_model` exposes it as a BoTorch ``Model`` over the standardised
features, so acquisition functions (``qExpectedImprovement``, ``PosteriorMean``, ...) run on it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from probrank.data.candidates import (
    FIRST_STAGE_FEATURES,
    CandidateList,
    Documents,
    check_lists,
    pair_texts,
    side_features,
    split_lists,
)
from probrank.data.trec import Run
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models import _encoder, _persist
from probrank.models._settings import (
    check_fraction,
    check_positive,
    check_positive_int,
    float_tuple,
    int_tuple,
    set_enum,
    settings_from_json,
    settings_to_json,
)
from probrank.models.gpf_ranker.selection import (
    GP_HEADS,
    Family,
    restore,
    select,
    train_checkpoints,
)
from probrank.nn.calibration import DEFAULT_MEAN_FIELD_FACTORS
from probrank.nn.heads import FitOptions, HeadKind, RelevanceHead, build_head
from probrank.nn.losses import check_focal_gamma

__all__ = ["GPFRanker", "GPFRankerSettings", "RelevancePredictions", "RerankCriterion"]


class RerankCriterion(str, Enum):
    """The score :meth:`GPFRanker.rerank` orders candidates by."""

    PROBABILITY = "probability"
    """The calibrated P(relevant)."""
    MEAN = "mean"
    """The posterior mean of the (temperature-scaled) logit."""
    LOWER = "lower"
    """Risk-averse: posterior mean minus ``risk_aversion`` posterior standard deviations."""


@dataclass(frozen=True)
class GPFRankerSettings:
    """Settings of :class:`GPFRanker` (the model card's values by default).

    Attributes:
        head: The head (:class:`~probrank.nn.heads.HeadKind`; ``"gpf"`` is the paper's).
        hidden: Hidden width.
        num_layers: Hidden layers.
        dropout: Dropout in training.
        num_features: Random Fourier features of the GP heads.
        spectral_bound: Bound on each hidden layer's spectral norm (GP heads).
        gammas: Focal-loss gammas of the GPF head, one chosen on validation (each ``>= 1``).
        epochs: Epoch counts checkpointed, one chosen on validation.
        batch_size: Pairs per step.
        lr: Adam learning rate.
        weight_decay: Adam weight decay (MLP heads).
        mean_field_factors: ``lambda`` values tried for the GP heads.
        temperature: Also fit a temperature on validation (the card's ``+T`` rows).
        validation_fraction: Share of the training lists held out when no validation lists
            are given.
        depth: Candidates per topic :meth:`GPFRanker.rerank` rescores.
        criterion: :class:`RerankCriterion` of :meth:`GPFRanker.rerank`.
        risk_aversion: Standard deviations subtracted by the ``lower`` criterion.
        seed: Seeds the split, initialisation, training and the random features.
    """

    head: HeadKind = HeadKind.GPF
    hidden: int = 256
    num_layers: int = 1
    dropout: float = 0.1
    num_features: int = 1024
    spectral_bound: float = 0.95
    gammas: tuple[float, ...] = (1.0, 2.0, 3.0)
    epochs: tuple[int, ...] = (5, 10, 20, 40)
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.0
    mean_field_factors: tuple[float, ...] = DEFAULT_MEAN_FIELD_FACTORS
    temperature: bool = True
    validation_fraction: float = 0.2
    depth: int = 100
    criterion: RerankCriterion = RerankCriterion.PROBABILITY
    risk_aversion: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        set_enum(self, "head", HeadKind)
        set_enum(self, "criterion", RerankCriterion)
        for name in ("hidden", "num_features", "batch_size", "depth"):
            check_positive_int(name, getattr(self, name))
        if isinstance(self.num_layers, bool) or not isinstance(self.num_layers, int):
            raise InputDataError(f"num_layers must be an integer, got {self.num_layers!r}")
        if self.num_layers < 0:
            raise InputDataError(f"num_layers must be >= 0, got {self.num_layers}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise InputDataError(f"dropout must lie in [0, 1), got {self.dropout!r}")
        check_positive("spectral_bound", self.spectral_bound)
        check_positive("lr", self.lr)
        if float(self.weight_decay) < 0 or float(self.risk_aversion) < 0:
            raise InputDataError("weight_decay and risk_aversion must be >= 0")
        gammas = tuple(check_focal_gamma(g) for g in float_tuple("gammas", self.gammas))
        factors = float_tuple("mean_field_factors", self.mean_field_factors)
        if any(f < 0 for f in factors):
            raise InputDataError(f"mean_field_factors must be >= 0, got {factors}")
        object.__setattr__(self, "gammas", gammas)
        object.__setattr__(self, "mean_field_factors", factors)
        object.__setattr__(self, "epochs", int_tuple("epochs", self.epochs))
        check_fraction("validation_fraction", self.validation_fraction)
        if not isinstance(self.temperature, bool):
            raise InputDataError(f"temperature must be true or false, got {self.temperature!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputDataError(f"seed must be an integer, got {self.seed!r}")

    def head_options(self) -> list[dict[str, Any]]:
        """Constructor options of the head, one dict per training setting (gamma grid)."""
        options: dict[str, Any] = {
            "hidden": self.hidden,
            "num_layers": self.num_layers,
            "dropout": self.dropout,
            "seed": self.seed,
        }
        if self.head.value in GP_HEADS:
            options.update(num_features=self.num_features, spectral_bound=self.spectral_bound)
        if self.head is HeadKind.GPF:
            return [{**options, "gamma": g} for g in self.gammas]
        return [options]


@dataclass(frozen=True)
class RelevancePredictions:
    """Predictions for every (query, candidate) pair of some lists, list by list.

    Attributes:
        qids: `n` query ids.
        candidate_ids: `n` candidate ids.
        probability: `n` calibrated P(relevant),
            ``sigmoid(m / (T sqrt(1 + lambda v)))``.
        mean: `n` posterior means of the logit divided by ``T``.
        variance: `n` posterior variances of that logit (``v / T^2``).
    """

    qids: tuple[str, ...]
    candidate_ids: tuple[str, ...]
    probability: Tensor
    mean: Tensor
    variance: Tensor

    def to_dataframe(self) -> Any:
        """A ``pandas.DataFrame``: ``qid, candidate_id, probability, mean, variance``."""
        import pandas as pd

        return pd.DataFrame(
            {
                "qid": list(self.qids),
                "candidate_id": list(self.candidate_ids),
                "probability": self.probability.double().numpy(),
                "mean": self.mean.double().numpy(),
                "variance": self.variance.double().numpy(),
            }
        )


class GPFRanker:
    """Calibrated relevance with a GP (or other) head on frozen encoder features.

    Args:
        settings: :class:`GPFRankerSettings` (default: the model card's).
        encoder: A frozen :class:`~probrank.encoders.TransformerEncoder`; None: the packaged
            all-MiniLM-L6-v2 (bi-encoder, mean pooling), built on first use.

    Example::

        ranker = GPFRanker().fit(train_lists)                 # lists with 0/1 labels
        predictions = ranker.predict(new_lists)                # P(relevant), variance
        reranked = ranker.rerank(run, topics, documents)       # a probrank.data.Run
    """

    def __init__(
        self, settings: GPFRankerSettings | None = None, encoder: TransformerEncoder | None = None
    ) -> None:
        if settings is not None and not isinstance(settings, GPFRankerSettings):
            raise InputDataError(f"settings must be GPFRankerSettings, got {type(settings)!r}")
        self.settings = settings or GPFRankerSettings()
        self._encoder = encoder
        self._head: RelevanceHead | None = None
        self._mean: Tensor | None = None
        self._std: Tensor | None = None
        self._options: dict[str, Any] = {}
        self._selected: dict[str, float] = {}
        self._side_names: tuple[str, ...] = ()

    @property
    def encoder(self) -> TransformerEncoder:
        """The encoder (the default one is built on first use)."""
        if self._encoder is None:
            self._encoder = _encoder.default_encoder()
        return self._encoder

    # -- fitting --------------------------------------------------------------------------

    def _encode(self, lists: Sequence[CandidateList]) -> Tensor:
        """Encoder features of every pair, followed by the lists' side features (if any)."""
        queries, candidates = pair_texts(lists)
        with torch.no_grad():
            x = self.encoder.encode_pairs(queries, candidates).float().cpu()
        rows, _ = side_features(lists)
        if rows:
            x = torch.cat([x, torch.tensor(rows, dtype=torch.float32)], dim=1)
        return x

    def fit(
        self,
        train_lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> GPFRanker:
        """Train the head and choose epochs, gamma and calibration by validation NLL.

        Args:
            train_lists: Lists with 0/1 labels; not modified.
            validation_lists: Labelled lists for the selection (default: a
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
        _, names = side_features([*train, *val])
        x_train, x_val = self._encode(train), self._encode(val)
        y_train = torch.tensor([y for item in train for y in item.labels], dtype=torch.float32)
        y_val = torch.tensor([y for item in val for y in item.labels], dtype=torch.float32)
        mean = x_train.mean(0)
        std = x_train.std(0).clamp_min(1e-6) if x_train.shape[0] > 1 else torch.ones_like(mean)
        x_train, x_val = (x_train - mean) / std, (x_val - mean) / std
        grid = [{**o, "seed": seed} for o in s.head_options()]
        fit_options = FitOptions(
            batch_size=s.batch_size, lr=s.lr, weight_decay=s.weight_decay, seed=seed
        )
        checkpoints = train_checkpoints(
            s.head.value, x_train.shape[1], grid, (x_train, y_train), x_val, s.epochs, fit_options
        )
        family = Family.TEMPERATURE if s.temperature else Family.PLAIN
        selection = select(s.head.value, checkpoints, y_val, family, s.mean_field_factors)
        self._head = restore(s.head.value, x_train.shape[1], selection)
        self._mean, self._std = mean, std
        self._side_names = names
        self._options = dict(selection.checkpoint.options)
        self._selected = {k: float(v) for k, v in selection.settings.items()}
        self._selected["seed"] = float(seed)
        return self

    # -- use ------------------------------------------------------------------------------

    @property
    def selected(self) -> dict[str, float]:
        """What validation chose: epochs, gamma (GPF), lambda (GP heads), T, the NLL."""
        self._require_fitted()
        return dict(self._selected)

    @property
    def side_features(self) -> tuple[str, ...]:
        """Names of the side features the model was fitted with (``()``: none)."""
        return self._side_names

    def _require_fitted(self) -> RelevanceHead:
        if self._head is None:
            raise InputDataError("GPFRanker is not fitted: call fit(train_lists) or load() first")
        return self._head

    def features(self, lists: Sequence[CandidateList]) -> Tensor:
        """`n x d` standardised features of all pairs of ``lists`` (the head's inputs and the
        ``X`` of :meth:`botorch_model`), list by list."""
        self._require_fitted()
        check_lists(lists, labelled=False)
        _, names = side_features(lists)
        if names != self._side_names:
            raise InputDataError(
                f"the model was fitted with side features {list(self._side_names)}, the lists "
                f"carry {list(names)}"
            )
        x = self._encode(lists)
        if self._mean is None or self._std is None or x.shape[1] != self._mean.shape[0]:
            raise InputDataError("the encoder's features do not match the fitted model's width")
        return (x - self._mean) / self._std

    def predict(self, lists: Sequence[CandidateList]) -> RelevancePredictions:
        """Calibrated P(relevant) and the posterior mean and variance of each pair's logit.

        Args:
            lists: Candidate lists (labels not needed); not modified.

        Returns:
            :class:`RelevancePredictions`, list by list.
        """
        head = self._require_fitted()
        x = self.features(lists)
        with torch.no_grad():
            probability = head.predict_proba(x)
            mvn = head.posterior(x)
            mean, variance = mvn.mean, mvn.variance
        return RelevancePredictions(
            qids=tuple(item.qid for item in lists for _ in item.candidates),
            candidate_ids=tuple(c for item in lists for c in item.candidate_ids),
            probability=probability.detach(),
            mean=mean.detach(),
            variance=variance.detach(),
        )

    def posterior(self, lists: Sequence[CandidateList]) -> GPyTorchPosterior:
        """Joint posterior of the logits (divided by ``T``) of all pairs of ``lists``.

        Returns:
            A BoTorch ``GPyTorchPosterior`` over `n` candidates, float64 (``mean`` `n x 1`).
        """
        head = self._require_fitted()
        return GPyTorchPosterior(_double(head.posterior(self.features(lists))))

    def botorch_model(self) -> Any:
        """A BoTorch ``Model`` over candidates given by their standardised features.

        ``model.posterior(X)`` for ``X`` `batch_shape x q x d` (rows of :meth:`features`,
        float32 or float64) is the head's joint posterior of the `q` logits, in ``X``'s dtype.
        """
        from probrank.posteriors.model import UtilityModel

        head = self._require_fitted()

        def posterior(x: Tensor) -> MultivariateNormal:
            mvn = head.posterior(x.float())
            return _double(mvn) if x.dtype == torch.float64 else mvn

        return UtilityModel(posterior)

    def rerank(
        self,
        run: Run,
        topics: Mapping[str, str] | str | os.PathLike[str],
        documents: Documents,
        *,
        depth: int | None = None,
        criterion: RerankCriterion | str | None = None,
        name: str | None = None,
    ) -> Run:
        """Rescore each topic's top ``depth`` documents of ``run`` by ``criterion``.

        Args:
            run: The run to rerank; not modified.
            topics: ``{query_id: text}`` or a TREC topics file.
            documents: ``{doc_id: text}`` or a function ``doc_id -> text``.
            depth: Documents per topic (default ``settings.depth``); the rest are dropped.
            criterion: :class:`RerankCriterion` (default ``settings.criterion``).
            name: The new run's name (default ``<run name>.gpf``).

        Returns:
            A run whose scores are the criterion (trec_eval order is its ranking).
        """
        self._require_fitted()
        s = self.settings
        chosen = RerankCriterion(criterion) if criterion is not None else s.criterion
        lists = CandidateList.from_trec(
            topics,
            run,
            documents,
            depth=s.depth if depth is None else depth,
            first_stage_features=self._side_names == FIRST_STAGE_FEATURES,
        )
        predictions = self.predict(lists)
        if chosen is RerankCriterion.PROBABILITY:
            scores = predictions.probability.double()
        elif chosen is RerankCriterion.MEAN:
            scores = predictions.mean.double()
        else:
            sd = predictions.variance.double().clamp_min(0.0).sqrt()
            scores = predictions.mean.double() - s.risk_aversion * sd
        out: dict[str, dict[str, float]] = {}
        for qid, cid, score in zip(
            predictions.qids, predictions.candidate_ids, scores.tolist(), strict=True
        ):
            out.setdefault(qid, {})[cid] = score
        label = name or f"{run.name}.gpf"
        return Run(out, name=label, tag=label)

    def to_inference_data(
        self,
        lists: Sequence[CandidateList] | None = None,
        *,
        num_samples: int = 1000,
        seed: int | None = None,
    ) -> Any:
        """ArviZ data of the posterior (one chain).

        Args:
            lists: None: draws of the GP output weights ``beta`` from their Laplace posterior
                (GP heads only; dims ``feature``); lists: draws of the pairs' logits from
                :meth:`posterior` (dims ``candidate``, coords ``"qid/candidate_id"``; this
                forms the `n x n` covariance, so keep `n` modest).
            num_samples: Draws.
            seed: Seeds the draws (default: the fit's seed).

        Raises:
            InputDataError: unfitted, or ``lists=None`` with a head without a weight posterior.
        """
        from probrank.diagnostics import to_inference_data

        head = self._require_fitted()
        seed = int(self._selected.get("seed", self.settings.seed)) if seed is None else seed
        if lists is None:
            gp = getattr(head, "gp", None)
            if gp is None:
                raise InputDataError(
                    f"the {self.settings.head.value} head has no weight posterior; pass lists "
                    "to get draws of their logits"
                )
            output = gp.output
            beta = output.beta.detach().double()
            covariance = output.covariance.double() / float(head.temperature) ** 2  # type: ignore[attr-defined]
            return to_inference_data(
                (beta / float(head.temperature), covariance),  # type: ignore[attr-defined]
                num_samples=num_samples,
                seed=seed,
                var_name="beta",
                dims={"beta": ["feature"]},
            )
        mvn = self.posterior(lists).distribution
        names = [f"{item.qid}/{c}" for item in lists for c in item.candidate_ids]
        return to_inference_data(
            (mvn.mean, mvn.covariance_matrix),
            num_samples=num_samples,
            seed=seed,
            var_name="logit",
            dims={"logit": ["candidate"]},
            coords={"candidate": names},
        )

    # -- persistence ----------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Any:
        """Save to a folder (manifest + safetensors; see :mod:`probrank.models._persist`)."""
        head = self._require_fitted()
        if self._mean is None or self._std is None:
            raise InputDataError("GPFRanker is not fitted")
        return _persist.save_model(
            path,
            model_class=type(self).__name__,
            settings=settings_to_json(self.settings),
            tensors={
                "head": head.state_dict(),  # type: ignore[attr-defined]
                "scaler": {"mean": self._mean, "std": self._std},
            },
            state={
                "head_options": self._options,
                "in_features": int(self._mean.shape[0]),
                "mean_field_factor": float(getattr(head, "mean_field_factor", math.pi / 8)),
                "temperature": float(head.temperature),  # type: ignore[attr-defined]
                "selected": self._selected,
                "side_features": list(self._side_names),
            },
            encoder=_encoder.encoder_spec(self.encoder),
        )

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], encoder: TransformerEncoder | None = None
    ) -> GPFRanker:
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
        settings = settings_from_json(GPFRankerSettings, manifest.settings)
        if encoder is None:
            encoder = _encoder.encoder_for_load(manifest.encoder)
        else:
            _encoder.check_encoder(manifest.encoder or {}, encoder)
        model = cls(settings, encoder)
        state = manifest.state
        try:
            head = build_head(
                settings.head.value, int(state["in_features"]), **dict(state["head_options"])
            )
            head.load_state_dict(tensors["head"])  # type: ignore[attr-defined]
            head.eval()  # type: ignore[attr-defined]
            if hasattr(head, "mean_field_factor"):
                head.mean_field_factor = float(state["mean_field_factor"])  # type: ignore[attr-defined]
            head.temperature = float(state["temperature"])  # type: ignore[attr-defined]
            model._mean, model._std = tensors["scaler"]["mean"], tensors["scaler"]["std"]
        except (KeyError, RuntimeError, TypeError) as exc:
            raise InputDataError(f"damaged saved model ({exc})", path=path) from None
        model._head = head
        model._options = dict(state["head_options"])
        model._selected = {k: float(v) for k, v in dict(state.get("selected", {})).items()}
        model._side_names = tuple(str(n) for n in state.get("side_features", []))
        return model

    def __repr__(self) -> str:
        state = "fitted" if self._head is not None else "unfitted"
        return f"GPFRanker({state}, head={self.settings.head.value})"


def _double(mvn: MultivariateNormal) -> MultivariateNormal:
    """The same Gaussian in float64 (BoTorch's default dtype); lazy covariances stay lazy."""
    return MultivariateNormal(mvn.mean.double(), mvn.lazy_covariance_matrix.double())
