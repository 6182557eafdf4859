"""ArviZ data access that works with ArviZ 0.x (``InferenceData``) and 1.x (``DataTree``).

Everything else in :mod:`probrank.diagnostics` reads ArviZ data through these helpers, so
the version differences live in one place:

* building: ``az.from_dict(posterior=..., ...)`` in 0.x, ``az.from_dict({"posterior": ...})``
  in 1.x;
* reading a group: ``data[group]`` exists in both; a 1.x group is a ``DataTree`` node that
  becomes an ``xarray.Dataset`` through ``to_dataset()``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import arviz as az
import numpy as np
import xarray as xr
from torch import Tensor

from probrank.exceptions import InputDataError

__all__ = [
    "as_numpy",
    "build",
    "flat_parameters",
    "get_group",
    "has_group",
    "is_arviz_data",
    "num_chains",
    "parameter_label",
]

GROUPS = (
    "posterior",
    "posterior_predictive",
    "log_likelihood",
    "sample_stats",
    "observed_data",
    "constant_data",
)
"""Groups :func:`build` knows, in ArviZ's order."""


def as_numpy(value: Tensor | np.ndarray | float | Sequence[Any]) -> np.ndarray:
    """A tensor or array-like as a NumPy array (detached, on the CPU)."""
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _takes_group_keywords() -> bool:
    """True for ArviZ 0.x, whose ``from_dict`` takes one keyword per group."""
    return "posterior" in inspect.signature(az.from_dict).parameters


def build(
    groups: Mapping[str, Mapping[str, np.ndarray]],
    *,
    dims: Mapping[str, Sequence[str]] | None = None,
    coords: Mapping[str, Sequence[Any]] | None = None,
) -> Any:
    """ArviZ data from ``{group: {var: array}}`` through :func:`arviz.from_dict`.

    Args:
        groups: Group name (one of :data:`GROUPS`) to variables; sampled groups are
            `chains x draws x *shape`, ``observed_data``/``constant_data`` are `*shape`.
        dims: Names of each variable's dims after ``chain`` and ``draw``.
        coords: Coordinates of the named dims.

    Returns:
        ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x).
    """
    unknown = set(groups) - set(GROUPS)
    if unknown:
        raise InputDataError(f"unknown ArviZ groups {sorted(unknown)}; known: {list(GROUPS)}")
    kept = {name: dict(values) for name, values in groups.items() if values}
    dim_map = {k: list(v) for k, v in (dims or {}).items()}
    coord_map = {k: list(v) for k, v in (coords or {}).items()}
    if _takes_group_keywords():
        return az.from_dict(**kept, dims=dim_map, coords=coord_map)  # type: ignore[arg-type]
    return az.from_dict(kept, dims=dim_map, coords=coord_map)  # pragma: no cover - ArviZ 1.x


def is_arviz_data(value: object) -> bool:
    """Whether ``value`` is ArviZ data (``InferenceData`` or an ``xarray.DataTree``)."""
    kinds: tuple[type, ...] = tuple(
        t for t in (getattr(az, "InferenceData", None), getattr(xr, "DataTree", None)) if t
    )
    return isinstance(value, kinds)


def has_group(data: Any, group: str) -> bool:
    """Whether ``data`` holds ``group``."""
    groups = data.groups() if callable(getattr(data, "groups", None)) else data.children
    return group in {str(g).strip("/") for g in groups}


def get_group(data: Any, group: str) -> xr.Dataset:
    """One group of ``data`` as an ``xarray.Dataset``.

    Raises:
        InputDataError: ``data`` has no such group.
    """
    if not has_group(data, group):
        raise InputDataError(f"the ArviZ data has no {group!r} group")
    node = data[group]
    return node.to_dataset() if hasattr(node, "to_dataset") else node


def num_chains(data: Any) -> int:
    """Chains in the posterior group."""
    return int(get_group(data, "posterior").sizes["chain"])


def parameter_label(name: str, index: Sequence[Any]) -> str:
    """``name[i, j]`` (ArviZ's row labels), or ``name`` for a scalar."""
    return f"{name}[{', '.join(str(i) for i in index)}]" if len(index) else name


def flat_parameters(
    dataset: xr.Dataset, var_names: Sequence[str] | None = None
) -> dict[str, np.ndarray]:
    """Every scalar component of every variable, as `chains x draws` arrays.

    Args:
        dataset: A sampled group (dims ``chain``, ``draw``, then the variable's own).
        var_names: Variables to keep (default: all, in the dataset's order).

    Returns:
        ``{label: chains x draws}`` with labels ``name[coord, ...]`` in C order.
    """
    names = list(var_names) if var_names is not None else [str(v) for v in dataset.data_vars]
    missing = [n for n in names if n not in dataset.data_vars]
    if missing:
        raise InputDataError(f"no variable(s) {missing} in the ArviZ data")
    out: dict[str, np.ndarray] = {}
    for name in names:
        array = dataset[name].transpose("chain", "draw", ...)
        extra = [d for d in array.dims if d not in ("chain", "draw")]
        values = array.values
        labels = [array.coords[d].values if d in array.coords else range(array.sizes[d])
                  for d in extra]  # fmt: skip
        for position in np.ndindex(*values.shape[2:]):
            index = [labels[k][p] for k, p in enumerate(position)]
            out[parameter_label(name, index)] = values[(slice(None), slice(None), *position)]
    return out
