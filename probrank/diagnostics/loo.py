"""PSIS-LOO of fitted models and their comparison, through ArviZ.

Pareto-smoothed importance-sampling leave-one-out cross-validation (Vehtari, Gelman and Gabry
2017) estimates each model's expected log pointwise predictive density ``elpd_loo`` from the
``log_likelihood`` group (e.g. built by :func:`~probrank.diagnostics.from_pyro`). Models are
compared on the same observations: the higher ``elpd``, the better; a difference is credible
when it is several times its standard error ``dse``. Pareto ``k`` above 0.7 flags
observations whose estimate is unreliable.

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

__all__ = ["LooResult", "compare_models", "loo"]

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
        return int((self.pareto_k > 0.7).sum())


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
        ``warning``.
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
    return out
