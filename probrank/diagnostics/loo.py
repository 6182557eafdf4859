"""PSIS-LOO of fitted models and their comparison, through ArviZ.

Pareto-smoothed importance-sampling leave-one-out cross-validation (Vehtari, Gelman and Gabry
2017) estimates each model's expected log pointwise predictive density ``elpd_loo`` from the
``log_likelihood`` group (e.g. built by :func:`~probrank.diagnostics.from_pyro`). Models are
compared on the same observations: the higher ``elpd``, the better; a difference is credible
when it is several times its standard error ``dse``. Pareto ``k`` above 0.7 flags
observations whose estimate is unreliable (leaving them out moves the posterior too far for
importance sampling from the full posterior, or there are too few draws). The results report
it rather than hide it: :attr:`LooResult.bad_k` / :attr:`LooResult.reliable`, and the
``bad_k`` column and ``attrs["reliable"]`` of :func:`compare_models`. When the flags fire,
the ``elpd`` values and their ranking are not evidence: use more draws, or K-fold
cross-validation (refit without each fold).

Results are returned with the same field and column names for ArviZ 0.x (``elpd_loo``,
``p_loo``) and 1.x (``elpd``, ``p``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import arviz as az
import numpy as np
import pandas as pd

from probrank.diagnostics._data import get_group, has_group
from probrank.exceptions import InputDataError

__all__ = ["PARETO_K_THRESHOLD", "LooResult", "compare_models", "loo", "loo_verdict"]

PARETO_K_THRESHOLD = 0.7
"""Pareto ``k`` above which an observation's PSIS-LOO estimate is unreliable."""

_ALIASES = {
    "elpd": ("elpd_loo", "elpd"),
    "p_loo": ("p_loo", "p"),
    "se": ("se",),
    "pareto_k": ("pareto_k",),
    "elpd_diff": ("elpd_diff",),
    "dse": ("dse",),
    "weight": ("weight",),
    "rank": ("rank",),
    "warning": ("warning",),
}


def _field(result: Any, name: str) -> Any:
    for key in _ALIASES[name]:
        value = result.get(key) if hasattr(result, "get") else getattr(result, key, None)
        if value is not None:
            return value
    raise InputDataError(f"ArviZ returned no {name!r} field")  # pragma: no cover


@dataclass(frozen=True)
class LooResult:
    """PSIS-LOO of one model.

    Attributes:
        elpd: Estimated expected log pointwise predictive density (sum over observations).
        se: Its standard error.
        p_loo: Effective number of parameters.
        pareto_k: `n` Pareto shape estimates, one per observation.
        num_observations: `n`.
    """

    elpd: float
    se: float
    p_loo: float
    pareto_k: np.ndarray
    num_observations: int

    @property
    def bad_k(self) -> int:
        """Observations with Pareto ``k > 0.7`` (unreliable importance sampling)."""
        return int((self.pareto_k > PARETO_K_THRESHOLD).sum())

    @property
    def reliable(self) -> bool:
        """Whether every Pareto ``k`` is at most 0.7 (else ``elpd`` is not trustworthy)."""
        return self.bad_k == 0


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


def loo(data: Any, *, var_name: str | None = None, quiet: bool = True) -> LooResult:
    """PSIS-LOO of one model.

    Args:
        data: ArviZ data with a ``log_likelihood`` group.
        var_name: The observed variable (needed when there are several).
        quiet: Silence ArviZ's warnings (high Pareto ``k`` is reported in ``pareto_k``).

    Returns:
        A :class:`LooResult`.
    """
    _check(data, var_name)
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        result = az.loo(data, pointwise=True, var_name=var_name)
    k = np.asarray(getattr(_field(result, "pareto_k"), "values", _field(result, "pareto_k")))
    return LooResult(
        elpd=float(_field(result, "elpd")),
        se=float(_field(result, "se")),
        p_loo=float(_field(result, "p_loo")),
        pareto_k=k.reshape(-1),
        num_observations=int(k.size),
    )


def compare_models(
    models: Mapping[str, Any], *, var_name: str | None = None, quiet: bool = True
) -> pd.DataFrame:
    """Rank models by PSIS-LOO (:func:`arviz.compare`).

    Args:
        models: ``{name: ArviZ data}``, all with log-likelihoods of the same observations.
        var_name: The observed variable (needed when there are several).
        quiet: Silence ArviZ's warnings.

    Returns:
        One row per model, best first: ``rank``, ``elpd``, ``p_loo``, ``elpd_diff`` (to the
        best), ``se``, ``dse`` (standard error of the difference), ``weight`` (stacking),
        ``warning`` (ArviZ's flag), ``bad_k`` (observations with Pareto ``k > 0.7``) and
        ``num_observations``. ``table.attrs["reliable"]`` is True only when no model has a
        high ``k``: otherwise the ranking is not evidence (see the module docstring).
    """
    if len(models) < 2:
        raise InputDataError("compare_models needs at least two models")
    for data in models.values():
        _check(data, var_name)
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        table = az.compare(dict(models), var_name=var_name)
    columns = ["rank", "elpd", "p_loo", "elpd_diff", "se", "dse", "weight", "warning"]
    out = pd.DataFrame(index=[str(i) for i in table.index])
    for column in columns:
        key = next(k for k in _ALIASES[column] if k in table.columns)
        out[column] = table[key].to_numpy()
    results = {name: loo(models[name], var_name=var_name) for name in out.index}
    out["bad_k"] = [results[name].bad_k for name in out.index]
    out["num_observations"] = [results[name].num_observations for name in out.index]
    out.attrs["reliable"] = bool((out["bad_k"] == 0).all())
    return out


def loo_verdict(table: pd.DataFrame) -> str:
    """One sentence on whether a :func:`compare_models` table can be believed.

    Args:
        table: The output of :func:`compare_models` (with its ``bad_k`` and
            ``num_observations`` columns).

    Returns:
        "reliable" when no observation of any model has Pareto ``k > 0.7``; otherwise which
        models are unreliable, with the share of flagged observations, and that their
        ``elpd`` values and ranking are not evidence.
    """
    if "bad_k" not in table.columns or "num_observations" not in table.columns:
        raise InputDataError("need a compare_models table (bad_k and num_observations columns)")
    flagged = table["bad_k"] > 0
    if not bool(flagged.any()):
        return (
            f"PSIS-LOO is reliable: every Pareto k <= {PARETO_K_THRESHOLD} for every model, so "
            "the elpd differences can be compared against their standard errors."
        )
    share = table["bad_k"] / table["num_observations"]
    parts = [f"{name} ({share[name]:.0%} of observations)" for name in table.index[flagged]]
    scope = "any model" if bool(flagged.all()) else ", ".join(parts)
    detail = "; ".join(parts) if bool(flagged.all()) else ""
    return (
        f"PSIS-LOO is NOT reliable for {scope}: Pareto k > {PARETO_K_THRESHOLD}"
        + (f" for {detail}" if detail else "")
        + ". Their elpd values and ranking are not evidence; use more posterior draws or "
        "K-fold cross-validation (refit without each fold)."
    )
