"""Bayesian optimisation of fusion weights on the simplex with BoTorch.

The loop (:func:`bayes_search`), within ``budget`` objective evaluations:

1. Initial design: the equal weights ``(1/R, ..., 1/R)`` (CombSUM, a strong default) and
   ``initial - 1`` scrambled-Sobol points mapped uniformly onto the simplex
   (:func:`botorch.utils.sampling.sample_simplex`).
2. Fit a :class:`~botorch.models.SingleTaskGP` (Matern-5/2 ARD kernel, inferred noise, outcome
   standardised) to all evaluations by maximum marginal likelihood.
3. Maximise qLogNoisyExpectedImprovement (Ament et al. 2023) for a batch of ``batch_size``
   candidates with :func:`~botorch.optim.optimize_acqf`. The GP lives on the simplex; the
   acquisition function is optimised over the cube ``[0, 1]^(R-1)`` and mapped onto the
   simplex by :func:`simplex_from_cube` (a Dirichlet(1, ..., 1) reparametrisation: uniform
   points of the cube become uniform points of the simplex), so BoTorch's box-bounded L-BFGS-B
   does the search. ``optimize_acqf`` with the equality constraint ``sum_i w_i = 1`` reaches
   the same points but through SLSQP, several times slower on 4 to 6 weights here.
4. Evaluate the batch, add it, repeat from 2.

The objective (nDCG@k of a fusion) is piecewise constant in the weights; the GP's noise term
absorbs the steps. Everything is seeded by ``seed`` (Sobol scrambling, the QMC base samples of
the acquisition function, BoTorch's raw samples through a forked torch RNG), so a call is
reproducible and leaves the global RNG untouched.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from probrank.exceptions import InputDataError
from probrank.fusion.search import DEFAULT_BUDGET, Objective, WeightSearch, best_of

__all__ = ["BayesOptSettings", "bayes_search", "simplex_from_cube"]

_EDGE = 1e-9
"""Cube coordinates are kept below ``1 - _EDGE``, where the map's gradient is finite."""


def simplex_from_cube(v: torch.Tensor) -> torch.Tensor:
    """Map the unit cube onto the simplex, uniform to uniform (stick-breaking).

    With ``u_i = 1 - (1 - v_i) ** (1 / (R - i))`` (the inverse CDF of Beta(1, R - i)),
    ``w_i = u_i * prod_{j < i} (1 - u_j)`` for ``i < R`` and ``w_R`` the remainder; a uniform
    ``v`` gives a Dirichlet(1, ..., 1), i.e. uniform, ``w``. Differentiable in ``v``.

    Args:
        v: `... x (R-1)` points of ``[0, 1]^(R-1)``.

    Returns:
        `... x R` non-negative weights summing to 1.
    """
    count = v.shape[-1]
    exponents = 1.0 / torch.arange(count, 0, -1, dtype=v.dtype, device=v.device)
    u = 1.0 - (1.0 - v.clamp(0.0, 1.0 - _EDGE)) ** exponents
    ones = torch.ones_like(u[..., :1])
    remaining = torch.cumprod(torch.cat([ones, 1.0 - u], dim=-1), dim=-1)
    return torch.cat([u, ones], dim=-1) * remaining


