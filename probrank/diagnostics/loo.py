"""PSIS-LOO of fitted models and their comparison, through ArviZ.

Pareto-smoothed importance-sampling leave-one-out cross-validation (Vehtari, Gelman and Gabry
2017) estimates each model's expected log pointwise predictive density ``elpd_loo`` from the
``log_likelihood`` group (e.g. built by :func:`~probrank.diagnostics.from_pyro`). Models are
compared on the same observations by the installed ``arviz.compare``, whose table
:func:`compare_models` returns with ArviZ's own columns (0.x: ``rank``, ``elpd_loo``,
``p_loo``, ``elpd_diff``, ``weight``, ``se``, ``dse``, ``warning``, ``scale``; 1.x: ``rank``,
``elpd``, ``p``, ``elpd_diff``, ``p_worse``, ``weight``, ``se``, ``dse``, ...): the higher
the elpd, the better; a difference is credible when it is several times its standard error
``dse``.

An estimate is only evidence when the draws it is computed from can be trusted:

* Pareto ``k`` above 0.7 flags observations whose estimate is unreliable (leaving them out
  moves the posterior too far for importance sampling from the full posterior, or there are
  too few draws);
* the posterior draws themselves must have converged: R-hat <= 1.01 (several chains), bulk
  and tail ESS >= 400 and no divergent transitions (NUTS), the thresholds of
  :func:`~probrank.diagnostics.check_convergence`.

The results report every check rather than hide it: :attr:`LooResult.problems` /
:attr:`LooResult.reliable`, the ``bad_k``, ``max_r_hat``, ``min_ess_bulk``,
``min_ess_tail`` and ``divergences`` columns and ``attrs["reliable"]`` of
:func:`compare_models`, and :func:`loo_verdict`, which names the failed checks. When any
fires, the ``elpd_loo`` values and their ranking are not evidence: run longer chains, draw
more, or use K-fold cross-validation (refit without each fold).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from probrank import _arviz
from probrank._arviz import get_group, has_group
from probrank.diagnostics.convergence import ESS_MIN, RHAT_MAX
from probrank.diagnostics.summary import divergences, summary
from probrank.exceptions import InputDataError

__all__ = [
    "PARETO_K_THRESHOLD",
    "LooResult",
    "compare_models",
    "convergence_problems",
    "loo",
    "loo_verdict",
]

PARETO_K_THRESHOLD = 0.7
"""Pareto ``k`` above which an observation's PSIS-LOO estimate is unreliable."""

CONVERGENCE_COLUMNS = ("max_r_hat", "min_ess_bulk", "min_ess_tail", "divergences")
"""Columns :func:`compare_models` adds to ArviZ's table (after ``bad_k`` and
``num_observations``)."""


def _nan_to_none(value: float) -> float | None:
    return None if math.isnan(value) else value


def _convergence(data: Any) -> dict[str, float | int | None]:
    """Max R-hat (None with one chain), min bulk/tail ESS and divergences (None: unknown) of
    the posterior draws behind a LOO estimate."""
    out: dict[str, float | int | None] = dict.fromkeys(CONVERGENCE_COLUMNS)
    if not has_group(data, "posterior"):
        return out
    table = summary(data, kind="diagnostics", round_to="none")
    for column, key, pick in (
        ("max_r_hat", "r_hat", np.nanmax),
        ("min_ess_bulk", "ess_bulk", np.nanmin),
        ("min_ess_tail", "ess_tail", np.nanmin),
    ):
        values = table[key].to_numpy(dtype=float)
        out[column] = _nan_to_none(float(pick(values))) if np.isfinite(values).any() else None
    out["divergences"] = divergences(data)
    return out


def convergence_problems(
    *,
    bad_k: int = 0,
    num_observations: int = 0,
    max_r_hat: float | None = None,
    min_ess_bulk: float | None = None,
    min_ess_tail: float | None = None,
    divergences: int | None = None,
) -> list[str]:
    """The failed checks behind a LOO estimate, one short phrase each (empty: reliable).

    Args:
        bad_k: Observations with Pareto ``k > 0.7``.
        num_observations: Observations (for the share of flagged ones).
        max_r_hat: Largest R-hat of the posterior draws (None: one chain, not checked).
        min_ess_bulk: Smallest bulk ESS (None: unknown).
        min_ess_tail: Smallest tail ESS (None: unknown).
        divergences: Divergent transitions (None: not recorded).

    Returns:
        Phrases such as ``"Pareto k > 0.7 for 12% of observations"`` or ``"R-hat 1.94 >
        1.01"``.
    """
    problems = []
    if bad_k > 0:
        share = bad_k / num_observations if num_observations else 1.0
        problems.append(f"Pareto k > {PARETO_K_THRESHOLD} for {share:.0%} of observations")
    if max_r_hat is not None and not max_r_hat <= RHAT_MAX:
        problems.append(f"R-hat {max_r_hat:.3f} > {RHAT_MAX}")
    for name, value in (("bulk", min_ess_bulk), ("tail", min_ess_tail)):
        if value is not None and not value >= ESS_MIN:
            problems.append(f"{name} ESS {value:.0f} < {ESS_MIN:g}")
    if divergences:
        problems.append(f"{divergences} divergent transitions")
    return problems


