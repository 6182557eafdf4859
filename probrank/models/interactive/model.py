"""The interactive Bayesian ranker as a library object: sessions over your own candidates.

:class:`InteractiveRanker` holds a warm-started Siamese utility network (optional:
:meth:`~InteractiveRanker.fit` on graded candidate lists) and builds, for one question and its
candidates, a posterior over the candidates' utilities (MC dropout, SWAG, last-layer Laplace,
deep ensemble or GPPL; :class:`~probrank.models.interactive.settings.PosteriorKind`) and an
:class:`~probrank.interactive.session.InteractiveSession` that asks a user which of two
candidates is better (``next_pair``), learns from the answer (``record``), and ranks
(``ranking``) with the posterior (``posterior``). The ``probrank interactive`` command (human
and simulated sessions) and the ``interactive`` experiments use exactly these sessions.

Features are the frozen encoder's pair features ``(u, v, u*v, |u-v|)`` of (question,
candidate) (default encoder: the packaged all-MiniLM-L6-v2); a caller with features already
encoded passes them as ``features=`` and the encoder is not used.

:meth:`~InteractiveRanker.posterior` is the fresh posterior over a question's candidates as a
BoTorch ``GPyTorchPosterior`` (float64), :meth:`~InteractiveRanker.botorch_model` the same as a
BoTorch ``Model`` over the candidates' features that conditions on judgements
(``condition_on_observations``, ``fantasize``; see :mod:`probrank.posteriors`).
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from probrank.acquisition.select import PairStrategy, Strategy
from probrank.data.candidates import CandidateList, split_lists
from probrank.encoders.transformer import TransformerEncoder
from probrank.exceptions import InputDataError
from probrank.interactive.log import SessionLog
from probrank.interactive.session import InteractiveSession
from probrank.models import _encoder, _persist
from probrank.models.interactive.builders import build_posterior
from probrank.models.interactive.settings import InteractiveRankerSettings, PosteriorKind
from probrank.models.interactive.warmstart import (
    WarmStart,
    train_warm_start,
    warm_start_from_payload,
    warm_start_payload,
)
from probrank.posteriors.neural import CandidateSetPosterior
from probrank.posteriors.preference import PreferenceUtilityModel, cast_mvn

__all__ = ["InteractiveRanker"]


class InteractiveRanker:
    """Interactive answer selection with a Bayesian utility model over a question's candidates.

    Args:
        settings: :class:`~probrank.models.interactive.settings.InteractiveRankerSettings`
            (default: the model card's, last-layer Laplace with EI pair selection).
        encoder: A frozen :class:`~probrank.encoders.TransformerEncoder`; None: the packaged
            all-MiniLM-L6-v2 (bi-encoder, mean pooling), built on first use.

    Example::

        ranker = InteractiveRanker().fit(graded_lists)          # the warm start
        session = ranker.session(question, answers, seed=0, log_path="q1.jsonl")
        a, b = session.next_pair()                               # ask the user
        session.record(winner=a, loser=b)
        session.ranking()                                        # best first
        ranker.save("ranker"); InteractiveRanker.load("ranker")
    """

    def __init__(
        self,
        settings: InteractiveRankerSettings | None = None,
        encoder: TransformerEncoder | None = None,
    ) -> None:
        if settings is not None and not isinstance(settings, InteractiveRankerSettings):
            raise InputDataError(
                f"settings must be InteractiveRankerSettings, got {type(settings)!r}"
            )
        self.settings = settings or InteractiveRankerSettings()
        self._encoder = encoder
        self._warm: WarmStart | None = None

    @classmethod
    def from_warm_start(
        cls,
        warm: WarmStart | None,
        settings: InteractiveRankerSettings | None = None,
        encoder: TransformerEncoder | None = None,
    ) -> InteractiveRanker:
        """A ranker over networks trained elsewhere (e.g. a benchmark's random networks).

        Args:
            warm: The :class:`~probrank.models.interactive.warmstart.WarmStart` (used as it
                is, not copied: the posteriors copy the networks they use), or None.
            settings: The settings.
            encoder: The encoder the networks' features come from.
        """
        ranker = cls(settings, encoder)
        ranker._warm = warm
        return ranker

    @property
    def encoder(self) -> TransformerEncoder:
        """The encoder (the default one is built on first use)."""
        if self._encoder is None:
            self._encoder = _encoder.default_encoder()
        return self._encoder

    @property
    def warm_start(self) -> WarmStart | None:
        """The warm-start networks (None before :meth:`fit`)."""
        return self._warm

    @property
    def fitted(self) -> bool:
        """Whether the ranker has a warm start."""
        return self._warm is not None

    # -- the warm start -------------------------------------------------------------------

    def _encode_lists(self, lists: Sequence[CandidateList]) -> list[Tensor]:
        queries = [item.query for item in lists for _ in item.candidates]
        candidates = [c for item in lists for c in item.candidates]
        with torch.no_grad():
            features = self.encoder.encode_pairs(queries, candidates).float().cpu()
        blocks, start = [], 0
        for item in lists:
            blocks.append(features[start : start + len(item)].clone())
            start += len(item)
        return blocks

    def fit(
        self,
        lists: Sequence[CandidateList],
        validation_lists: Sequence[CandidateList] | None = None,
        *,
        seed: int | None = None,
    ) -> InteractiveRanker:
        """Warm-start the utility network on graded lists (early stopping on validation).

        Pairs are every ``(better, worse)`` pair of candidates of a list by ``grades`` (the
        labels when a list has no grades). SWAG is collected and the ensemble trained only
        for the posteriors that use them.

        Args:
            lists: Labelled (graded) candidate lists; not modified.
            validation_lists: Labelled lists for early stopping (default: a
                ``validation_fraction`` share of ``lists``, held out at random).
            seed: Overrides ``settings.seed``.

        Returns:
            ``self``.

        Raises:
            InputDataError: unlabelled or empty lists, too few lists to hold some out, or no
                graded pair in training or validation.
        """
        seed = self.settings.seed if seed is None else seed
        train, validation = split_lists(
            lists, validation_lists, self.settings.validation_fraction, seed=seed
        )
        return self.fit_features(
            self._encode_lists(train),
            [item.grades for item in train],
            self._encode_lists(validation),
            [item.grades for item in validation],
            seed=seed,
        )

    def fit_features(
        self,
        train_features: Sequence[Tensor],
        train_grades: Sequence[Sequence[float]],
        validation_features: Sequence[Tensor],
        validation_grades: Sequence[Sequence[float]],
        *,
        seed: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> InteractiveRanker:
        """:meth:`fit` on features already encoded (one block per question).

        Args:
            train_features: Per training question, `n_k x d` pair features.
            train_grades: Per training question, `n_k` grades.
            validation_features: Per validation question, `n_k x d` features.
            validation_grades: Per validation question, `n_k` grades.
            seed: Overrides ``settings.seed``.
            cache_dir: Reuse (and write) the on-disk warm-start cache in this folder
                (:mod:`probrank.models.interactive.warmstart_cache`); None: no cache.

        Returns:
            ``self``.
        """
        s = self.settings
        seed = s.seed if seed is None else seed
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputDataError(f"seed must be a non-negative integer, got {seed!r}")
        self._warm = train_warm_start(
            train_features,
            train_grades,
            validation_features,
            validation_grades,
            s.warm_start,
            seed=seed,
            swag=s.posterior is PosteriorKind.SWAG,
            ensemble=s.posterior is PosteriorKind.ENSEMBLE,
            cache_dir=None if cache_dir is None else Path(cache_dir),
        )
        return self

    # -- posteriors and sessions ----------------------------------------------------------

    def features(self, question: str, candidates: Sequence[str]) -> Tensor:
        """`n x d` float32 pair features of (``question``, each candidate) from the encoder."""
        _check_texts(question, candidates)
        with torch.no_grad():
            x = self.encoder.encode_pairs([question] * len(candidates), list(candidates))
        return x.float().cpu()

    def _candidate_features(
        self, question: str, candidates: Sequence[str], features: Tensor | None
    ) -> Tensor:
        if features is None:
            return self.features(question, candidates)
        _check_texts(question, candidates)
        if not isinstance(features, Tensor) or features.dim() != 2:
            raise InputDataError("features must be an n x d tensor")
        if features.shape[0] != len(candidates):
            raise InputDataError(
                f"{len(candidates)} candidates but {features.shape[0]} feature rows"
            )
        return features

    def preference_model(self, features: Tensor, *, seed: int = 0) -> CandidateSetPosterior:
        """A fresh posterior over candidates given by their `n x d` pair ``features``.

        The same features and seed always give the same prior (sessions replay their log on
        it). Most callers want :meth:`session` or :meth:`posterior` instead.

        Args:
            features: `n x d` pair features (``n >= 2``; not modified).
            seed: Seed of the posterior's randomness (dropout masks, SWAG draws, the update).

        Raises:
            InputDataError: no warm start where the posterior needs one, or features of a
                width other than the network's.
        """
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputDataError(f"seed must be a non-negative integer, got {seed!r}")
        s = self.settings
        warm = self._warm if s.needs_warm_start else None
        if s.needs_warm_start and warm is None:
            raise InputDataError(
                f"InteractiveRanker with posterior {s.posterior.value!r} is not fitted: call "
                "fit(lists) (the warm start) or load() first"
            )
        if warm is not None and features.shape[-1] != warm.net.in_features:
            raise InputDataError(
                f"features have width {features.shape[-1]}, the warm-start network "
                f"{warm.net.in_features} (another encoder?)"
            )
        return build_posterior(warm, features, s, seed)

    def session(
        self,
        question: str,
        candidates: Sequence[str],
        *,
        seed: int = 0,
        log_path: str | os.PathLike[str] | None = None,
        features: Tensor | None = None,
        strategy: str | Strategy | PairStrategy | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> InteractiveSession:
        """An interactive session over ``candidates`` of ``question``.

        Args:
            question: The question (query) text.
            candidates: `n >= 2` candidate texts; the session's indices point into it.
            seed: Seed of the posterior and of stochastic strategies (the log records it).
            log_path: Create a durable JSONL session log here (must not exist; see
                :class:`~probrank.interactive.session.InteractiveSession`); :meth:`resume`
                continues it.
            features: `n x d` pair features already encoded (skips the encoder).
            strategy: Overrides ``settings.strategy`` (a name or a pair-strategy callable).
            metadata: More JSON facts for the log header (they override the ranker's own:
                ``model``, ``posterior``, ``query``).

        Returns:
            The :class:`~probrank.interactive.session.InteractiveSession` (a context manager
            that closes its log).
        """
        x = self._candidate_features(question, candidates, features)
        facts: dict[str, Any] = {
            "model": type(self).__name__,
            "posterior": self.settings.posterior.value,
            "query": question,
        }
        facts.update(metadata or {})
        return InteractiveSession(
            self.preference_model(x, seed=seed),
            strategy=self.settings.strategy if strategy is None else strategy,
            seed=seed,
            log_path=log_path,
            metadata=facts,
        )

    def resume(
        self,
        log_path: str | os.PathLike[str],
        question: str,
        candidates: Sequence[str],
        *,
        features: Tensor | None = None,
        strategy: PairStrategy | None = None,
    ) -> InteractiveSession:
        """Continue the session logged at ``log_path`` (same state, same next pair).

        The seed is the log's; the question and candidates must be the session's (the
        posterior's prior is checked against the log's fingerprint).

        Args:
            log_path: The session's log (locked while the session is open).
            question: The session's question text.
            candidates: Its candidates, in the same order.
            features: Their pair features, when already encoded.
            strategy: Only for a session that used a custom (unnamed) strategy.

        Raises:
            InputDataError: a malformed log or one in use, a log of another posterior, or
                candidates whose prior differs from the logged one.
        """
        probe = SessionLog.reopen(log_path)  # locks and reads it (a torn line is cut off once)
        probe.close()
        header = probe.contents.header
        seed = header.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputDataError(f"bad seed {seed!r} in header", path=log_path, line=1)
        logged = (header.get("metadata") or {}).get("posterior")
        if logged is not None and logged != self.settings.posterior.value:
            raise InputDataError(
                f"the session used the {logged!r} posterior, this ranker's is "
                f"{self.settings.posterior.value!r}",
                path=log_path,
            )
        x = self._candidate_features(question, candidates, features)
        return InteractiveSession.resume(
            log_path, lambda: self.preference_model(x, seed=seed), strategy=strategy
        )

    def posterior(
        self,
        question: str,
        candidates: Sequence[str],
        *,
        seed: int = 0,
        features: Tensor | None = None,
    ) -> GPyTorchPosterior:
        """The posterior over the candidates' utilities before any judgement.

        Returns:
            A BoTorch ``GPyTorchPosterior`` over the `n` candidates, float64 (``mean``
            `n x 1`); a session's current one is ``session.posterior()``.
        """
        x = self._candidate_features(question, candidates, features)
        return GPyTorchPosterior(cast_mvn(self.preference_model(x, seed=seed).posterior(),
                                          torch.float64))  # fmt: skip

    def botorch_model(
        self,
        question: str,
        candidates: Sequence[str],
        *,
        seed: int = 0,
        features: Tensor | None = None,
        noise_variance: float = 0.0,
    ) -> PreferenceUtilityModel:
        """A BoTorch ``Model`` over the candidates (before any judgement).

        ``model.posterior(X)`` for ``X`` `batch_shape x q x d` (rows of ``model.datapoints``,
        the candidates' features in float64, or new feature rows) is the joint posterior of
        the `q` utilities in ``X``'s dtype; ``condition_on_observations`` / ``fantasize``
        condition copies on judgements (:mod:`probrank.posteriors.preference`).

        Args:
            question: The question text.
            candidates: The candidate texts.
            seed: Seed of the posterior's randomness.
            features: Their pair features, when already encoded.
            noise_variance: Judgement noise added when BoTorch asks for observation noise.
        """
        x = self._candidate_features(question, candidates, features)
        return self.preference_model(x, seed=seed).botorch_model(noise_variance=noise_variance)

    def to_inference_data(
        self,
        question: str | None = None,
        candidates: Sequence[str] | None = None,
        *,
        session: InteractiveSession | None = None,
        features: Tensor | None = None,
        seed: int = 0,
        num_samples: int = 1000,
        draw_seed: int = 0,
    ) -> Any:
        """ArviZ data of the candidates' utilities (draws from the Gaussian posterior).

        Args:
            question: The question text (with ``candidates``): the prior posterior.
            candidates: Its candidate texts.
            session: Instead of a question: a session's current posterior.
            features: The candidates' pair features, when already encoded.
            seed: The posterior's seed (with ``question``).
            num_samples: Draws (one chain).
            draw_seed: Seeds the draws.

        Returns:
            ``InferenceData`` / ``DataTree`` with variable ``utility``, dims ``candidate``
            (coordinates: candidate indices).

        Raises:
            InputDataError: neither or both of a question and a session.
        """
        from probrank.diagnostics import to_inference_data

        if (session is None) == (question is None or candidates is None):
            raise InputDataError("pass a question and its candidates, or a session")
        if session is not None:
            mvn: MultivariateNormal = session.posterior()
        else:
            x = self._candidate_features(str(question), list(candidates or ()), features)
            mvn = self.preference_model(x, seed=seed).posterior()
        mvn = cast_mvn(mvn, torch.float64)
        return to_inference_data(
            (mvn.mean.detach(), mvn.covariance_matrix.detach()),
            num_samples=num_samples,
            seed=draw_seed,
            var_name="utility",
            dims={"utility": ["candidate"]},
            coords={"candidate": list(range(int(mvn.mean.shape[-1])))},
        )

    # -- persistence ----------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Any:
        """Save to a folder (manifest + safetensors; see :mod:`probrank.models._persist`).

        The settings, the warm-start networks (every ensemble member and the SWAG Gaussian
        when trained) and the encoder's description (when one was given or built) are saved;
        a ranker without a warm start (GPPL with the cosine prior) saves its settings only.
        """
        tensors: dict[str, dict[str, Tensor]] = {}
        state: dict[str, Any] = {"fitted": self._warm is not None}
        if self._warm is not None:
            payload = warm_start_payload(self._warm)
            tensors["members"] = {
                f"{k}.{name}": t for k, member in enumerate(payload["members"])
                for name, t in member.items()
            }  # fmt: skip
            accuracy = float(payload["validation_accuracy"])
            state.update(
                width=int(self._warm.net.in_features),
                num_members=len(payload["members"]),
                validation_accuracy=None if math.isnan(accuracy) else accuracy,
                epochs=int(payload["epochs"]),
                swag=None,
            )
            if "swag" in payload:
                swag = payload["swag"]
                tensors["swag"] = {k: swag[k] for k in ("mean", "variance", "deviations")}
                state["swag"] = {"num_snapshots": swag["num_snapshots"], "scale": swag["scale"]}
        return _persist.save_model(
            path,
            model_class=type(self).__name__,
            settings=self.settings.to_json(),
            tensors=tensors,
            state=state,
            encoder=None if self._encoder is None else _encoder.encoder_spec(self._encoder),
        )

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], encoder: TransformerEncoder | None = None
    ) -> InteractiveRanker:
        """A ranker saved by :meth:`save`; its posteriors equal the saved ranker's.

        Args:
            path: The folder.
            encoder: The encoder it was fitted with (checked against the manifest); None:
                rebuilt from the manifest (its folder, or the packaged default model), or the
                default encoder when the manifest records none.

        Raises:
            InputDataError: see :func:`probrank.models._persist.load_model`, or an encoder
                other than the one the ranker was fitted with.
        """
        manifest, tensors = _persist.load_model(path, cls.__name__)
        settings = manifest.read_settings(InteractiveRankerSettings.from_json)
        if manifest.encoder is not None:
            if encoder is None:
                encoder = _encoder.encoder_for_load(manifest.encoder)
            else:
                _encoder.check_encoder(manifest.encoder, encoder)
        ranker = cls(settings, encoder)
        state = manifest.state
        if not state.get("fitted"):
            return ranker
        try:
            width, count = int(state["width"]), int(state["num_members"])
            members: list[dict[str, Tensor]] = [{} for _ in range(count)]
            for name, tensor in tensors["members"].items():
                index, _, key = name.partition(".")
                members[int(index)][key] = tensor
            accuracy = state.get("validation_accuracy")
            payload: dict[str, Any] = {
                "members": members,
                "validation_accuracy": math.nan if accuracy is None else float(accuracy),
                "epochs": int(state["epochs"]),
            }
            if state.get("swag") is not None:
                payload["swag"] = {**tensors["swag"], **state["swag"]}
            ranker._warm = warm_start_from_payload(payload, width, settings.warm_start)
        except (KeyError, IndexError, RuntimeError, TypeError, ValueError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputDataError(f"damaged saved model ({reason[:200]})", path=path) from None
        return ranker

    def __repr__(self) -> str:
        state = "fitted" if self._warm is not None else "unfitted"
        s = self.settings
        return (
            f"InteractiveRanker({state}, posterior={s.posterior.value}, "
            f"strategy={s.strategy.value})"
        )


def _check_texts(question: object, candidates: object) -> None:
    if not isinstance(question, str):
        raise InputDataError(f"the question must be a string, got {question!r}")
    if isinstance(candidates, str) or not isinstance(candidates, Sequence):
        raise InputDataError("candidates must be a sequence of strings")
    if len(candidates) < 2:
        raise InputDataError(f"a session needs at least 2 candidates, got {len(candidates)}")
    for index, text in enumerate(candidates):
        if not isinstance(text, str):
            raise InputDataError(f"candidate {index} must be a string, got {text!r}")
