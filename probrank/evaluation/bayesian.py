"""Bayesian comparison of runs: how sure are we that system B beats system A, and by how much?

:func:`bayesian_compare` reads per-topic values with trec_eval 10's semantics
(:meth:`~probrank.evaluation.Evaluator.per_query`), draws from the posterior of each system's
expected measure, and reports, per measure and for each run against the first: the posterior
mean difference, a 95% credible interval, P(B > A) and ``P(|B - A| < ROPE)``; for all runs at once,
pairwise P(row better than column) and P(each run is best).

**Model** (``likelihood``, :class:`~probrank.evaluation.bayesian_model.Likelihood`). The
default, ``"paired"`` (:mod:`probrank.evaluation.bayesian_exact`), models the vector of the
systems' values on a topic as a multivariate normal with an unstructured covariance and a
reference prior; its posterior is a multivariate t drawn exactly (no MCMC, milliseconds), and
every pairwise difference has exactly the paired t-test's posterior. It was chosen by simulation
from real Robust03 and CLEF TAR per-topic values (``benchmarks/bayesian_compare_sim.py``):
of the candidates run on every case, the only one that covered the true difference 93-97% of
the time with a bias under 0.005 on all of them, identical runs included. ``"bootstrap"``
(Bayesian bootstrap, exact) and the hierarchical model of
:mod:`probrank.evaluation.bayesian_model` (``"normal"``, Carterette's linear model, and
``"truncated-normal"``, sampled with NUTS) remain as options; in the simulation the truncated
normal diverged in 3 of 4 NUTS fits, identical runs included (see ``docs/guide/comparison.md``).

**ROPE.** The region of practical equivalence defaults to 0.01 on the measure's own scale
(:data:`DEFAULT_ROPE`): 3% of a typical Robust03 MAP (0.3), below the 5% that Sparck Jones
(1974) called a noticeable difference for measures above 0.2, and the size of difference that
four printed digits still show reliably. ``P(|B - A| < 0.01)`` near 1 says the runs are
practically the same; ``rope`` changes it.

**Sampling** (hierarchical likelihoods only). NUTS (:class:`pyro.infer.NUTS`) on the model's
potential written out in NumPy (:mod:`probrank.evaluation.bayesian_potential`; it equals
Pyro's potential of :func:`~probrank.evaluation.bayesian_model.comparison_model`, a test
checks, and is several times cheaper per gradient) runs its chains one after another
(:mod:`probrank.evaluation.bayesian_sampler`), each with its own seed (``seed + chain``) and
start. All measures share one run of the sampler (a ``measures`` plate). Exact likelihoods
draw ``num_chains x num_samples`` independent draws (4 x 2,500 unless told; ``warmup_steps``
unused).

**Convergence.** Rank-normalised split R-hat at most 1.01, bulk and tail ESS of at least 400 and
no divergent transitions (the thresholds of :func:`probrank.diagnostics.check_convergence`)
for the reported quantities, each system's expected measure (and the system effects of the
hierarchical model), checked for every likelihood, exact draws included; each failed criterion
is named in a :class:`~probrank.exceptions.ConvergenceWarning` and in
:attr:`Convergence.messages`. ArviZ is called directly because :mod:`probrank.diagnostics` sits
above :mod:`probrank.evaluation` in the import graph; ``result.samples`` (every latent site,
``chains x draws x ...``) goes to ``probrank.diagnostics.from_draws`` for summaries and trace
plots.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from probrank._options import parse_enum
from probrank.data.trec import Qrels, Run
from probrank.evaluation.bayesian_convergence import Convergence, check_draws
from probrank.evaluation.bayesian_exact import EXACT_SAMPLERS
from probrank.evaluation.bayesian_likelihood import Likelihood
from probrank.evaluation.measures import DEFAULT_MEASURES, Evaluator
from probrank.exceptions import ConvergenceWarning, InputDataError

if TYPE_CHECKING:
    import torch

    from probrank.evaluation.bayesian_model import ComparisonPriors

__all__ = [
    "DEFAULT_ROPE",
    "BayesianComparison",
    "Convergence",
    "PairSummary",
    "bayesian_compare",
    "bayesian_compare_scores",
    "bayesian_measures",
    "fit_comparison",
]

DEFAULT_ROPE = 0.01
"""Default half-width of the region of practical equivalence (see the module docstring)."""

EXACT_DRAWS = 2500
"""Default draws per chain of the exact likelihoods: 4 x 2,500 put the interval endpoints
within about 0.02 posterior standard deviations of the exact quantiles."""
NUTS_DRAWS = 500
"""Default draws per chain kept by NUTS (after 300 warm-up steps)."""

_UNMODELLED_FAMILIES = ("NumQ", "GMAP")


@dataclass(frozen=True)
class PairSummary:
    """The posterior of one difference ``B - A`` of expected measures.

    Attributes:
        mean_difference: Posterior mean of ``B - A``.
        interval: Equal-tailed credible interval ``(low, high)``.
        p_better: ``P(B > A)`` (ties, which only identical draws give, count half).
        p_equivalent: ``P(|B - A| < rope)``.
        observed_difference: The observed mean difference over the same topics.
    """

    mean_difference: float
    interval: tuple[float, float]
    p_better: float
    p_equivalent: float
    observed_difference: float

    def as_json(self) -> dict[str, Any]:
        """``{"mean_difference", "interval": [lo, hi], "p_better", "p_equivalent"}``."""
        return {
            "mean_difference": self.mean_difference,
            "interval": list(self.interval),
            "p_better": self.p_better,
            "p_equivalent": self.p_equivalent,
        }


@dataclass(frozen=True)
class BayesianComparison:
    """Posterior of each system's expected measure over the topics, and what follows from it.

    Attributes:
        systems: Run names; the first is the baseline.
        measures: Measure names.
        num_topics: Topics every run was evaluated on.
        observed: `M x S` observed means over those topics.
        draws: `chains x draws x M x S` posterior draws of the expected measures.
        samples: Latent sites, ``{site: chains x draws x *shape}`` (``z``: `M x (S - 1)`
            effect coordinates, ``topic``: `M x T`, ``level``/``topic_scale``/``noise``: `M`).
        rope: Half-width of the region of practical equivalence.
        interval: Mass of the credible intervals.
        likelihood: The model's likelihood.
        convergence: R-hat, ESS and divergences of the reported quantities.
        method: ``"exact"`` (independent draws) or ``"NUTS"``.
    """

    systems: tuple[str, ...]
    measures: tuple[str, ...]
    num_topics: int
    observed: np.ndarray
    draws: np.ndarray
    samples: dict[str, np.ndarray]
    rope: float
    interval: float
    likelihood: Likelihood
    convergence: Convergence
    method: str = "NUTS"

    def _measure(self, measure: str) -> int:
        if measure not in self.measures:
            raise InputDataError(f"no measure {measure!r}; compared: {list(self.measures)}")
        return self.measures.index(measure)

    def _system(self, system: str) -> int:
        if system not in self.systems:
            raise InputDataError(f"no run {system!r}; compared: {list(self.systems)}")
        return self.systems.index(system)

    def expected(self, measure: str) -> np.ndarray:
        """`n x S` pooled draws of each system's expected measure (``n = chains x draws``)."""
        m = self._measure(measure)
        return self.draws[:, :, m, :].reshape(-1, len(self.systems))

    def pair(self, measure: str, system: str, baseline: str | None = None) -> PairSummary:
        """The posterior of ``system - baseline`` (default baseline: the first run).

        Args:
            measure: A compared measure.
            system: Run ``B``.
            baseline: Run ``A``.
        """
        m = self._measure(measure)
        b = self._system(system)
        a = self._system(baseline if baseline is not None else self.systems[0])
        values = self.expected(measure)
        diff = values[:, b] - values[:, a]
        tail = (1.0 - self.interval) / 2.0
        low, high = np.quantile(diff, [tail, 1.0 - tail])
        return PairSummary(
            mean_difference=float(diff.mean()),
            interval=(float(low), float(high)),
            p_better=float(np.mean(diff > 0) + 0.5 * np.mean(diff == 0)),
            p_equivalent=float(np.mean(np.abs(diff) < self.rope)),
            observed_difference=float(self.observed[m, b] - self.observed[m, a]),
        )

    def p_better(self, measure: str) -> np.ndarray:
        """`S x S`: entry ``[i, j]`` is P(system i's expected measure > system j's)."""
        values = self.expected(measure)
        greater = (values[:, :, None] > values[:, None, :]).mean(0)
        ties = (values[:, :, None] == values[:, None, :]).mean(0)
        out = greater + 0.5 * ties
        np.fill_diagonal(out, np.nan)
        return out

    def p_best(self, measure: str) -> np.ndarray:
        """`S`: posterior probability that each system has the highest expected measure
        (a tie for the best shares its draw equally)."""
        values = self.expected(measure)
        top = values == values.max(axis=1, keepdims=True)
        return (top / top.sum(axis=1, keepdims=True)).mean(0)

    def to_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        """``{measure: {run: {"mean_difference", "interval", "p_better", "p_equivalent"}}}``
        for every run against the first."""
        return {
            measure: {s: self.pair(measure, s).as_json() for s in self.systems[1:]}
            for measure in self.measures
        }

    def ranking_json(self) -> dict[str, dict[str, Any]]:
        """``{measure: {"p_best": {run: p}, "p_better": {run: {other run: p}}}}``."""
        out: dict[str, dict[str, Any]] = {}
        for measure in self.measures:
            table = self.p_better(measure)
            out[measure] = {
                "p_best": dict(zip(self.systems, map(float, self.p_best(measure)), strict=True)),
                "p_better": {
                    a: {b: float(table[i, j]) for j, b in enumerate(self.systems) if j != i}
                    for i, a in enumerate(self.systems)
                },
            }
        return out

    def table(self) -> str:
        """The text report: one line per measure and run against the first, then per measure
        the pairwise P(row better than column) and P(best)."""
        pct = f"{100 * self.interval:g}%"
        name_width = max(len(s) for s in self.systems)
        head = f"{'run':<{name_width}}  {'measure':<12} {'observed':>9} {'posterior':>9}  "
        head += f"{pct + ' interval':<20} {'P(B>A)':>7} {'P(|B-A|<' + f'{self.rope:g})':>13}"
        lines = [head]
        for measure in self.measures:
            for system in self.systems[1:]:
                p = self.pair(measure, system)
                span = f"[{p.interval[0]:+.4f}, {p.interval[1]:+.4f}]"
                lines.append(
                    f"{system:<{name_width}}  {measure:<12} {p.observed_difference:>+9.4f} "
                    f"{p.mean_difference:>+9.4f}  {span:<20} {p.p_better:>7.3f} "
                    f"{p.p_equivalent:>13.3f}"
                )
        for measure in self.measures:
            table, best = self.p_better(measure), self.p_best(measure)
            lines.append("")
            lines.append(f"{measure}: P(row better than column), P(best)")
            cell = max(name_width, 7)
            lines.append(
                " " * name_width
                + "".join(f"  {s:>{cell}}" for s in self.systems)
                + f"  {'P(best)':>7}"
            )
            for i, system in enumerate(self.systems):
                cells = "".join(
                    f"  {'-':>{cell}}" if i == j else f"  {table[i, j]:>{cell}.3f}"
                    for j in range(len(self.systems))
                )
                lines.append(f"{system:<{name_width}}{cells}  {best[i]:>7.3f}")
        return "\n".join(lines)

    def describe(self) -> str:
        """One line on the model, the sampler and its convergence."""
        chains, draws = self.draws.shape[:2]
        check = self.convergence
        state = "converged" if check.converged else "NOT converged: " + "; ".join(check.messages)
        sampler = (
            f"{chains * draws} exact draws"
            if self.method == "exact"
            else f"NUTS {chains} chains x {draws} draws"
        )
        rhat = "undefined" if math.isnan(check.max_rhat) else f"{check.max_rhat:.3f}"
        ess = "undefined" if math.isnan(check.min_ess) else f"{check.min_ess:.0f}"
        return (
            f"Bayesian comparison: {self.likelihood.value} model, {self.num_topics} topics, "
            f"{sampler}; {state} (max R-hat {rhat}, min bulk/tail ESS {ess}, "
            f"{check.divergences} divergences); ROPE {self.rope:g}"
        )


