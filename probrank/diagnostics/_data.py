"""Reading ArviZ data into arrays: draws as NumPy, groups flattened to labelled parameters.

Nothing here depends on the ArviZ line: building data and reading a group go through
:mod:`probrank._arviz`, the one module that knows which line is installed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr
from torch import Tensor

from probrank._arviz import get_group
from probrank.exceptions import InputDataError

__all__ = [
    "as_numpy",
    "flat_parameters",
    "num_chains",
    "parameter_label",
]


def as_numpy(value: Tensor | np.ndarray | float | Sequence[Any]) -> np.ndarray:
    """A tensor or array-like as a NumPy array (detached, on the CPU)."""
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


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
