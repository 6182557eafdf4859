"""Posterior draws (SVI guide samples, MCMC chains) to ArviZ, and their summaries.

:func:`to_inference_data` goes through :func:`arviz.from_dict`, which exists in ArviZ 0.x
(``InferenceData``) and 1.x (``DataTree``). Draws are given as ``{name: chains x draws x
*shape}``; guide samples, which have no chains, are passed with ``chains=False`` and get one
chain. Named dims and coords make the output layer's weights readable (``hidden`` unit,
``output``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import arviz as az
import numpy as np
import pandas as pd
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = ["output_layer_dims", "summary", "to_inference_data"]


def output_layer_dims(
    prefix: str, in_features: int, out_features: int
) -> tuple[dict[str, list[str]], dict[str, Sequence[Any]]]:
    """Dims and coords for a :class:`~probrank.nn.bayesian_linear.BayesianLinear` layer.

    Args:
        prefix: The layer's site prefix (e.g. ``"output"`` for sites ``output.weight``).
        in_features: ``d``.
        out_features: ``o``.

    Returns:
        ``(dims, coords)`` for :func:`to_inference_data`: the weight has dims
        ``("output", "hidden")`` and the bias ``("output",)``.
    """
    dims = {f"{prefix}.weight": ["output", "hidden"], f"{prefix}.bias": ["output"]}
    coords: dict[str, Sequence[Any]] = {
        "output": list(range(out_features)),
        "hidden": list(range(in_features)),
    }
    return dims, coords


def to_inference_data(
    draws: Mapping[str, Tensor | np.ndarray],
    *,
    chains: bool = True,
    dims: Mapping[str, Sequence[str]] | None = None,
    coords: Mapping[str, Sequence[Any]] | None = None,
    posterior_predictive: Mapping[str, Tensor | np.ndarray] | None = None,
    observed_data: Mapping[str, Tensor | np.ndarray] | None = None,
) -> Any:
    """Convert posterior draws to ArviZ data.

    Args:
        draws: ``{name: chains x draws x *shape}`` (or ``draws x *shape`` with
            ``chains=False``) tensors or arrays.
        chains: Whether the first dimension indexes chains.
        dims: Names of each variable's dims after ``chain`` and ``draw``.
        coords: Coordinates of the named dims.
        posterior_predictive: Predictive draws, same layout as ``draws``.
        observed_data: Observations, without chain/draw dims.

    Returns:
        An ``arviz.InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x) with a ``posterior`` group.

    Raises:
        InputDataError: no draws, or draws whose chain/draw dims disagree.
    """
    if not draws:
        raise InputDataError("no posterior draws to convert")

    def prepare(group: Mapping[str, Tensor | np.ndarray]) -> dict[str, np.ndarray]:
        out = {}
        for name, value in group.items():
            array = value.detach().cpu().numpy() if isinstance(value, Tensor) else np.asarray(value)
            out[name] = array if chains else array[None]
        return out

    posterior = prepare(draws)
    lead = {v.shape[:2] for v in posterior.values()}
    if len(lead) != 1:
        raise InputDataError(f"draws disagree on (chain, draw) dims: {sorted(lead)}")
    kwargs: dict[str, Any] = {
        "posterior": posterior,
        "dims": {k: list(v) for k, v in (dims or {}).items()},
        "coords": {k: list(v) for k, v in (coords or {}).items()},
    }
    if posterior_predictive is not None:
        kwargs["posterior_predictive"] = prepare(posterior_predictive)
    if observed_data is not None:
        kwargs["observed_data"] = {
            k: v.detach().cpu().numpy() if isinstance(v, Tensor) else np.asarray(v)
            for k, v in observed_data.items()
        }
    return az.from_dict(**kwargs)


def summary(
    data: Any, *, hdi_prob: float = 0.9, var_names: Sequence[str] | None = None
) -> pd.DataFrame:
    """Means, standard deviations, HDIs and, with two or more chains, R-hat and ESS.

    Args:
        data: The output of :func:`to_inference_data`.
        hdi_prob: Mass of the highest-density interval.
        var_names: Variables to summarise (default: all).

    Returns:
        One row per scalar parameter: ``mean``, ``sd``, ``hdi_low``, ``hdi_high`` and, when
        the draws have several chains (MCMC), ``ess_bulk``, ``ess_tail``, ``r_hat``.
    """
    if not 0 < hdi_prob < 1:
        raise InputDataError(f"hdi_prob must be in (0, 1), got {hdi_prob}")
    chains = int(data.posterior.sizes["chain"])
    kind: Any = "all" if chains > 1 else "stats"
    table: Any = az.summary(
        data, var_names=list(var_names) if var_names else None, hdi_prob=hdi_prob, kind=kind
    )
    low, high = (c for c in table.columns if c.startswith("hdi_"))
    table = table.rename(columns={low: "hdi_low", high: "hdi_high"})
    keep = ["mean", "sd", "hdi_low", "hdi_high"]
    if chains > 1:
        keep += ["ess_bulk", "ess_tail", "r_hat"]
    return pd.DataFrame(table[keep])