@dataclass(frozen=True)
class LooResult:
    """PSIS-LOO of one model, with the convergence of the draws it was computed from.

    Attributes:
        elpd_loo: Estimated expected log pointwise predictive density (sum over
            observations), ArviZ's ``elpd_loo``.
        se: Its standard error.
        p_loo: Effective number of parameters.
        pareto_k: `n` Pareto shape estimates, one per observation.
        num_observations: `n`.
        max_r_hat: Largest R-hat of the posterior draws (None with one chain).
        min_ess_bulk: Smallest bulk ESS (None without a posterior group).
        min_ess_tail: Smallest tail ESS.
        divergences: Divergent transitions (None when not recorded).
    """

    elpd_loo: float
    se: float
    p_loo: float
    pareto_k: np.ndarray
    num_observations: int
    max_r_hat: float | None = None
    min_ess_bulk: float | None = None
    min_ess_tail: float | None = None
    divergences: int | None = None

    @property
    def elpd(self) -> float:
        """Alias of :attr:`elpd_loo`."""
        return self.elpd_loo

    @property
    def bad_k(self) -> int:
        """Observations with Pareto ``k > 0.7`` (unreliable importance sampling)."""
        return int((self.pareto_k > PARETO_K_THRESHOLD).sum())

    @property
    def problems(self) -> list[str]:
        """Failed checks (Pareto k, R-hat, bulk/tail ESS, divergences), named."""
        return convergence_problems(
            bad_k=self.bad_k,
            num_observations=self.num_observations,
            max_r_hat=self.max_r_hat,
            min_ess_bulk=self.min_ess_bulk,
            min_ess_tail=self.min_ess_tail,
            divergences=self.divergences,
        )

    @property
    def reliable(self) -> bool:
        """Every Pareto ``k <= 0.7``, R-hat <= 1.01, bulk and tail ESS >= 400 and no
        divergences (where recorded); else ``elpd_loo`` is not trustworthy."""
        return not self.problems


def _check(data: Any, var_name: str | None) -> None:
    if not has_group(data, "log_likelihood"):
        raise InputDataError(
            "the ArviZ data has no log_likelihood group; build it with from_pyro or pass "
            "log_likelihood= to to_inference_data"
        )
    names = list(get_group(data, "log_likelihood").data_vars)
    if var_name is None and len(names) > 1:
        raise InputDataError(f"several log-likelihood variables {names}; pass var_name")
    if var_name is not None and var_name not in names:
        raise InputDataError(f"no log-likelihood variable {var_name!r}; have {names}")


def loo(
    data: Any, *, var_name: str | None = None, reff: float | None = None, quiet: bool = True
) -> LooResult:
    """PSIS-LOO of one model.

    Args:
        data: ArviZ data with a ``log_likelihood`` group.
        var_name: The observed variable (needed when there are several).
        reff: Relative MCMC efficiency, as ``arviz.loo`` takes it (None: ArviZ computes
            it from the ``posterior`` group; 1.0 for independent draws, e.g. of a
            variational guide, which then need no posterior group).
        quiet: Silence ArviZ's warnings (high Pareto ``k`` is reported in ``pareto_k``).

    Returns:
        A :class:`LooResult` (with the convergence of the posterior draws).
    """
    _check(data, var_name)
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        result = _arviz.loo(data, var_name=var_name, reff=reff)
    return LooResult(
        elpd_loo=result.elpd,
        se=result.se,
        p_loo=result.p,
        pareto_k=result.pareto_k,
        num_observations=int(result.pareto_k.size),
        **_convergence(data),  # type: ignore[arg-type]
    )


