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

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
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
from probrank.encoders.hidden_states import HiddenStateEncoder
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.models import _encoder, _persist
from probrank.models._settings import (
    settings_from_json,
    settings_to_json,
)
from probrank.models.gpf_ranker import fine_tuning, top_layers
from probrank.models.gpf_ranker.fine_tuning import PairSplit
from probrank.models.gpf_ranker.fitting import FittedHead, fit_standardised
from probrank.models.gpf_ranker.selection import Family, RegimeFit
from probrank.models.gpf_ranker.settings import (
    FineTuneSettings,
    GPFRankerSettings,
    TopLayersSettings,
)
from probrank.models.gpf_ranker.top_layers import TopLayerSplit
from probrank.nn.heads import RelevanceHead, build_head
from probrank.posteriors.preference import PreferenceUtilityModel
from probrank.retrieval.risk import RankingCriterion, criterion_scores

__all__ = [
    "GPFRanker",
    "GPFRankerSettings",
    "RankingCriterion",
    "RelevancePredictions",
    "RerankCriterion",
]

RerankCriterion = RankingCriterion
"""The score :meth:`GPFRanker.rerank` orders candidates by: the package's one criterion enum,
:class:`probrank.retrieval.risk.RankingCriterion` (this name is kept for old code)."""


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
        family = Family.TEMPERATURE if s.temperature else Family.PLAIN
        mean, std, fitted = fit_standardised(
            s, (x_train, y_train), (x_val, y_val), seed=seed, families=[family]
        )
        self._adopt(mean, std, fitted[family], seed, names)
        return self

    def fit_features(
        self,
        train: tuple[Tensor, Tensor],
        validation: tuple[Tensor, Tensor],
        *,
        families: Sequence[Family] = (Family.PLAIN, Family.TEMPERATURE),
        seed: int | None = None,
    ) -> dict[Family, GPFRanker]:
        """Validation-selection fit on precomputed pair features (the frozen-encoder regime).

        The head grid (``gammas`` for GPF) is trained once to the largest of ``epochs``;
        per calibration family the checkpoint and calibration with the lowest validation NLL
        are chosen (:mod:`probrank.models.gpf_ranker.fitting`). ``self`` adopts the family of
        ``settings.temperature`` when it is among ``families``, else the first.

        Args:
            train: `n x d` raw pair features and `n` 0/1 labels (float32).
            validation: `n_val x d` raw features and `n_val` 0/1 labels.
            families: Calibration families to select, each from the same checkpoints.
            seed: Overrides ``settings.seed``.

        Returns:
            ``{family: fitted GPFRanker}`` (``self`` is one of them); predict with
            :meth:`predict_features`.
        """
        s = self.settings
        seed = s.seed if seed is None else seed
        mean, std, fitted = fit_standardised(s, train, validation, seed=seed, families=families)
        own = Family.TEMPERATURE if s.temperature else Family.PLAIN
        own = own if own in fitted else next(iter(fitted))
        out: dict[Family, GPFRanker] = {}
        for family, chosen in fitted.items():
            model = self if family is own else GPFRanker(s, self._encoder)
            model._adopt(mean, std, chosen, seed, ())
            out[family] = model
        return out

    def fit_fine_tuned(
        self,
        train: Sequence[CandidateList] | PairSplit,
        validation: Sequence[CandidateList] | PairSplit,
        evaluation: Mapping[str, Sequence[CandidateList] | PairSplit] | None = None,
        *,
        training: FineTuneSettings | None = None,
        encoder: Callable[[], TransformerEncoder] | None = None,
        families: Sequence[Family] = (Family.PLAIN, Family.TEMPERATURE),
        seed: int | None = None,
        show_progress: bool = False,
    ) -> RegimeFit:
        """Validation-selection fit with the encoder fine-tuned end to end (GPF-BERT's regime).

        Per training setting of the head (each of ``settings.gammas`` for GPF), a fresh
        encoder (after ``torch.manual_seed(seed)``) and head are trained with AdamW; after each
        epoch of ``training.epochs`` the GP heads' Laplace pass runs and the validation and
        evaluation sets are scored. Per calibration family the checkpoint (epochs, ``gamma``)
        and calibration (``lambda``, ``T``) with the lowest validation NLL are chosen; the
        evaluation sets are only scored there (one (head, seed) run of ``gpf_finetune``). The
        fine-tuned encoder is not kept and ``self`` is not changed.

        Args:
            train: Labelled training lists (`n` pairs), or their
                :class:`~probrank.models.gpf_ranker.fine_tuning.PairSplit`.
            validation: Labelled validation lists (`n_val` pairs) for the selection.
            evaluation: ``{name: labelled lists}`` scored at the chosen checkpoint (e.g. the
                test set and shifted test sets); names other than ``"validation"``.
            training: :class:`FineTuneSettings` (``settings.epochs``, ``lr`` and
                ``batch_size`` are the frozen regime's and are not read).
            encoder: Builds a fresh ``freeze=False`` encoder, once per training setting
                (default: :func:`~probrank.models.gpf_ranker.fine_tuning.fine_tune_encoder`).
            families: Calibration families to select, each from the same checkpoints.
            seed: Overrides ``settings.seed`` (initialisation, random features, batch order).
            show_progress: Show the default encoder's progress bars.

        Returns:
            :class:`~probrank.models.gpf_ranker.selection.RegimeFit` with the row
            ``settings.head.value``: per family the selection and, per evaluation set, the
            `n` calibrated P(relevant) and logit variances (float64).

        Raises:
            InputDataError: a head other than deterministic, SNGP or GPF, or no families.
        """
        default = partial(fine_tuning.fine_tune_encoder, show_progress=show_progress)
        return fine_tuning.fit_fine_tuned(
            self.settings,
            training or FineTuneSettings(),
            train,
            validation,
            dict(evaluation or {}),
            new_encoder=encoder or default,
            families=families,
            seed=self.settings.seed if seed is None else seed,
        )

    def fit_top_layers(
        self,
        encoder: HiddenStateEncoder,
        train: Sequence[CandidateList] | TopLayerSplit,
        validation: Sequence[CandidateList] | TopLayerSplit,
        evaluation: Mapping[str, Sequence[CandidateList] | TopLayerSplit] | None = None,
        *,
        training: TopLayersSettings | None = None,
        rows: Sequence[str] | None = None,
        families: Sequence[Family] = (Family.PLAIN, Family.TEMPERATURE),
        seed: int | None = None,
        show_progress: bool = False,
    ) -> RegimeFit:
        """Validation-selection fit with the top encoder layers fine-tuned on cached states.

        ``encoder`` runs its frozen lower layers once per pair (cached on disk); per training
        setting of the head (each of ``settings.gammas`` for GPF) a fresh copy of its top
        layers and a head are trained with AdamW. After each epoch of ``training.epochs`` the
        GP heads' Laplace pass runs and every row's validation predictive and the state are
        kept; per row and family the checkpoint and calibration with the lowest validation NLL
        are chosen, and each chosen state is reloaded once to score the evaluation sets (one
        (row group, seed) unit of ``gpf_top_layers``).

        Args:
            encoder: The :class:`~probrank.encoders.hidden_states.HiddenStateEncoder` (its
                ``batch_size`` is also the scoring batch).
            train: Labelled training lists (`n` pairs), or their encoded
                :class:`~probrank.models.gpf_ranker.top_layers.TopLayerSplit` (encode once,
                with :meth:`TopLayerSplit.encode`, to share the states between fits).
            validation: Labelled validation lists (`n_val` pairs) or their split.
            evaluation: ``{name: labelled lists or split}`` scored at the chosen checkpoints.
            training: :class:`TopLayersSettings` (epochs, learning rates, batch size, weight
                decay, the layers' spectral bound, pooling, MC-dropout scope).
            rows: What the network is scored as: the head's own row (default), or for an
                MC-dropout head also ``"deterministic"`` (the same network without dropout).
            families: Calibration families to select, each from the same checkpoints.
            seed: Overrides ``settings.seed`` (initialisation, random features, batch order).
            show_progress: Show a progress bar while training.

        Returns:
            :class:`~probrank.models.gpf_ranker.selection.RegimeFit`: per row and family the
            selection and, per evaluation set, the `n` calibrated P(relevant) and logit
            variances (float64).

        Raises:
            InputDataError: the ensemble head, rows the head does not serve, or no families.
        """
        return top_layers.fit_top_layers(
            self.settings,
            training or TopLayersSettings(),
            encoder,
            train,
            validation,
            dict(evaluation or {}),
            rows=rows,
            families=families,
            seed=self.settings.seed if seed is None else seed,
            show_progress=show_progress,
        )

    def _adopt(
        self, mean: Tensor, std: Tensor, fitted: FittedHead, seed: int, names: tuple[str, ...]
    ) -> None:
        self._head = fitted.head
        self._mean, self._std = mean, std
        self._side_names = names
        self._options = dict(fitted.selection.checkpoint.options)
        self._selected = {k: float(v) for k, v in fitted.selected.items()}
        self._selected["seed"] = float(seed)

    def predict_features(self, x: Tensor) -> Tensor:
        """`n` calibrated P(relevant) of `n x d` raw pair features (as :meth:`fit_features`
        took them), float64."""
        head = self._require_fitted()
        if self._mean is None or self._std is None or x.shape[-1] != self._mean.shape[0]:
            raise InputDataError("the features do not match the fitted model's width")
        with torch.no_grad():
            return head.predict_proba((x - self._mean) / self._std).detach().double()

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

    def botorch_model(
        self,
        features: Tensor | None = None,
        *,
        scale: float = 1.0,
        noise_variance: float = 0.0,
        jitter: float = 0.0,
    ) -> PreferenceUtilityModel:
        """A BoTorch ``Model`` over candidates given by their standardised features.

        ``model.posterior(X)`` for ``X`` `batch_shape x q x d` (rows of :meth:`features`,
        float32 or float64) is the head's joint posterior of the `q` logits, in ``X``'s dtype.
        ``condition_on_observations(X, Y)`` (``Y``: `m x 2` integer ``(winner, loser)``
        judgements among the rows of ``X``, or `n' x 1` 0/1 relevance labels) and
        ``fantasize(X, PairwiseSobolQMCNormalSampler(...))`` update it in closed form, without
        refitting (:mod:`probrank.models.gpf_ranker.botorch`), so qKG and BO loops run on it.

        Args:
            features: `n x d` candidate rows kept as ``model.datapoints`` (default none).
            scale: Judgement likelihood scale (Bradley-Terry on the logits).
            noise_variance: Judgement noise added when BoTorch asks for observation noise.
            jitter: Added to the diagonal of returned covariances.
        """
        from probrank.models.gpf_ranker.botorch import head_model

        head = self._require_fitted()
        width = 0 if self._mean is None else int(self._mean.shape[0])
        return head_model(
            head, width, features, scale=scale, noise_variance=noise_variance, jitter=jitter
        )

    def rerank(
        self,
        run: Run,
        topics: Mapping[str, str] | str | os.PathLike[str],
        documents: Documents,
        *,
        depth: int | None = None,
        criterion: RankingCriterion | str | None = None,
        name: str | None = None,
    ) -> Run:
        """Rescore each topic's top ``depth`` documents of ``run`` by ``criterion``.

        Args:
            run: The run to rerank; not modified.
            topics: ``{query_id: text}`` or a TREC topics file.
            documents: ``{doc_id: text}`` or a function ``doc_id -> text``.
            depth: Documents per topic (default ``settings.depth``); the rest are dropped.
            criterion: :class:`~probrank.retrieval.risk.RankingCriterion` (default
                ``settings.criterion``; the draws of ``mean_sd`` and ``cvar`` are seeded by
                the fit's seed).
            name: The new run's name (default ``<run name>.gpf``).

        Returns:
            A run whose scores are the criterion (trec_eval order is its ranking).
        """
        self._require_fitted()
        s = self.settings
        chosen = RankingCriterion(criterion) if criterion is not None else s.criterion
        lists = CandidateList.from_trec(
            topics,
            run,
            documents,
            depth=s.depth if depth is None else depth,
            first_stage_features=self._side_names == FIRST_STAGE_FEATURES,
        )
        predictions = self.predict(lists)
        scores = criterion_scores(
            chosen,
            probability=predictions.probability,
            mean=predictions.mean,
            variance=predictions.variance,
            risk_aversion=s.risk_aversion,
            seed=int(self._selected.get("seed", s.seed)),
        )
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
        settings = manifest.read_settings(lambda data: settings_from_json(GPFRankerSettings, data))
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