def bayesian_measures(evaluator: Evaluator) -> list[str]:
    """The measures of ``evaluator`` the comparison models: all but counts, ``num_q`` and
    ``gm_map`` (whose ``all`` value is not a mean of per-topic values in [0, 1])."""
    return [
        spec.name
        for spec in evaluator.measures
        if not spec.info.is_count and spec.family not in _UNMODELLED_FAMILIES
    ]


def bayesian_compare(
    qrels: Qrels | str | os.PathLike[str],
    runs: Sequence[Run | str | os.PathLike[str]],
    measures: Sequence[str] | str = DEFAULT_MEASURES[3:],
    *,
    rope: float = DEFAULT_ROPE,
    interval: float = 0.95,
    likelihood: Likelihood | str = Likelihood.PAIRED,
    priors: ComparisonPriors | None = None,
    num_chains: int = 4,
    warmup_steps: int = 300,
    num_samples: int | None = None,
    seed: int = 0,
    relevance_level: int | None = None,
    all_queries: bool = False,
    depth: int | None = None,
    progress: bool = False,
) -> BayesianComparison:
    """Compare runs with a hierarchical Bayesian model of their per-topic values.

    Topics are those every run shares with the qrels (all qrels topics with
    ``all_queries``), as in :func:`~probrank.evaluation.compare`.

    Args:
        qrels: Judgements (a :class:`Qrels` or a path).
        runs: Two or more runs (or paths); the first is the baseline. Names must differ.
        measures: Measures in [0, 1] (counts, ``num_q`` and ``gm_map`` are refused).
        rope: Half-width of the region of practical equivalence (> 0).
        interval: Mass of the credible intervals, in (0, 1).
        likelihood: :class:`~probrank.evaluation.bayesian_model.Likelihood`: ``"paired"``
            (the default), ``"bootstrap"``, ``"normal"`` or ``"truncated-normal"``.
        priors: :class:`~probrank.evaluation.bayesian_model.ComparisonPriors`.
        num_chains: NUTS chains (>= 2 for R-hat).
        warmup_steps: Adaptation steps per chain.
        num_samples: Draws kept per chain (default: 2,500 for exact likelihoods, 500 for
            NUTS).
        seed: Chain ``c`` is seeded with ``seed + c``.
        relevance_level: trec_eval ``-l``.
        all_queries: trec_eval ``-c``.
        depth: trec_eval ``-M``.
        progress: Show a progress bar.

    Returns:
        A :class:`BayesianComparison`.

    Raises:
        InputDataError: Fewer than two runs, equal names, no shared topic, a count measure,
            a bad option.
    """
    if len(runs) < 2:
        raise InputDataError("a comparison needs a baseline run and at least one other run")
    _check_options(rope, interval, num_chains, warmup_steps, num_samples or 1)
    evaluator = Evaluator(
        qrels, measures, relevance_level=relevance_level, all_queries=all_queries, depth=depth
    )
    modelled = bayesian_measures(evaluator)
    refused = [name for name in evaluator.names if name not in modelled]
    if refused:
        raise InputDataError(
            f"the Bayesian comparison models measures in [0, 1]; {', '.join(refused)} "
            "are counts or not means of per-topic values"
        )
    loaded = [r if isinstance(r, Run) else Run.read(r) for r in runs]
    names = [r.name for r in loaded]
    if len(set(names)) != len(names):
        raise InputDataError(f"runs must have distinct names, got {names}")
    tables = [evaluator.per_query(run) for run in loaded]
    common = [q for q in tables[0] if all(q in t for t in tables[1:])]
    if not common:
        raise InputDataError("the runs share no evaluated query")
    scores = np.array(
        [[[t[q][m] for q in common] for t in tables] for m in modelled], dtype=np.float64
    )
    return bayesian_compare_scores(
        scores,
        systems=names,
        measures=modelled,
        rope=rope,
        interval=interval,
        likelihood=likelihood,
        priors=priors,
        num_chains=num_chains,
        warmup_steps=warmup_steps,
        num_samples=num_samples,
        seed=seed,
        progress=progress,
    )


