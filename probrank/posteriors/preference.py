"""A BoTorch ``Model`` over a preference posterior that can condition on new judgements.

Every posterior over one question's candidates in :mod:`probrank.posteriors` (the closed-form
:class:`~probrank.posteriors.bradley_terry.BradleyTerryLaplace`, the last-layer Laplace, MC
dropout, SWAG, the ensemble and GPPL) is exposed to BoTorch by
:class:`PreferenceUtilityModel` (their ``botorch_model()``). Besides ``posterior(X)`` it
implements the two methods look-ahead acquisition functions need, with the conventions of
BoTorch's own preference model, :class:`botorch.models.PairwiseGP`:

* ``condition_on_observations(X, Y)``: ``X`` is `batch_shape x n' x d` points and ``Y`` is
  `batch_shape' x m x 2` *comparisons* (integer rows ``(winner, loser)`` indexing the `n'`
  points of ``X``), not utility values. The result is a new model (the original is left
  alone) whose members are copies of the posterior updated with those judgements, batched
  over the broadcast of ``batch_shape'``, ``batch_shape`` and the model's own batch shape.
* ``fantasize(X, sampler)``: draws comparisons among the points of ``X`` with one of BoTorch's
  pairwise samplers (:class:`~botorch.sampling.pairwise_samplers.PairwiseSobolQMCNormalSampler`
  or ``PairwiseIIDNormalSampler``: utility draws turned into ``(winner, loser)`` rows) and
  conditions on them: a `num_fantasies x batch_shape` model. A sampler of real values
  (``SobolQMCNormalSampler``) is refused with a clear error, as ``PairwiseGP`` refuses it.
  (BoTorch's pairwise samplers call ``numpy.random.seed(seed)`` on every draw: they reset
  numpy's global RNG, which this module cannot prevent.)

So ``qKnowledgeGradient(model, num_fantasies=F, sampler=PairwiseSobolQMCNormalSampler(...))``
and ``qNegIntegratedPosteriorVariance(model, mc_points, sampler=<pairwise sampler>)`` run on
every posterior here: each fantasy is "the posterior after the user judged this pair".

A member is anything with ``posterior_at(X)`` (`... x q x d` -> a ``MultivariateNormal`` over
`q`) and ``conditioned(X, comparisons)`` (a new, updated member; see
:class:`~probrank.posteriors.protocol.ConditionablePosterior`). Points of ``X`` that equal a
candidate's datapoint row are that candidate; other rows are new points where the posterior
supports them (the neural posteriors, the last-layer Laplace and GPPL; ``BradleyTerryLaplace``
knows only its candidates). A comparison of a point with itself carries no information and is
skipped.

Dtypes: the posteriors compute in float64; ``posterior(X)`` returns the dtype of ``X``
(float32 or float64, BoTorch's default).
"""

from __future__ import annotations

from probrank import _linear_operator  # noqa: F401  (first: GPyTorch/BoTorch import quietly)

# isort: split
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.sampling.base import MCSampler
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator
from torch import Tensor

from probrank.exceptions import InputDataError
from probrank.posteriors.protocol import ConditionablePosterior

__all__ = [
    "DISCRETE_ONLY",
    "PreferenceUtilityModel",
    "cast_mvn",
    "comparison_pairs",
    "distinct_rows",
    "identical_rows",
    "match_rows",
]


DISCRETE_ONLY = (
    "this model's posterior is over a discrete set of candidates and has no gradient in X, "
    "so gradient-based optimize_acqf cannot move X: choose among the candidates with "
    "botorch.optim.optimize_acqf_discrete(acqf, q, choices=model.datapoints) (or "
    "optimize_acqf_discrete_local_search; pairs: probrank.acquisition.optimize_acqf_pairs)"
)
"""The error of ``posterior(X)`` when ``X`` asks for a gradient the posterior does not have
(``optimize_acqf``'s L-BFGS would fail with "element 0 of tensors does not require grad")."""


def cast_mvn(mvn: MultivariateNormal, dtype: torch.dtype) -> MultivariateNormal:
    """The same Gaussian in ``dtype`` (lazy covariances stay lazy)."""
    if mvn.mean.dtype == dtype:
        return mvn
    return MultivariateNormal(mvn.mean.to(dtype), mvn.lazy_covariance_matrix.to(dtype))