@dataclass(frozen=True)
class BayesOptSettings:
    """Settings of :func:`bayes_search`.

    Attributes:
        initial: Points of the initial design (the equal weights included); default
            ``min(budget, max(R + 1, 5))``.
        batch_size: Candidates per acquisition step (`q`).
        num_restarts: Starting points of the acquisition optimisation.
        raw_samples: Random points screened to choose those starting points.
        mc_samples: Quasi-Monte Carlo samples of the acquisition function.
    """

    initial: int | None = None
    batch_size: int = 4
    num_restarts: int = 6
    raw_samples: int = 128
    mc_samples: int = 128

    def __post_init__(self) -> None:
        for name in ("batch_size", "num_restarts", "raw_samples", "mc_samples"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputDataError(f"{name} must be a positive integer, got {value!r}")
        if self.initial is not None and (
            isinstance(self.initial, bool) or not isinstance(self.initial, int) or self.initial < 1
        ):
            raise InputDataError(f"initial must be a positive integer, got {self.initial!r}")


def _evaluate(objective: Objective, x: torch.Tensor) -> torch.Tensor:
    values = torch.as_tensor(objective(x), dtype=torch.float64).reshape(-1)
    if values.shape[0] != x.shape[0] or not torch.isfinite(values).all():
        raise InputDataError("the objective must return one finite value per weight vector")
    return values


def bayes_search(
    objective: Objective,
    dim: int,
    *,
    budget: int = DEFAULT_BUDGET,
    seed: int = 0,
    settings: BayesOptSettings | None = None,
) -> WeightSearch:
    """Maximise ``objective`` over the simplex of ``dim`` weights with qLogNEI.

    Args:
        objective: `b x R` -> `b` values to maximise.
        dim: `R`, the number of weights.
        budget: Objective evaluations in all (initial design included).
        seed: Seeds the search.
        settings: :class:`BayesOptSettings`.

    Returns:
        The best weights evaluated and every evaluation.

    Raises:
        InputDataError: ``dim`` or ``budget`` not a positive integer.
    """
    from probrank import _linear_operator  # noqa: F401  (first: BoTorch imports quietly)

    # isort: split
    from botorch.acquisition import AcquisitionFunction
    from botorch.acquisition.logei import qLogNoisyExpectedImprovement
    from botorch.exceptions.warnings import InputDataWarning, OptimizationWarning
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from botorch.optim import optimize_acqf
    from botorch.sampling.normal import SobolQMCNormalSampler
    from botorch.utils.sampling import sample_simplex
    from gpytorch.mlls import ExactMarginalLogLikelihood

    for label, value in (("dim", dim), ("budget", budget)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputDataError(f"{label} must be a positive integer, got {value!r}")
    s = settings or BayesOptSettings()
    dtype = torch.float64
    equal = torch.full((1, dim), 1.0 / dim, dtype=dtype)
    if dim == 1 or budget == 1:
        return best_of(equal, _evaluate(objective, equal), "botorch")
    initial = min(budget, s.initial if s.initial is not None else max(dim + 1, 5))
    x = equal
    if initial > 1:
        sobol = sample_simplex(dim, initial - 1, qmc=True, seed=seed, dtype=dtype)
        x = torch.cat([equal, sobol])
    y = _evaluate(objective, x)
    bounds = torch.stack([torch.zeros(dim - 1, dtype=dtype), torch.ones(dim - 1, dtype=dtype)])

    class OnSimplex(AcquisitionFunction):
        """The wrapped acquisition function of :func:`simplex_from_cube` of the input."""

        def __init__(self, inner: AcquisitionFunction) -> None:
            super().__init__(inner.model)
            self.inner = inner

        def forward(self, X: torch.Tensor) -> torch.Tensor:
            return self.inner(simplex_from_cube(X))

    step = 0
    with torch.random.fork_rng(), warnings.catch_warnings():
        warnings.simplefilter("ignore", InputDataWarning)
        warnings.simplefilter("ignore", OptimizationWarning)
        # L-BFGS-B stopping abnormally on a flat acquisition surface: BoTorch retries itself
        warnings.filterwarnings("ignore", "Optimization failed", RuntimeWarning)
        torch.manual_seed(seed)
        while x.shape[0] < budget:
            q = min(s.batch_size, budget - x.shape[0])
            model = SingleTaskGP(x, y.unsqueeze(-1), outcome_transform=Standardize(m=1))
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            sampler = SobolQMCNormalSampler(torch.Size([s.mc_samples]), seed=seed + step)
            acquisition = qLogNoisyExpectedImprovement(
                model, X_baseline=x, sampler=sampler, prune_baseline=True
            )
            cube, _ = optimize_acqf(
                OnSimplex(acquisition),
                bounds=bounds,
                q=q,
                num_restarts=s.num_restarts,
                raw_samples=s.raw_samples,
            )
            candidates = simplex_from_cube(cube.detach())
            x = torch.cat([x, candidates])
            y = torch.cat([y, _evaluate(objective, candidates)])
            step += 1
    return best_of(x, y, "botorch")