def compare_models(
    models: Mapping[str, Any], *, var_name: str | None = None, quiet: bool = True
) -> pd.DataFrame:
    """Rank models by PSIS-LOO: the installed ``arviz.compare``'s table plus its checks.

    Args:
        models: ``{name: ArviZ data}``, all with log-likelihoods of the same observations.
        var_name: The observed variable (needed when there are several).
        quiet: Silence ArviZ's warnings.

    Returns:
        ``arviz.compare``'s table unchanged (one row per model, best first, with the
        installed ArviZ's columns: see the module docstring), followed by ``bad_k`` (observations
        with Pareto ``k > 0.7``), ``num_observations``, and the convergence of each model's
        posterior draws: ``max_r_hat`` (NaN with one chain), ``min_ess_bulk``,
        ``min_ess_tail`` and ``divergences`` (NaN when not recorded).
        ``table.attrs["reliable"]`` is True only when every model passes every check (see
        the module docstring); ``table.attrs["problems"]`` maps each model to its failed
        checks.
    """
    if len(models) < 2:
        raise InputDataError("compare_models needs at least two models")
    for data in models.values():
        _check(data, var_name)
    _same_observations(models, var_name)
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        table = _arviz.compare(models, var_name=var_name)
    out = table.copy()
    out.index = [str(i) for i in table.index]
    results = {name: loo(models[name], var_name=var_name) for name in out.index}
    out["bad_k"] = [results[name].bad_k for name in out.index]
    out["num_observations"] = [results[name].num_observations for name in out.index]
    for column in CONVERGENCE_COLUMNS:
        values = [getattr(results[name], column) for name in out.index]
        out[column] = [np.nan if v is None else v for v in values]
    problems = {name: results[name].problems for name in out.index}
    out.attrs["problems"] = problems
    out.attrs["reliable"] = not any(problems.values())
    return out


def _observations(data: Any, var_name: str | None) -> tuple[tuple[int, ...], Any]:
    """The shape of one draw's pointwise log-likelihood and the observed values (or None)."""
    group = get_group(data, "log_likelihood")
    name = var_name if var_name is not None else str(next(iter(group.data_vars)))
    values = group[name]
    shape = tuple(int(values.sizes[d]) for d in values.dims if d not in ("chain", "draw"))
    observed = None
    if has_group(data, "observed_data") and name in get_group(data, "observed_data").data_vars:
        observed = np.asarray(get_group(data, "observed_data")[name].values)
    return shape, observed


def _same_observations(models: Mapping[str, Any], var_name: str | None) -> None:
    """Refuse models whose log-likelihoods are of different observations (PSIS-LOO values of
    different data are not comparable): the pointwise shapes must agree, and so must the
    observed values where every model records them."""
    seen = {name: _observations(data, var_name) for name, data in models.items()}
    (first, (shape, observed)), *rest = seen.items()
    for name, (other_shape, other_observed) in rest:
        if other_shape != shape:
            raise InputDataError(
                f"compare_models needs log-likelihoods of the same observations: {first!r} has "
                f"{shape}, {name!r} has {other_shape}"
            )
        if (
            observed is not None
            and other_observed is not None
            and not (
                observed.shape == other_observed.shape and np.array_equal(observed, other_observed)
            )
        ):
            raise InputDataError(
                f"compare_models needs log-likelihoods of the same observations: the observed "
                f"data of {first!r} and {name!r} differ"
            )


def _optional(row: pd.Series, column: str) -> Any:
    value = row.get(column)
    return None if value is None or pd.isna(value) else value


def loo_verdict(table: pd.DataFrame) -> str:
    """One sentence on whether a :func:`compare_models` table can be believed.

    Args:
        table: The output of :func:`compare_models` (with its ``bad_k``,
            ``num_observations`` and, when known, convergence columns).

    Returns:
        "reliable" only when no observation of any model has Pareto ``k > 0.7`` and every
        model's draws have R-hat <= 1.01, bulk and tail ESS >= 400 and no divergences (where
        recorded); otherwise which models fail which checks, and that their ``elpd_loo``
        values and ranking are not evidence.
    """
    if "bad_k" not in table.columns or "num_observations" not in table.columns:
        raise InputDataError("need a compare_models table (bad_k and num_observations columns)")
    problems: dict[str, list[str]] = {}
    for name, row in table.iterrows():
        divergent = _optional(row, "divergences")
        problems[str(name)] = convergence_problems(
            bad_k=int(row["bad_k"]),
            num_observations=int(row["num_observations"]),
            max_r_hat=_optional(row, "max_r_hat"),
            min_ess_bulk=_optional(row, "min_ess_bulk"),
            min_ess_tail=_optional(row, "min_ess_tail"),
            divergences=None if divergent is None else int(divergent),
        )
    if not any(problems.values()):
        checked = [f"every Pareto k <= {PARETO_K_THRESHOLD}"]
        if "min_ess_bulk" in table.columns:
            checked.append(f"R-hat <= {RHAT_MAX}, bulk and tail ESS >= {ESS_MIN:g}")
        if "divergences" in table.columns and table["divergences"].notna().any():
            checked.append("no divergences")
        return (
            f"PSIS-LOO is reliable: {', '.join(checked)} for every model, so the elpd_loo "
            "differences can be compared against their standard errors."
        )
    failing = [f"{name} ({'; '.join(found)})" for name, found in problems.items() if found]
    scope = "any model: " if len(failing) == len(problems) else ""
    return (
        f"PSIS-LOO is NOT reliable for {scope}{', '.join(failing)}. Their elpd_loo values and "
        "ranking are not evidence; run longer chains or draw more posterior samples, or use "
        "K-fold cross-validation (refit without each fold)."
    )