def match_rows(datapoints: Tensor, X: Tensor) -> Tensor:
    """The index of the first row of ``datapoints`` equal to each row of ``X``, or -1.

    Rows are compared exactly, in the dtype of ``X`` (so float32 copies of float64
    datapoints match).

    Args:
        datapoints: `n x d` rows.
        X: `... x d` rows.

    Returns:
        `...` long indices in ``[-1, n)``.
    """
    if X.shape[-1] != datapoints.shape[-1]:
        raise InputDataError(
            f"points have {X.shape[-1]} columns, the candidates' datapoints {datapoints.shape[-1]}"
        )
    n = datapoints.shape[0]
    flat = X.detach().reshape(-1, X.shape[-1])
    rows = torch.cat([datapoints.detach().to(flat), flat])
    _, inverse = torch.unique(rows, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), n, dtype=torch.long)
    first = first.scatter_reduce(0, inverse[:n], torch.arange(n), reduce="amin")
    found = first[inverse[n:]]
    return torch.where(found < n, found, -1).reshape(X.shape[:-1])


def distinct_rows(rows: Tensor) -> tuple[Tensor, Tensor]:
    """The distinct rows of `m x d` ``rows`` (`k x d`, in order of first appearance) and the
    `m` index of each row among them (exact equality).

    Rows are keyed by an integer hash of their float64 bit patterns (a 1-D sort instead of a
    lexicographic one over `d` columns; integer sums are exact, so identical rows always get
    the same key); the keys are checked against the rows, with ``torch.unique(dim=0)`` as the
    fallback when two different rows share a key.
    """
    m = rows.shape[0]
    if m == 0:
        return rows, torch.zeros(0, dtype=torch.long)
    flat = rows.detach()
    bits = (flat.to(torch.float64) + 0.0).contiguous().view(torch.int64)  # -0.0 -> 0.0
    generator = torch.Generator().manual_seed(0)
    weights = torch.randint(-(2**62), 2**62, (flat.shape[-1],), generator=generator) | 1
    _, inverse = torch.unique((bits * weights).sum(-1), return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), m, dtype=torch.long)
    first = first.scatter_reduce(0, inverse, torch.arange(m), reduce="amin")
    if not torch.equal(flat, flat[first[inverse]]):
        _, inverse = torch.unique(flat, dim=0, return_inverse=True)
        first = torch.full((int(inverse.max()) + 1,), m, dtype=torch.long)
        first = first.scatter_reduce(0, inverse, torch.arange(m), reduce="amin")
    order = torch.argsort(first)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.shape[0])
    return flat[first[order]], rank[inverse]


def identical_rows(a: Tensor, b: Tensor) -> Tensor:
    """`... x p x q` bool: row ``i`` of ``a`` (`... x p x d`) equals row ``j`` of ``b``
    (`... x q x d`) exactly (compared through ids from :func:`distinct_rows`, not element by
    element across every pair)."""
    width = a.shape[-1]
    flat = torch.cat([a.detach().reshape(-1, width), b.detach().to(a.dtype).reshape(-1, width)])
    _, ids = distinct_rows(flat)
    split = a.shape[:-1].numel()
    ids_a, ids_b = ids[:split].reshape(a.shape[:-1]), ids[split:].reshape(b.shape[:-1])
    return ids_a.unsqueeze(-1) == ids_b.unsqueeze(-2)


def comparison_pairs(comparisons: Tensor, num_points: int) -> list[tuple[int, int]]:
    """`m x 2` integer comparisons as ``(winner, loser)`` tuples of point indices.

    Raises:
        InputDataError: Not an integer `m x 2` tensor (e.g. real-valued fantasies from a
            non-pairwise sampler), or indices outside ``[0, num_points)``.
    """
    if comparisons.is_floating_point() or comparisons.dim() != 2 or comparisons.shape[-1] != 2:
        raise InputDataError(
            "preference models condition on comparisons: an integer `m x 2` tensor of "
            f"(winner, loser) rows, got {comparisons.dtype} of shape {tuple(comparisons.shape)}; "
            "fantasize with botorch.sampling.pairwise_samplers.PairwiseSobolQMCNormalSampler"
        )
    pairs = [(int(w), int(ell)) for w, ell in comparisons.tolist()]
    if any(not (0 <= i < num_points) for pair in pairs for i in pair):
        raise InputDataError(f"comparison indices must lie in [0, {num_points}), got {pairs}")
    return pairs