def _check_options(
    rope: float, interval: float, num_chains: int, warmup_steps: int, num_samples: int
) -> None:
    if not (math.isfinite(rope) and rope > 0):
        raise InputDataError(f"rope must be a finite number > 0, got {rope}")
    if not 0 < interval < 1:
        raise InputDataError(f"interval must be in (0, 1), got {interval}")
    if num_chains < 1 or warmup_steps < 1 or num_samples < 1:
        raise InputDataError(
            "need num_chains, warmup_steps and num_samples >= 1; got "
            f"{num_chains}, {warmup_steps}, {num_samples}"
        )


def bayesian_compare_scores(
    scores: np.ndarray | torch.Tensor | Sequence[Any],
    *,
    systems: Sequence[str],
    measures: Sequence[str],
    rope: float = DEFAULT_ROPE,
    interval: float = 0.95,
    likelihood: Likelihood | str = Likelihood.PAIRED,
    priors: ComparisonPriors | None = None,
    num_chains: int = 4,
    warmup_steps: int = 300,
    num_samples: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> BayesianComparison:
    """:func:`bayesian_compare` on per-topic values already computed.

    Args:
        scores: `M x S x T` values of ``M`` measures for ``S`` systems on the same ``T``
            topics (in [0, 1] for the truncated-normal likelihood).
        systems: ``S`` names; the first is the baseline.
        measures: ``M`` names.
        rope: Half-width of the region of practical equivalence (> 0).
        interval: Mass of the credible intervals.
        likelihood: ``"paired"`` (the default), ``"bootstrap"``, ``"normal"`` or
            ``"truncated-normal"``.
        priors: :class:`~probrank.evaluation.bayesian_model.ComparisonPriors`.
        num_chains: NUTS chains.
        warmup_steps: Adaptation steps per chain.
        num_samples: Draws kept per chain (default: 2,500 for exact likelihoods, 500 for
            NUTS).
        seed: Chain ``c`` is seeded with ``seed + c``.
        progress: Show a progress bar.

    Returns:
        A :class:`BayesianComparison`.
    """
    kind = parse_enum(Likelihood, likelihood, "likelihood")
    if num_samples is None:
        num_samples = EXACT_DRAWS if kind in EXACT_SAMPLERS else NUTS_DRAWS
    _check_options(rope, interval, num_chains, warmup_steps, num_samples)
    values = np.asarray(scores, dtype=np.float64)
    _check_scores(values, list(systems), list(measures), kind)
    if kind in EXACT_SAMPLERS:
        rng = np.random.default_rng(seed)
        flat = EXACT_SAMPLERS[kind](values, num_chains * num_samples, rng)  # n x M x S
        draws = flat.reshape(num_chains, num_samples, *flat.shape[1:])
        sampled = {"mu": draws}
        convergence = check_draws({"expected": draws}, 0)
        method = "exact"
    else:  # torch and Pyro load here, not for the exact likelihoods
        import torch

        from probrank.evaluation.bayesian_model import ComparisonPriors, expected_scores
        from probrank.evaluation.bayesian_potential import ComparisonPotential
        from probrank.evaluation.bayesian_sampler import sample_posterior

        potential = ComparisonPotential(values, kind, priors or ComparisonPriors())
        arrays, divergences = sample_posterior(
            potential,
            num_chains=num_chains,
            warmup_steps=warmup_steps,
            num_samples=num_samples,
            seed=seed,
            progress=progress,
        )
        draws = expected_scores(
            torch.from_numpy(arrays["z"]),
            torch.from_numpy(arrays["topic"]),
            torch.from_numpy(arrays["noise"]),
            kind,
        ).numpy()
        sampled = {name: arrays[name] for name in potential.slices}
        # what is reported, and the system effects (see the module docstring)
        convergence = check_draws({"z": sampled["z"], "expected": draws}, divergences)
        method = "NUTS"
    if not convergence.converged:
        warnings.warn(
            "Bayesian comparison: " + "; ".join(convergence.messages),
            ConvergenceWarning,
            stacklevel=2,
        )
    return BayesianComparison(
        systems=tuple(systems),
        measures=tuple(measures),
        num_topics=int(values.shape[2]),
        observed=values.mean(-1),
        draws=draws,
        samples=sampled,
        rope=float(rope),
        interval=float(interval),
        likelihood=kind,
        convergence=convergence,
        method=method,
    )


def fit_comparison(
    values: np.ndarray,
    *,
    likelihood: Likelihood | str = Likelihood.PAIRED,
    seed: int = 0,
    num_draws: int = 2000,
    num_chains: int = 4,
    warmup_steps: int = 300,
) -> np.ndarray:
    """Posterior draws of each system's expected measure from per-topic values of one measure.

    The simulation benchmark and simulation-based calibration call this; it is
    :func:`bayesian_compare_scores` without names or report (no convergence warning either:
    see ``bayesian_compare_scores(...).convergence`` for that).

    Args:
        values: `T x S` per-topic values of ``S >= 2`` systems on ``T >= 2`` topics.
        likelihood: :class:`~probrank.evaluation.bayesian_model.Likelihood`.
        seed: Seed of the draws.
        num_draws: Total draws (``num_chains x num_draws // num_chains``).
        num_chains: Chains (for NUTS; exact draws are split the same way).
        warmup_steps: NUTS adaptation steps per chain.

    Returns:
        `n x S` draws (``n = num_chains * (num_draws // num_chains)``); the difference of
        system ``s`` against the first is ``draws[:, s] - draws[:, 0]``.
    """
    scores = np.asarray(values, dtype=np.float64)
    if scores.ndim != 2:
        raise InputDataError(f"values must be topics x systems, got shape {scores.shape}")
    num_systems = scores.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = bayesian_compare_scores(
            scores.T[None],
            systems=[f"s{i}" for i in range(num_systems)],
            measures=["m"],
            likelihood=likelihood,
            num_chains=num_chains,
            warmup_steps=warmup_steps,
            num_samples=max(num_draws // num_chains, 1),
            seed=seed,
        )
    return result.draws[:, :, 0, :].reshape(-1, num_systems)


def _check_scores(
    values: np.ndarray, systems: list[str], measures: list[str], kind: Likelihood
) -> None:
    if values.ndim != 3:
        raise InputDataError(f"scores must be measures x systems x topics, got {values.shape}")
    num_measures, num_systems, num_topics = values.shape
    if len(systems) != num_systems or len(measures) != num_measures:
        raise InputDataError(
            f"scores are {tuple(values.shape)} but {len(measures)} measures and "
            f"{len(systems)} systems are named"
        )
    if num_systems < 2:
        raise InputDataError("a comparison needs a baseline run and at least one other run")
    if len(set(systems)) != num_systems:
        raise InputDataError(f"runs must have distinct names, got {systems}")
    if num_topics < 2:
        raise InputDataError(f"a comparison needs at least 2 shared topics, got {num_topics}")
    bad = ~np.isfinite(values)
    if kind is Likelihood.TRUNCATED_NORMAL:
        with np.errstate(invalid="ignore"):
            bad |= (values < 0) | (values > 1)
    if bool(bad.any()):
        m, s, t = (int(i) for i in np.argwhere(bad)[0])
        allowed = "in [0, 1]" if kind is Likelihood.TRUNCATED_NORMAL else "finite"
        raise InputDataError(
            f"{measures[m]} of {systems[s]} on topic #{t + 1} is {float(values[m, s, t])!r}, "
            f"not {allowed}"
        )
