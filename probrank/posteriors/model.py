"""A BoTorch ``Model`` over candidate utilities backed by any head's ``posterior(features)``.

:class:`UtilityModel` is the plain adapter of a posterior *function* (``features -> MVN``,
e.g. a relevance head of :mod:`probrank.nn.heads`): its ``posterior(X)`` keeps the head's lazy
covariance. ``condition_on_observations`` and ``fantasize`` hand over to the one candidate
posterior, :class:`~probrank.posteriors.head.HeadLaplacePosterior` (the head's posterior as a
prior, judgements and labels added in closed form), and return its BoTorch model.

``X`` may be float32 or float64 (BoTorch's default dtype): it is cast to the dtype of the
source's parameters when the source is a module (a head in :mod:`probrank.nn.heads`, or a
bound method of one), and the posterior comes back in the dtype of ``X``. The source is not a
submodule of the model, so an acquisition function's ``.to(X)`` never converts the caller's
network.
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
from collections.abc import Callable
from typing import Any, Protocol

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.posteriors.preference import PreferenceUtilityModel, cast_mvn

__all__ = ["CandidatePosterior", "HeadPosterior", "UtilityModel"]


class HeadPosterior(Protocol):
    """Anything with ``posterior(features)``: `batch_shape x q x d` -> MVN over `q` utilities
    (every head in :mod:`probrank.nn.heads` qualifies). Not a candidate posterior itself: it
    becomes one as the prior of :class:`~probrank.posteriors.head.HeadLaplacePosterior`."""

    def posterior(self, features: Tensor) -> MultivariateNormal: ...


CandidatePosterior = HeadPosterior
"""The former name of :class:`HeadPosterior` (kept for older imports)."""


def _module_dtype(source: object) -> torch.dtype | None:
    """The floating dtype of ``source``'s parameters (or of the module a bound method
    belongs to); None when it has none."""
    module = source if isinstance(source, torch.nn.Module) else getattr(source, "__self__", None)
    if isinstance(module, torch.nn.Module):
        for tensor in (*module.parameters(), *module.buffers()):
            if tensor.is_floating_point():
                return tensor.dtype
    return None


class UtilityModel(Model):
    """Expose a utility posterior to BoTorch as a single-output model.

    Args:
        source: An object with ``posterior(features) -> MultivariateNormal`` or a callable
            ``features -> MultivariateNormal``, mapping `batch_shape x q x d` to `batch_shape x q`.
        noise_variance: Observation-noise variance added when ``observation_noise=True``.
        datapoints: Optional `n x d` candidate features, kept as ``self.datapoints`` (BoTorch's
            preference acquisition functions, e.g. ``AnalyticExpectedUtilityOfBestOption``,
            read their dtype and device from ``pref_model.datapoints``).
    """

    _num_outputs = 1

    def __init__(
        self,
        source: HeadPosterior | Callable[[Tensor], MultivariateNormal],
        noise_variance: float = 0.0,
        datapoints: Tensor | None = None,
    ) -> None:
        super().__init__()
        self.datapoints = datapoints
        # kept out of the module tree: BoTorch's acquisition functions call ``self.to(X)``,
        # which would otherwise convert the caller's network to the dtype of ``X``
        self._source = (source,)
        posterior_fn = getattr(source, "posterior", None)
        chosen = posterior_fn if callable(posterior_fn) else source
        if not callable(chosen):
            raise InputDataError("source needs a posterior(features) method or must be callable")
        self._posterior_fn: Callable[[Tensor], MultivariateNormal] = chosen
        if noise_variance < 0:
            raise InputDataError(f"noise_variance must be non-negative, got {noise_variance}")
        self.noise_variance = float(noise_variance)

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size([])

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Joint posterior of the utilities of the `q` candidates in each batch.

        Args:
            X: `batch_shape x q x d` candidate features (float32 or float64).
            output_indices: Only ``None`` or ``[0]`` (one output).
            observation_noise: Add ``noise_variance`` to the diagonal when True.
            posterior_transform: Applied to the posterior if given.

        Returns:
            A ``GPyTorchPosterior`` in the dtype of ``X`` whose ``mean`` is
            `batch_shape x q x 1`.
        """
        if output_indices not in (None, [0]):
            raise InputDataError(f"UtilityModel has one output, got {output_indices}")
        if X.dim() < 2:
            raise InputDataError(f"X must be batch_shape x q x d, got shape {tuple(X.shape)}")
        dtype = _module_dtype(self._source[0])
        inputs = X if dtype is None else X.to(dtype)
        mvn = self._posterior_fn(inputs)
        if observation_noise is not False and self.noise_variance > 0:
            mvn = MultivariateNormal(
                mvn.mean, mvn.lazy_covariance_matrix.add_diagonal(torch.tensor(self.noise_variance))
            )
        posterior = GPyTorchPosterior(cast_mvn(mvn, X.dtype))
        return posterior_transform(posterior) if posterior_transform is not None else posterior

    def _inputs(self, X: Tensor) -> Tensor:
        dtype = _module_dtype(self._source[0])
        return X if dtype is None else X.to(dtype)

    def candidate_posterior(self, width: int) -> PreferenceUtilityModel:
        """The :class:`~probrank.posteriors.head.HeadLaplacePosterior` of this source (no
        candidates yet) as a BoTorch model that conditions on judgements and labels.

        Args:
            width: The feature width ``d``.
        """
        from probrank.posteriors.head import HeadLaplacePosterior

        def prior(x: Tensor) -> MultivariateNormal:
            return self._posterior_fn(self._inputs(x))

        posterior = HeadLaplacePosterior(prior, torch.zeros(0, width), jitter=0.0)
        return posterior.botorch_model(noise_variance=self.noise_variance)

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, **kwargs: Any
    ) -> PreferenceUtilityModel:
        """The model after judgements or labels ``Y`` at the points ``X`` (closed form).

        Args:
            X: `batch_shape x n' x d` points.
            Y: `batch_shape' x m x 2` integer ``(winner, loser)`` rows indexing the points, or
                `batch_shape' x n' x 1` 0/1 relevance labels (see
                :meth:`~probrank.posteriors.preference.PreferenceUtilityModel.condition_on_observations`).
            **kwargs: Ignored.
        """
        return self.candidate_posterior(X.shape[-1]).condition_on_observations(X, Y)

    def fantasize(
        self, X: Tensor, sampler: Any, observation_noise: Any = None, **kwargs: Any
    ) -> PreferenceUtilityModel:
        """A `num_fantasies x batch_shape` model conditioned on comparisons drawn at ``X`` by a
        pairwise sampler (``PairwiseSobolQMCNormalSampler``)."""
        return self.candidate_posterior(X.shape[-1]).fantasize(X, sampler)