class PreferenceUtilityModel(Model):
    """BoTorch ``Model`` over one or a batch of preference posteriors.

    Args:
        members: One posterior, or ``prod(batch_shape)`` of them in C order.
        datapoints: `n x d` candidate datapoints (BoTorch's preference acquisition
            functions, e.g. ``AnalyticExpectedUtilityOfBestOption``, read their dtype).
        batch_shape: The model's batch shape (``()`` for one posterior; fantasy models are
            `num_fantasies x batch_shape`).
        noise_variance: Variance added to the diagonal when ``observation_noise`` is set
            (also when fantasizing): the judgement noise on each utility, 0 for judgements
            that follow the utilities exactly.
    """

    _num_outputs = 1

    def __init__(
        self,
        members: ConditionablePosterior | Sequence[ConditionablePosterior],
        datapoints: Tensor,
        *,
        batch_shape: Sequence[int] = (),
        noise_variance: float = 0.0,
    ) -> None:
        super().__init__()
        listed: list[ConditionablePosterior] = (
            list(members) if isinstance(members, list | tuple) else [members]  # type: ignore[list-item]
        )
        self._batch_shape = torch.Size(batch_shape)
        if len(listed) != math.prod(self._batch_shape):
            raise InputDataError(
                f"{len(listed)} posteriors for batch shape {tuple(self._batch_shape)}"
            )
        if datapoints.dim() != 2:
            raise InputDataError(f"datapoints must be n x d, got {tuple(datapoints.shape)}")
        if not noise_variance >= 0:
            raise InputDataError(f"noise_variance must be non-negative, got {noise_variance}")
        self.members = listed
        self.datapoints = datapoints
        self.noise_variance = float(noise_variance)

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return self._batch_shape

    @property
    def train_inputs(self) -> tuple[Tensor]:
        """``(datapoints,)``: the `n x d` candidates, as BoTorch's models give their training
        inputs (``PairwiseGP``'s are its datapoints too), e.g. for ``qNoisyExpectedImprovement
        (model, X_baseline=model.train_inputs[0])``."""
        return (self.datapoints,)

    def subset_output(self, idcs: list[int]) -> PreferenceUtilityModel:
        """The model itself for ``[0]`` (its one output).

        Raises:
            InputDataError: any other indices.
        """
        if list(idcs) != [0]:
            raise InputDataError(f"the model has one output (index 0), got {list(idcs)}")
        return self

    def _check(self, X: Tensor) -> None:
        if X.dim() < 2 or X.shape[-1] != self.datapoints.shape[-1]:
            raise InputDataError(
                f"X must be batch_shape x q x {self.datapoints.shape[-1]}, got {tuple(X.shape)}"
            )

    def _joint(self, X: Tensor) -> MultivariateNormal:
        if not self._batch_shape:
            return self.members[0].posterior_at(X)
        model_shape = self._batch_shape
        try:
            out = torch.broadcast_shapes(X.shape[:-2], model_shape)
        except RuntimeError:
            raise InputDataError(
                f"X batch shape {tuple(X.shape[:-2])} does not broadcast with the model's "
                f"{tuple(model_shape)}"
            ) from None
        lead = out[: len(out) - len(model_shape)]
        q, d = X.shape[-2:]
        grid = X.expand(*out, q, d).reshape(*lead, len(self.members), q, d)
        means, covariances = [], []
        for k, member in enumerate(self.members):
            mvn = member.posterior_at(grid[..., k, :, :])
            means.append(mvn.mean)
            covariances.append(mvn.covariance_matrix)
        mean = torch.stack(means, -2).reshape(*out, q)
        covariance = torch.stack(covariances, -3).reshape(*out, q, q)
        return MultivariateNormal(mean, DenseLinearOperator(covariance))

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Joint posterior of the utilities at `batch_shape x q x d` points.

        Args:
            X: Points; the batch shape broadcasts with the model's.
            output_indices: Only ``None`` or ``[0]``.
            observation_noise: Add ``noise_variance`` to the diagonal unless False.
            posterior_transform: Applied to the posterior if given.

        Returns:
            A ``GPyTorchPosterior`` in the dtype of ``X``, mean `broadcast batch x q x 1`.
        """
        if output_indices not in (None, [0]):
            raise InputDataError(f"the model has one output, got {output_indices}")
        self._check(X)
        mvn = self._joint(X)
        if X.requires_grad and torch.is_grad_enabled() and not mvn.mean.requires_grad:
            raise InputDataError(DISCRETE_ONLY)
        if observation_noise is not False and self.noise_variance > 0:
            noise = torch.full_like(mvn.mean, self.noise_variance)
            mvn = MultivariateNormal(mvn.mean, mvn.lazy_covariance_matrix.add_diagonal(noise))
        posterior = GPyTorchPosterior(cast_mvn(mvn, X.dtype))
        return posterior_transform(posterior) if posterior_transform is not None else posterior

    def condition_on_observations(
        self, X: Tensor, Y: Tensor, **kwargs: Any
    ) -> PreferenceUtilityModel:
        """The model after the comparisons ``Y`` among the points ``X``.

        Args:
            X: `batch_shape x n' x d` points.
            Y: `batch_shape' x m x 2` integer ``(winner, loser)`` rows indexing the `n'`
                points; or, for members that take relevance labels (a relevance head's
                :class:`~probrank.posteriors.head.HeadLaplacePosterior`), `batch_shape' x n' x 1`
                floating 0/1 labels of the points.
            **kwargs: Ignored (BoTorch passes ``noise`` for real-valued observations).

        Returns:
            A new model with batch shape ``broadcast(batch_shape', batch_shape, model's)``.
        """
        self._check(X)
        if Y.dim() < 2:
            raise InputDataError(f"Y must be batch_shape x m x 2, got {tuple(Y.shape)}")
        if Y.is_floating_point() and Y.shape[-1] == 1 and Y.shape[-2] == X.shape[-2]:
            return self._condition_on_labels(X, Y)
        comparison_pairs(Y.reshape(-1, Y.shape[-1]), X.shape[-2])  # validates dtype and range
        return self._per_member(X, Y, lambda member, x, y: member.conditioned(x, y))

    def _per_member(
        self, X: Tensor, Y: Tensor, update: Callable[[Any, Tensor, Tensor], Any]
    ) -> PreferenceUtilityModel:
        """A model of batch shape ``broadcast(Y, X, model)`` whose member for each batch index
        is ``update(member, X[index], Y[index])`` (`n' x d` points, `m x c` observations)."""
        try:
            shape = torch.broadcast_shapes(Y.shape[:-2], X.shape[:-2], self._batch_shape)
        except RuntimeError:
            raise InputDataError(
                f"batch shapes of Y {tuple(Y.shape[:-2])}, X {tuple(X.shape[:-2])} and the model "
                f"{tuple(self._batch_shape)} do not broadcast"
            ) from None
        owner = torch.arange(len(self.members)).reshape(self._batch_shape).expand(shape)
        points = X.expand(*shape, *X.shape[-2:]).reshape(-1, *X.shape[-2:])
        observed = Y.expand(*shape, *Y.shape[-2:]).reshape(-1, *Y.shape[-2:])
        members = [
            update(self.members[int(k)], points[i], observed[i])
            for i, k in enumerate(owner.reshape(-1).tolist())
        ]
        return PreferenceUtilityModel(
            members, self.datapoints, batch_shape=shape, noise_variance=self.noise_variance
        )

    def _condition_on_labels(self, X: Tensor, Y: Tensor) -> PreferenceUtilityModel:
        """Binary relevance labels ``Y`` (`batch_shape' x n' x 1` of 0/1) of the points ``X``,
        for members that take labels (``labelled(X, labels)``, e.g. a relevance head's)."""
        binary = bool(((Y == 0) | (Y == 1)).all())
        if not binary or not all(callable(getattr(m, "labelled", None)) for m in self.members):
            raise InputDataError(
                "preference models condition on comparisons (an integer `m x 2` tensor of "
                "(winner, loser) rows) or, for a relevance head, 0/1 labels; got real values "
                f"of shape {tuple(Y.shape)}: fantasize with "
                "botorch.sampling.pairwise_samplers.PairwiseSobolQMCNormalSampler"
            )
        return self._per_member(X, Y, lambda member, x, y: member.labelled(x, y[..., 0]))

    def fantasize(
        self,
        X: Tensor,
        sampler: MCSampler,
        observation_noise: Tensor | None = None,
        **kwargs: Any,
    ) -> PreferenceUtilityModel:
        """A `sample_shape x batch_shape` model conditioned on comparisons drawn at ``X``.

        Args:
            X: `batch_shape x q x d` points (``q >= 2``).
            sampler: A pairwise sampler (``PairwiseSobolQMCNormalSampler``,
                ``PairwiseIIDNormalSampler``) that turns utility draws into comparisons.
            observation_noise: Ignored: the draws include ``noise_variance``.
            **kwargs: Ignored.
        """
        comparisons = sampler(self.posterior(X, observation_noise=True))
        return self.condition_on_observations(X, comparisons)
