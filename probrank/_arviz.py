"""The one place that knows which ArviZ line is installed: 0.x or 1.x.

Python 3.11 installs ArviZ 0.23 (one package, ``InferenceData``); Python 3.12+ installs
ArviZ 1.x (``arviz-base``/``arviz-stats``/``arviz-plots``, xarray's ``DataTree``). Everything
in probrank that touches ArviZ goes through this module, which calls the installed line with
its own keywords and returns its own objects, so a user gets the tables and containers of the
ArviZ they have:

==========================  =================================  ===============================
what                        ArviZ 0.x                          ArviZ 1.x
==========================  =================================  ===============================
container                   ``arviz.InferenceData``            ``xarray.DataTree``
``from_dict``               one keyword per group              ``{group: {var: array}}``
summary interval            HDI, ``hdi_prob`` = 0.94,          ETI, ``ci_prob`` = 0.89
                            ``hdi_3%``/``hdi_97%``             (``ci_kind``), ``eti89_lb``/
                                                               ``eti89_ub``
summary rounding            2 decimals                         ``"auto"`` (by MCSE)
``hdi``/``eti`` mass        ``hdi_prob=``; no ``eti``          ``prob=``
``loo`` fields              ``elpd_loo``, ``p_loo``            ``elpd``, ``p``; refuses fewer
                                                               than 5 tail draws
``compare`` columns         ``elpd_loo``, ``p_loo``, ``scale``  ``elpd``, ``p``, ``p_worse``
PSIS of log weights         ``arviz.psislw(lw, reff)``         ``arviz_stats.base.array_stats.
                                                               psislw(-lw, r_eff)`` (takes
                                                               log-likelihoods: minus the log
                                                               importance ratios)
PIT-ECDF plot               ``plot_ecdf(..., pit=True)``       arviz-plots' ``plot_ecdf_pit``
==========================  =================================  ===============================

Why a module of probrank's own and not ``arviz`` everywhere: the two lines differ in
keywords, containers and columns, and both are current (0.x is the last line for Python
3.11). It lives at the package's root (not in :mod:`probrank.diagnostics`) because the
Bayesian comparison in :mod:`probrank.evaluation` needs ESS and R-hat, and
:mod:`probrank.diagnostics` already imports :mod:`probrank.evaluation` (its plots); it imports
nothing of probrank's but :mod:`probrank.exceptions`.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from probrank.exceptions import InputDataError

with warnings.catch_warnings():
    # ArviZ 0.23 warns once a day at import ("ArviZ is undergoing a major refactor ...",
    # FutureWarning) about its own coming 1.0 line; it concerns no call of probrank's, which
    # speaks both lines. Only that message is filtered, and only around this import.
    warnings.filterwarnings(
        "ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning
    )
    import arviz as _installed_arviz

arviz: Any = _installed_arviz
"""The installed ``arviz`` module, typed ``Any``: its signatures differ between the lines, so
the type checker (run on one line) cannot check calls meant for the other."""

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "ARVIZ_1",
    "ARVIZ_VERSION",
    "GROUPS",
    "LooFields",
    "arviz",
    "build",
    "compare",
    "container_type",
    "default_interval",
    "ess",
    "eti",
    "get_group",
    "group_names",
    "has_group",
    "hdi",
    "interval_column_names",
    "interval_columns",
    "is_arviz_data",
    "loo",
    "pit_ecdf_figure",
    "psis",
    "rhat",
    "summary",
    "to_dataset",
]

ARVIZ_VERSION: str = str(arviz.__version__)
"""The installed ArviZ's version."""

ARVIZ_1: bool = int(ARVIZ_VERSION.split(".")[0]) >= 1
"""Whether the installed ArviZ is of the 1.x line."""

GROUPS = (
    "posterior",
    "posterior_predictive",
    "log_likelihood",
    "sample_stats",
    "observed_data",
    "constant_data",
)
"""Groups :func:`build` knows, in ArviZ's order."""


def container_type() -> type:
    """The installed line's container: ``InferenceData`` (0.x) or ``xarray.DataTree`` (1.x)."""
    if ARVIZ_1:
        return xr.DataTree
    return arviz.InferenceData


def build(
    groups: Mapping[str, Mapping[str, np.ndarray]],
    *,
    dims: Mapping[str, Sequence[str]] | None = None,
    coords: Mapping[str, Sequence[Any]] | None = None,
    attrs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Any:
    """ArviZ data from ``{group: {var: array}}`` through the installed ``arviz.from_dict``.

    Args:
        groups: Group name (one of :data:`GROUPS`) to variables; sampled groups are
            `chains x draws x *shape`, ``observed_data``/``constant_data`` are `*shape`.
        dims: Names of each variable's dims after ``chain`` and ``draw``.
        coords: Coordinates of the named dims.
        attrs: ``{group: {name: value}}`` added to those groups' attrs (after ArviZ's own;
            the lines' ``from_dict(attrs=...)`` differ, so they are set afterwards).

    Returns:
        ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x), with the non-empty groups.
    """
    unknown = set(groups) - set(GROUPS)
    if unknown:
        raise InputDataError(f"unknown ArviZ groups {sorted(unknown)}; known: {list(GROUPS)}")
    kept = {name: dict(values) for name, values in groups.items() if values}
    dim_map = {k: list(v) for k, v in (dims or {}).items()}
    coord_map = {k: list(v) for k, v in (coords or {}).items()}
    if ARVIZ_1:
        data = arviz.from_dict(kept, dims=dim_map, coords=coord_map)
    else:
        data = arviz.from_dict(**kept, dims=dim_map, coords=coord_map)
    for group, values in (attrs or {}).items():
        if group not in kept:
            raise InputDataError(f"attrs for {group!r}, a group the data does not hold")
        data[group].attrs.update(values)
    return data


def is_arviz_data(value: object) -> bool:
    """Whether ``value`` is the installed line's container."""
    return isinstance(value, container_type())


def group_names(data: Any) -> list[str]:
    """The groups ``data`` holds, in its order."""
    if ARVIZ_1:
        return [str(name) for name in data.children]
    return [str(name) for name in data.groups()]


def has_group(data: Any, group: str) -> bool:
    """Whether ``data`` holds ``group``."""
    return group in group_names(data)


def get_group(data: Any, group: str) -> xr.Dataset:
    """One group of ``data`` as an ``xarray.Dataset``.

    Raises:
        InputDataError: ``data`` has no such group.
    """
    if not has_group(data, group):
        raise InputDataError(f"the ArviZ data has no {group!r} group")
    if ARVIZ_1:
        return data[group].to_dataset()
    return data[group]


def default_interval() -> tuple[float, str]:
    """``(mass, kind)`` of the installed line's credible interval: ``rcParams["stats.ci_prob"]``
    and an HDI on 0.x (``(0.94, "hdi")``), ``rcParams["stats.ci_prob"]`` and
    ``["stats.ci_kind"]`` on 1.x (``(0.89, "eti")``)."""
    if ARVIZ_1:
        return float(arviz.rcParams["stats.ci_prob"]), str(arviz.rcParams["stats.ci_kind"])
    return float(arviz.rcParams["stats.ci_prob"]), "hdi"  # 0.x: hdi_prob's new name


def _check_prob(prob: float | None) -> None:
    if prob is not None and not 0 < prob < 1:
        raise InputDataError(f"interval mass must be in (0, 1), got {prob}")


def summary(
    data: Any,
    *,
    var_names: Sequence[str] | None,
    group: str,
    ci_prob: float | None,
    ci_kind: str | None,
    kind: str,
    round_to: int | str | None,
    **options: Any,
) -> Any:
    """The installed ``arviz.summary`` with its own keywords.

    ``ci_prob``/``ci_kind``/``round_to`` None mean the installed line's defaults; ArviZ 0.x
    has HDIs only (``ci_kind="eti"`` is refused there).
    """
    _check_prob(ci_prob)
    if ARVIZ_1:
        return arviz.summary(
            _without_summary_dim(data, group),
            var_names=var_names,
            group=group,
            ci_prob=ci_prob,
            ci_kind=ci_kind,
            kind=kind,
            round_to="auto" if round_to is None else round_to,
            **options,
        )
    if ci_kind not in (None, "hdi"):
        raise InputDataError(f"ArviZ {ARVIZ_VERSION}'s summary has HDIs only, not {ci_kind!r}")
    quiet = _QuietShapeCheck()
    logger: logging.Logger = getattr(arviz, "_log", None) or logging.getLogger("arviz")
    logger.addFilter(quiet)
    try:
        return arviz.summary(
            data,
            var_names=var_names,
            group=group,
            hdi_prob=ci_prob,
            kind=kind,
            round_to=round_to,
            **options,
        )
    finally:
        logger.removeFilter(quiet)


class _QuietShapeCheck(logging.Filter):
    """Drops ArviZ 0.x's "Shape validation failed" log line for one-chain draws (SVI,
    Laplace), where R-hat is NaN by definition and the table says so (1.x logs nothing)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Shape validation failed" not in record.getMessage()


def _without_summary_dim(data: Any, group: str) -> Any:
    """``data`` with a variable dim named ``summary`` renamed (1.x's summary stacks its
    statistics along a dim of that name and fails with "Dimension summary already exists");
    row labels use coordinate values, not dim names, so the table is unchanged."""
    dataset = get_group(data, group)
    if "summary" not in dataset.dims:
        return data
    renamed = data.copy()
    renamed[group] = xr.DataTree(dataset.rename({"summary": "summary_"}))
    return renamed


def interval_column_names(prob: float | None = None, kind: str | None = None) -> tuple[str, str]:
    """The names the installed ``arviz.summary`` gives an interval's two columns.

    Args:
        prob: The mass (default the installed line's).
        kind: ``"hdi"`` or ``"eti"`` (1.x only; default the installed line's).

    Returns:
        0.x: ``("hdi_3%", "hdi_97%")`` for 0.94; 1.x: ``("eti89_lb", "eti89_ub")`` for an
        0.89 ETI.
    """
    default_prob, default_kind = default_interval()
    mass = default_prob if prob is None else prob
    if ARVIZ_1:
        label = f"{kind or default_kind}{int(mass * 100)}"  # arviz-stats truncates
        return f"{label}_lb", f"{label}_ub"
    return f"hdi_{100 * (1 - mass) / 2:g}%", f"hdi_{100 * (1 + mass) / 2:g}%"


def interval_columns(table: pd.DataFrame) -> tuple[str, str]:
    """The credible interval's two columns of a summary table (lower first): ``hdi_3%`` and
    ``hdi_97%`` on 0.x, ``eti89_lb`` and ``eti89_ub`` (or ``hdi..``) on 1.x."""
    names = [str(c) for c in table.columns]
    lower = [c for c in names if c.endswith("_lb") or (c.startswith("hdi_") and c.endswith("%"))]
    upper = [c for c in names if c.endswith("_ub")]
    if upper and len(lower) == 1 and len(upper) == 1:
        return lower[0], upper[0]
    if not upper and len(lower) == 2:
        return lower[0], lower[1]
    raise InputDataError(f"need a summary table with one credible interval, got columns {names}")


def hdi(values: np.ndarray, prob: float | None = None) -> np.ndarray:
    """Highest-density interval of one-dimensional draws by the installed ``arviz.hdi``.

    Args:
        values: `n` draws.
        prob: Mass in ``(0, 1)``; None: the installed line's default.

    Returns:
        `2` (lower, upper).
    """
    _check_prob(prob)
    if ARVIZ_1:
        return np.asarray(arviz.hdi(values, prob=prob))
    return np.asarray(arviz.hdi(values, hdi_prob=prob))


def eti(values: np.ndarray, prob: float | None = None) -> np.ndarray:
    """Equal-tailed interval of one-dimensional draws: the installed ``arviz.eti`` (1.x), or
    the ``(1 - prob) / 2`` and ``(1 + prob) / 2`` quantiles (0.x has no ``eti``; 1.x's default
    quantile method is NumPy's ``linear``, the same numbers).

    Args:
        values: `n` draws.
        prob: Mass in ``(0, 1)``; None: the installed line's default mass.

    Returns:
        `2` (lower, upper).
    """
    _check_prob(prob)
    if ARVIZ_1:
        return np.asarray(arviz.eti(values, prob=prob))
    mass = default_interval()[0] if prob is None else prob
    return np.quantile(np.asarray(values, np.float64), [(1 - mass) / 2, (1 + mass) / 2])


@dataclass(frozen=True)
class LooFields:
    """PSIS-LOO of one model in the line-independent names.

    Attributes:
        elpd: ``elpd_loo`` (0.x) / ``elpd`` (1.x).
        se: Its standard error.
        p: ``p_loo`` (0.x) / ``p`` (1.x).
        pareto_k: `n` Pareto shape estimates, one per observation.
    """

    elpd: float
    se: float
    p: float
    pareto_k: np.ndarray


def loo(data: Any, *, var_name: str | None, reff: float | None) -> LooFields:
    """The installed ``arviz.loo`` (pointwise), in :class:`LooFields`.

    Observations whose log-likelihood is the same in every draw (a point posterior, or a
    site the parameters do not touch) have an exact leave-one-out value: the importance
    ratios are all equal, so ``elpd_i`` is that log-likelihood and ``p_i`` is 0. ArviZ 0.x
    computes that itself (with ``k = inf``); 1.x refuses such data ("All tail values are the
    same"), so on 1.x they are left out of its call, given their exact values and ``k = inf``
    (as 0.x), and ``se`` is recomputed over all observations as ArviZ computes it
    (``sqrt(n var(elpd_i))``, ``ddof=1``). Elsewhere the numbers are ArviZ's own.

    Raises:
        InputDataError: the installed ArviZ refuses the data (1.x: fewer than 5 draws in the
            Pareto tail, i.e. fewer than about 25 draws).
    """
    try:
        if ARVIZ_1:
            return _loo_1x(data, var_name, reff)
        result = arviz.loo(data, pointwise=True, var_name=var_name, reff=reff)
    except ValueError as error:
        raise InputDataError(f"ArviZ {ARVIZ_VERSION} cannot compute PSIS-LOO: {error}") from error
    k = np.asarray(result.pareto_k, np.float64).reshape(-1)
    return LooFields(float(result["elpd_loo"]), float(result.se), float(result["p_loo"]), k)


def _loo_1x(data: Any, var_name: str | None, reff: float | None) -> LooFields:
    group = get_group(data, "log_likelihood")
    name = var_name if var_name is not None else str(next(iter(group.data_vars)))
    values = group[name].transpose("chain", "draw", ...)
    chains, draws = values.sizes["chain"], values.sizes["draw"]
    flat = np.asarray(values.values, np.float64).reshape(chains * draws, -1)
    constant = np.all(flat == flat[:1], axis=0)
    if not constant.any():
        result = arviz.loo(data, pointwise=True, var_name=var_name, reff=reff)
        k = np.asarray(result.pareto_k.values, np.float64).reshape(-1)
        return LooFields(float(result.elpd), float(result.se), float(result.p), k)
    pointwise = flat[0].copy()
    k = np.full(flat.shape[1], np.inf)
    p = 0.0
    if not constant.all():
        kept = flat[:, ~constant].reshape(chains, draws, -1)
        subset = data.copy()
        subset["log_likelihood"] = xr.DataTree(
            xr.Dataset({name: (("chain", "draw", "observation"), kept)})
        )
        result = arviz.loo(subset, pointwise=True, var_name=name, reff=reff)
        pointwise[~constant] = np.asarray(result.elpd_i.values, np.float64).reshape(-1)
        k[~constant] = np.asarray(result.pareto_k.values, np.float64).reshape(-1)
        p = float(result.p)
    se = float(np.sqrt(pointwise.size * np.var(pointwise, ddof=1))) if pointwise.size > 1 else 0.0
    return LooFields(float(pointwise.sum()), se, p, k)


def compare(models: Mapping[str, Any], *, var_name: str | None) -> pd.DataFrame:
    """The installed ``arviz.compare`` table of ``{name: data}`` (its own columns)."""
    with warnings.catch_warnings():
        # ArviZ 0.23's compare sorts with DataFrame.sort_values(inplace=True), which pandas 3
        # deprecates (Pandas4Warning); only that message is filtered, only around this call.
        warnings.filterwarnings("ignore", message="The inplace keyword in DataFrame.sort_values")
        return arviz.compare(dict(models), var_name=var_name)


def psis(log_weights: np.ndarray, *, reff: float = 1.0) -> tuple[np.ndarray, float]:
    """Pareto-smoothed importance sampling (Vehtari et al. 2024) of one vector of log
    importance ratios, by the installed ArviZ.

    ArviZ 0.x: ``arviz.psislw(log_weights, reff)``. ArviZ 1.x has no top-level ``psislw``;
    arviz-stats' array interface ``array_stats.psislw`` smooths the ratios ``exp(-x)`` of
    the log-likelihoods ``x`` it is given (as PSIS-LOO needs), so it is called with
    ``-log_weights``. Both smooth the largest ratios by the fitted generalized Pareto's
    quantiles, truncate them and normalise.

    Args:
        log_weights: `n` log importance ratios (any additive constant), finite.
        reff: Relative efficiency of the draws (1: independent draws).

    Returns:
        ``(smoothed, k_hat)``: `n` normalised log weights (``logsumexp = 0``) and the Pareto
        shape estimate (above 0.7: the estimates are unreliable).

    Raises:
        InputDataError: not a finite vector of at least 2 values.
    """
    ratios = np.asarray(log_weights, np.float64)
    if ratios.ndim != 1 or len(ratios) < 2 or not np.all(np.isfinite(ratios)):
        raise InputDataError("PSIS needs a finite vector of at least 2 log importance ratios")
    ratios = ratios - ratios.max()
    if ARVIZ_1:
        from arviz_stats.base import array_stats

        smoothed, khat = array_stats.psislw(-ratios, r_eff=reff)
    else:
        smoothed, khat = arviz.psislw(ratios, reff=reff)
    return np.asarray(smoothed, np.float64), float(khat)


def to_dataset(arrays: Mapping[str, np.ndarray]) -> xr.Dataset:
    """``{name: chains x draws x ...}`` as an ``xarray.Dataset`` (``arviz.convert_to_dataset``)."""
    return arviz.convert_to_dataset(dict(arrays))


def ess(dataset: xr.Dataset, *, method: str) -> xr.Dataset:
    """The installed ``arviz.ess`` of a `chain x draw` dataset (``"bulk"`` or ``"tail"``)."""
    return arviz.ess(dataset, method=method)


def rhat(dataset: xr.Dataset) -> xr.Dataset:
    """The installed ``arviz.rhat`` (rank-normalised split R-hat) of a `chain x draw` dataset."""
    return arviz.rhat(dataset, method="rank")


def pit_ecdf_figure(pit: Mapping[str, np.ndarray], *, prob: float = 0.95) -> Figure:
    """PIT-ECDF difference plots, one panel per quantity, drawn by the installed ArviZ.

    Each panel is the empirical CDF of probability-integral-transform values minus the
    uniform CDF (Säilynoja, Bürkner and Vehtari 2022), the plot ArviZ users know from SBC and
    LOO-PIT checks. ArviZ 1.x: arviz-plots' ``plot_ecdf_pit`` with its default simultaneous
    uniformity test (``method="pot_c"`` at level ``1 - prob``: points outside its region
    are marked and the panel shows the test's p-value; its ``"envelope"`` method fails in
    arviz-plots 1.3.2). ArviZ 0.x: ``plot_ecdf(..., difference=True, confidence_bands=True)``
    against the uniform CDF, with the simultaneous ``prob`` band.

    Args:
        pit: ``{name: N values in [0, 1]}`` (SBC: normalised ranks).
        prob: The simultaneous band's mass (0.x) / ``1 -`` the test's level α (1.x).

    Returns:
        The matplotlib figure (the caller saves and closes it).
    """
    _check_prob(prob)
    if not pit:
        raise InputDataError("no PIT values to plot")
    values = {name: np.asarray(v, np.float64).reshape(1, -1) for name, v in pit.items()}
    if ARVIZ_1:
        tree = arviz.from_dict({"prior_sbc": values})
        collection = arviz.plot_ecdf_pit(tree, backend="matplotlib", envelope_prob=prob)
        figure = collection.viz["figure"].item()
        for ax in figure.axes:  # arviz-plots 1.3 can clip a curve: rescale, keep the p-value in
            ax.relim()
            ax.autoscale(axis="y")
            top = ax.get_ylim()[1]
            for text in ax.texts:
                text.set_y(top)
                text.set_verticalalignment("top")
        return figure
    import matplotlib.pyplot as plt
    from scipy import stats

    count = len(values)
    figure, axes = plt.subplots(1, count, figsize=(3.0 * count, 2.6), squeeze=False)
    grid = np.linspace(0.0, 1.0, 101)
    for ax, (name, draws) in zip(axes[0], values.items(), strict=True):
        rng = np.random.default_rng(0)  # the band's simulation: same figure on every call

        def uniform(n: int, random_state: Any = None, rng: np.random.Generator = rng) -> Any:
            return rng.uniform(size=n)

        arviz.plot_ecdf(
            draws.ravel(),
            cdf=stats.uniform(0.0, 1.0).cdf,
            difference=True,
            confidence_bands=True,
            ci_prob=prob,
            eval_points=grid,
            rvs=uniform,
            ax=ax,
        )
        ax.set_title(name, fontsize=9)
    figure.tight_layout()
    return figure
