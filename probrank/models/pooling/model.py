"""A Bayesian model of which pooled documents are relevant, given their ranks in every run.

For document ``d`` of topic ``t`` ranked at ``k_r(d)`` by run ``r`` (within the pool depth
``D``; unranked runs contribute nothing),

``logit P(rel_d) = a_t + (b1 + b1_t) log(eps + mean_r phi_r(d) / log(D + 1)) + b2 log(share of runs
ranking d) + (1/R) sum_r [k_r(d) > 0] (c_r + w_r phi_r(d))``, ``phi_r(d) = log(D + 1) -
log k_r(d)``

over the ``R`` runs (with ``cell_effects`` on, plus ``g[cell(d)]``: one effect per cell of a
grid of (best rank of ``d`` over the runs, by doubling of the depth) x (number of runs
ranking ``d``, by doubling; with ``cell_counts=False`` by the best rank alone), shared by the
topics; :meth:`PoolingRelevanceModel.cell_index`),
so each run has a logistic rank-relevance curve in log-rank (its
deviation from the common curve of the fused evidence), a document's runs combine through the
log of their mean evidence (a run that does not rank it adds 0), and runs and topics are
partially pooled through Gaussian priors around population means
(:class:`PoolingModelSettings`). The posterior of the parameters is the
Laplace approximation at the MAP (Newton's method on the exact gradient and Hessian of the
Bernoulli log-likelihood plus the Gaussian log-prior; a step that would lower the log posterior
is halved until it does not, so a start far from the MAP converges too, and a fit that does not
converge in ``max_iterations`` steps warns); a refit after new judgements starts from the
previous MAP, so a few Newton steps suffice. Fitted on no items, the "posterior" is the
prior itself (mean 0, the prior precision), so :meth:`~PoolingRelevanceModel.sample_parameters`
then draws from the prior (prior predictive checks, simulation-based calibration).

The Laplace Gaussian is too narrow where the run effects are weakly identified (the posterior
is flat-sided and skewed there; models/pooling/README.md, simulation-based calibration). With
``posterior="laplace-is"`` (:class:`~probrank.models.pooling.settings.PoolingPosterior`) each
fit corrects it by importance sampling: ``importance_draws`` draws from a multivariate
Student-t around the MAP (the Laplace covariance times ``proposal_scale^2``, ``proposal_df``
degrees of freedom), log weights = the exact log posterior (Bernoulli log-likelihood plus the
Gaussian log-prior, up to a constant) minus the proposal's log density, Pareto-smoothed by the
installed ArviZ (:func:`probrank._arviz.psis`); :meth:`~PoolingRelevanceModel.sample_parameters`
then resamples the requested draws from the weighted ones. The Pareto shape ``k``
(:attr:`~PoolingRelevanceModel.pareto_k`) says how far to trust it: above 0.7 the fit warns
(:class:`~probrank.exceptions.ConvergenceWarning`). With ``posterior="nuts"`` the draws come from
Pyro's NUTS on the exact posterior, in coordinates whitened by the Laplace (near a standard
normal there, so one short chain suffices), run at the first draw after a fit so that the
refits between estimates stay Laplace-cheap; its divergent transitions are counted
(:attr:`~PoolingRelevanceModel.mcmc_divergences`) and warned about. On the benchmark's pools
the Laplace expects far more relevant documents among the unjudged than the chain does
(models/pooling/README.md): the posterior is skewed, and averaging small probabilities over a
symmetric Gaussian inflates them.

Like the other model objects it offers ``posterior``, ``to_inference_data`` (ArviZ data of the
parameters and, given items, of their P(relevant)), ``save(path)`` and
``PoolingRelevanceModel.load(path)`` (a folder with a manifest and the Laplace mean and
factor in safetensors, :mod:`probrank.models._persist`).
"""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from probrank.exceptions import ConvergenceWarning, InputDataError
from probrank.models.pooling.settings import PoolingModelSettings, PoolingPosterior

__all__ = ["PoolingRelevanceModel"]


class PoolingRelevanceModel:
    """Rank-relevance curves of runs, partially pooled across runs and topics (MAP + Laplace).

    Args:
        settings: Priors and fitting options.

    Attributes:
        mean: The MAP parameters after ``fit``: `2 * num_runs + 2 * num_topics + 5
            (+ num_depth_bins * num_count_bins)` (slopes ``w``, retrieved effects ``c``, topic
            offsets ``a``, topic deviations ``b1_t`` of the fused evidence's coefficient, the
            coefficients ``b1, b2`` of the fused evidence, then ``mu_w, mu_c, mu_a``; with
            ``cell_effects`` last the cell effects ``g``, row-major over `num_depth_bins x
            num_count_bins`, :meth:`cell_grid`).
        covariance_factor: Lower Cholesky factor of the Hessian at the MAP (the Laplace
            covariance is its inverse).
        pareto_k: With ``posterior="laplace-is"``, the Pareto shape estimate of the last fit's
            importance weights (below 0.5: good, 0.5-0.7: usable, above 0.7: unreliable); None
            with the plain Laplace or with no items (then the Gaussian is the exact prior).
        mcmc_divergences: With ``posterior="nuts"``: divergent transitions of the last fit's
            chain after warm-up, once it has run (None before).
    """

    def __init__(self, settings: PoolingModelSettings | None = None):
        self.settings = settings or PoolingModelSettings()
        self.mean: np.ndarray | None = None
        self.covariance_factor: np.ndarray | None = None
        self.pareto_k: float | None = None
        self._importance: tuple[np.ndarray, np.ndarray] | None = None
        self._mcmc: np.ndarray | None = None
        self._mcmc_data: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.mcmc_divergences: int | None = None
        self._shape: tuple[int, int, int] | None = None

    # ----------------------------------------------------------------- features
    @staticmethod
    def rank_features(ranks: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """The per-run features of items.

        Args:
            ranks: 1-based ranks, 0 where unranked, `num_runs x n`.
            depth: The pool depth ``D``.

        Returns:
            ``(slope_feature, retrieved)``, both `num_runs x n` float64:
            ``(log(D + 1) - log(k)) / num_runs`` and ``1 / num_runs`` where ranked, 0
            elsewhere.
        """
        scale = 1.0 / ranks.shape[0]
        retrieved = (ranks > 0) * scale
        slope = np.where(ranks > 0, np.log(depth + 1.0) - np.log(np.maximum(ranks, 1)), 0.0)
        return slope * scale, retrieved

    @staticmethod
    def fused_features(ranks: np.ndarray, depth: int) -> np.ndarray:
        """The runs' combined evidence: ``log(eps + mean_r phi_r / log(D + 1))`` with
        ``phi_r = log(D + 1) - log(k_r)`` (0 where unranked, ``eps = 1e-3``), and the log of
        the share of runs that rank the item, `2 x n`."""
        phi = np.where(ranks > 0, np.log(depth + 1.0) - np.log(np.maximum(ranks, 1)), 0.0)
        fused = np.log(_EPS + phi.mean(axis=0) / np.log(depth + 1.0))
        share = np.log(np.maximum((ranks > 0).mean(axis=0), 1.0 / (2 * ranks.shape[0])))
        return np.vstack([fused, share])

    @staticmethod
    def cell_grid(num_runs: int, depth: int, *, counts: bool = True) -> tuple[list[str], list[str]]:
        """The labels of the cell grid's rows and columns.

        Rows: the best rank over the runs by doubling of the depth (``1``, ``2``, ``3-4``,
        ``5-8``, ..., the last ending at ``depth``); columns: the number of runs ranking the
        item by doubling (``1``, ``2``, ``3-4``, ..., the last ending at ``num_runs``), or with
        ``counts=False`` one column, ``"any"`` (an effect of the best rank alone;
        :attr:`~probrank.models.pooling.settings.PoolingModelSettings.cell_counts`).

        Returns:
            ``(depth_labels, count_labels)``, of `num_depth_bins` and `num_count_bins`.
        """
        rows = int(np.ceil(np.log2(depth))) + 1 if depth > 1 else 1
        depth_labels = []
        for j in range(rows):
            low, high = (1 if j == 0 else 2 ** (j - 1) + 1), min(2**j, depth)
            depth_labels.append(str(low) if low == high else f"{low}-{high}")
        if not counts:
            return depth_labels, ["any"]
        edges = _count_edges(num_runs)
        count_labels = [
            str(high) if low + 1 == high else f"{low + 1}-{high}"
            for low, high in itertools.pairwise(edges)
        ]
        return depth_labels, count_labels

    @staticmethod
    def cell_index(ranks: np.ndarray, depth: int, *, counts: bool = True) -> np.ndarray:
        """Each item's cell of the grid (:meth:`cell_grid`), row-major, `n` int64.

        Args:
            ranks: 1-based ranks, 0 where unranked, `num_runs x n` (an item no run ranks
                falls in the deepest row and the first column).
            depth: The pool depth ``D``.
            counts: Columns by the number of runs ranking the item (False: one column, so
                the index is the row).
        """
        num_runs = ranks.shape[0]
        rows = int(np.ceil(np.log2(depth))) + 1 if depth > 1 else 1
        best = np.where(ranks > 0, ranks, depth).min(axis=0) if num_runs else np.zeros(0)
        row = np.minimum(np.ceil(np.log2(np.maximum(best, 1))).astype(np.int64), rows - 1)
        if not counts:
            return row
        edges = np.asarray(_count_edges(num_runs))
        count = np.maximum((ranks > 0).sum(axis=0), 1)
        column = np.searchsorted(edges, count, side="left") - 1
        return row * (len(edges) - 1) + column

    def _grid(self, num_runs: int, depth: int) -> tuple[list[str], list[str]]:
        """:meth:`cell_grid` of this model's settings (``cell_counts``)."""
        return self.cell_grid(num_runs, depth, counts=self.settings.cell_counts)

    def _cell_of(self, ranks: np.ndarray, depth: int) -> np.ndarray:
        """:meth:`cell_index` of this model's settings (``cell_counts``)."""
        return self.cell_index(ranks, depth, counts=self.settings.cell_counts)

    def _num_cells(self, num_runs: int, depth: int) -> int:
        if not self.settings.cell_effects:
            return 0
        depth_labels, count_labels = self._grid(num_runs, depth)
        return len(depth_labels) * len(count_labels)

    def _num_parameters(self, num_runs: int, num_topics: int, depth: int) -> int:
        return 2 * num_runs + 2 * num_topics + 5 + self._num_cells(num_runs, depth)

    def _design(self, ranks: np.ndarray, topics: np.ndarray, depth: int) -> np.ndarray:
        """The design matrix of the logits, `n x num_params` (``logits = design @ theta``)."""
        num_runs, num_topics, _ = self._checked_shape()
        slope, retrieved = self.rank_features(ranks, depth)
        onehot = np.zeros((len(topics), num_topics))
        onehot[np.arange(len(topics)), topics] = 1.0
        hyper = np.zeros((len(topics), 3))
        fused = self.fused_features(ranks, depth)
        blocks = [slope.T, retrieved.T, onehot, onehot * fused[0][:, None], fused.T, hyper]
        cells = self._num_cells(num_runs, depth)
        if cells:
            cell = np.zeros((len(topics), cells))
            cell[np.arange(len(topics)), self._cell_of(ranks, depth)] = 1.0
            blocks.append(cell)
        return np.hstack(blocks)

    def _checked_shape(self) -> tuple[int, int, int]:
        if self._shape is None:
            raise InputDataError("the pooling model is not fitted: call fit first")
        return self._shape

    def _fitted(self) -> tuple[np.ndarray, np.ndarray]:
        if self.mean is None or self.covariance_factor is None:
            raise InputDataError("the pooling model is not fitted: call fit first")
        return self.mean, self.covariance_factor

    def _prior_precision(self, num_runs: int, num_topics: int, depth: int) -> np.ndarray:
        """The prior precision, `num_params x num_params` (the prior mean is 0)."""
        s = self.settings
        base = 2 * num_runs + 2 * num_topics + 5
        cells = self._num_cells(num_runs, depth)
        precision = np.zeros((base + cells, base + cells))
        size = base
        topic_slopes = np.arange(2 * num_runs + num_topics, 2 * num_runs + 2 * num_topics)
        precision[topic_slopes, topic_slopes] = 1.0 / s.topic_slope_scale**2
        precision[size - 5, size - 5] = precision[size - 4, size - 4] = 1.0 / s.hyper_scale**2
        groups = [
            (np.arange(num_runs), size - 3, s.run_scale),
            (np.arange(num_runs, 2 * num_runs), size - 2, s.retrieved_scale),
            (np.arange(2 * num_runs, 2 * num_runs + num_topics), size - 1, s.topic_scale),
        ]
        for members, hyper, scale in groups:
            tau = 1.0 / scale**2
            # sum_i (theta_i - mu)^2 * tau, expanded
            precision[members, members] += tau
            precision[members, hyper] -= tau
            precision[hyper, members] -= tau
            precision[hyper, hyper] += tau * len(members) + 1.0 / s.hyper_scale**2
        if cells:
            precision[base:, base:] = self._cell_precision(num_runs, depth)
        return precision

    def _cell_precision(self, num_runs: int, depth: int) -> np.ndarray:
        """The cell effects' prior precision: ``I / cell_scale^2`` plus, with
        ``cell_smooth_scale``, ``(D_r^T D_r + D_c^T D_c) / cell_smooth_scale^2`` (first
        differences of adjacent rows and columns of the grid), `num_cells x num_cells`."""
        s = self.settings
        depth_labels, count_labels = self._grid(num_runs, depth)
        rows, columns = len(depth_labels), len(count_labels)
        precision = np.eye(rows * columns) / s.cell_scale**2
        if s.cell_smooth_scale is not None:
            # sum over neighbour pairs (i, j) of (g_i - g_j)^2 / scale^2: a graph Laplacian
            index = np.arange(rows * columns).reshape(rows, columns)
            pairs = [(index[:-1, :].ravel(), index[1:, :].ravel())]
            pairs.append((index[:, :-1].ravel(), index[:, 1:].ravel()))
            tau = 1.0 / s.cell_smooth_scale**2
            for left, right in pairs:
                np.add.at(precision, (left, left), tau)
                np.add.at(precision, (right, right), tau)
                np.add.at(precision, (left, right), -tau)
                np.add.at(precision, (right, left), -tau)
        return precision

    # ----------------------------------------------------------------- fitting
    def fit(
        self,
        ranks: np.ndarray,
        topics: np.ndarray,
        labels: np.ndarray,
        *,
        num_topics: int,
        depth: int,
    ) -> PoolingRelevanceModel:
        """Fit the MAP and the Laplace covariance on judged items.

        Args:
            ranks: Ranks of the judged items in every run, `num_runs x n` (0: unranked).
            topics: Topic index of each judged item, `n`.
            labels: Relevance of each judged item (0 or 1), `n`.
            num_topics: Topics in the pool (offsets of unjudged topics come from the prior).
            depth: The pool depth.

        Returns:
            ``self``; a second ``fit`` with the same runs and topics starts from this MAP. With
            no items (``n = 0``) the fitted posterior is the prior.
        """
        ranks = np.asarray(ranks)
        labels = np.asarray(labels, dtype=np.float64)
        topics = np.asarray(topics, dtype=np.int64)
        if ranks.ndim != 2 or ranks.shape[1] != len(labels) or len(topics) != len(labels):
            raise InputDataError("ranks must be num_runs x n with n labels and n topics")
        shape = (ranks.shape[0], num_topics, depth)
        if self._shape != shape:
            self.mean = None
        self._shape = shape
        design = self._design(ranks, topics, depth)
        precision = self._prior_precision(ranks.shape[0], num_topics, depth)
        theta = self.mean.copy() if self.mean is not None else np.zeros(design.shape[1])
        if len(theta) != design.shape[1]:
            theta = np.zeros(design.shape[1])
        theta, hessian, converged = _maximise(design, labels, precision, theta, self.settings)
        if not converged:
            warnings.warn(
                f"the pooling model's MAP fit did not converge in {self.settings.max_iterations} "
                f"Newton steps (tolerance {self.settings.tolerance:g}): its MAP and Laplace are "
                f"unreliable (more max_iterations may help)",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.mean = theta
        # covariance = hessian^-1 = (L L^T)^-1 = L^-T L^-1: draws are mean + L^-T z
        self.covariance_factor = np.linalg.cholesky(hessian)
        self.pareto_k = None
        self._importance = None
        self._mcmc = self._mcmc_data = self.mcmc_divergences = None
        if self.settings.posterior is PoolingPosterior.LAPLACE_IS and len(labels):
            self._importance = self._importance_sample(design, labels, precision)
        if self.settings.posterior is PoolingPosterior.NUTS and len(labels):
            self._mcmc_data = (design, labels, precision)  # the chain runs at the first draw
        return self

    def _importance_sample(
        self, design: np.ndarray, labels: np.ndarray, precision: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Student-t proposal draws around the MAP and their Pareto-smoothed log weights."""
        from scipy.linalg import solve_triangular

        from probrank import _arviz

        s = self.settings
        mean, factor = self._fitted()
        rng = np.random.default_rng(s.importance_seed)
        size, count, df = len(mean), s.importance_draws, s.proposal_df
        z = rng.standard_normal((size, count))
        radius = np.sqrt(rng.chisquare(df, count) / df)  # t = z / radius
        draws = (mean[:, None] + s.proposal_scale * solve_triangular(factor.T, z / radius)).T
        # log t density up to a constant: the Mahalanobis distance in the scaled Laplace metric
        # is |z| / radius
        log_proposal = -0.5 * (df + size) * np.log1p((z**2).sum(axis=0) / radius**2 / df)
        log_target = np.empty(count)
        for start in range(0, count, _CHUNK):
            chunk = draws[start : start + _CHUNK]
            eta = design @ chunk.T  # n x chunk
            loglik = labels @ eta - np.logaddexp(0.0, eta).sum(axis=0)
            log_target[start : start + _CHUNK] = loglik - 0.5 * np.einsum(
                "sp,pq,sq->s", chunk, precision, chunk
            )
        smoothed, khat = _arviz.psis(log_target - log_proposal)
        self.pareto_k = khat
        if khat > 0.7:
            warnings.warn(
                f"the importance weights of the pooling model's Laplace correction have Pareto "
                f"k = {khat:.3g} > 0.7: its draws are unreliable (more importance_draws or a "
                f"wider proposal_scale may help)",
                ConvergenceWarning,
                stacklevel=3,
            )
        return draws, smoothed

    def _run_nuts(self) -> np.ndarray:
        """The NUTS chain's draws of the parameters, `mcmc_draws x num_params`.

        NUTS (Pyro) on the exact log posterior in the coordinates ``z`` of ``theta = mean +
        L^-T z`` (``L`` the Cholesky factor of the Hessian at the MAP), where the posterior is
        near a standard normal, so an identity mass matrix and a short warm-up suffice; it
        starts at the MAP. Divergent transitions after the warm-up are counted
        (:attr:`mcmc_divergences`) and warned about (``ConvergenceWarning``).
        """
        import torch
        from pyro.infer import MCMC, NUTS
        from scipy.linalg import solve_triangular

        assert self._mcmc_data is not None
        design, labels, precision = self._mcmc_data
        mean, factor = self._fitted()
        s = self.settings
        whiten = solve_triangular(factor.T, np.eye(len(mean)), lower=False)  # theta = m + W z
        x = torch.from_numpy(design @ whiten)
        offset = torch.from_numpy(design @ mean)
        y = torch.from_numpy(labels)
        prior_zz = torch.from_numpy(whiten.T @ precision @ whiten)
        prior_z = torch.from_numpy(whiten.T @ (precision @ mean))

        def potential(params: dict[str, torch.Tensor]) -> torch.Tensor:
            # minus the log posterior up to a constant: Bernoulli log-likelihood of the
            # logits, Gaussian prior -0.5 theta^T P theta with theta = mean + W z
            z = params["z"]
            eta = offset + x @ z
            loglik = (y * eta).sum() - torch.nn.functional.softplus(eta).sum()
            return -(loglik - 0.5 * z @ prior_zz @ z - z @ prior_z)

        found: list[int] = []

        def hook(kernel: Any, _: Any, stage: str, i: int) -> None:
            if stage == "Sample" and i == s.mcmc_draws - 1:  # before the kernel's cleanup
                found.extend(j for j in kernel.diagnostics()["divergences"] if j >= 0)

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(s.mcmc_seed)
            mcmc = MCMC(
                NUTS(potential_fn=potential, max_tree_depth=8),
                num_samples=s.mcmc_draws,
                warmup_steps=s.mcmc_warmup,
                initial_params={"z": torch.zeros(len(mean), dtype=torch.float64)},
                disable_progbar=True,
                hook_fn=hook,
            )
            mcmc.run()
        z = mcmc.get_samples()["z"].detach().numpy()
        self.mcmc_divergences = len(found)
        if found:
            warnings.warn(
                f"the pooling model's NUTS chain had {len(found)} divergent transitions after "
                f"warm-up: its draws may be biased (more mcmc_warmup may help)",
                ConvergenceWarning,
                stacklevel=4,
            )
        return mean + z @ whiten.T

    def _ensure_chain(self) -> None:
        """Run the NUTS chain of the last fit if it is pending (``posterior="nuts"``)."""
        if self._mcmc is None and self._mcmc_data is not None:
            self._mcmc = self._run_nuts()
            self._mcmc_data = None

    # ----------------------------------------------------------------- posterior
    def sample_parameters(
        self, num_samples: int, rng: np.random.Generator, *, mcmc: bool = True
    ) -> np.ndarray:
        """Draws of the parameters, `num_samples x num_params`: from the Laplace posterior;
        with ``posterior="laplace-is"`` resampled (with replacement) from the fit's
        importance-weighted draws by their Pareto-smoothed weights; with ``posterior="nuts"``
        picked from the fit's NUTS draws (run now if not yet; without replacement unless more
        are asked for than the chain kept), or, with ``mcmc=False``, from the Laplace Gaussian
        (cheap draws, for choosing documents between estimates)."""
        mean, factor = self._fitted()
        if mcmc:
            self._ensure_chain()
        if mcmc and self._mcmc is not None:
            many = num_samples > len(self._mcmc)
            return self._mcmc[rng.choice(len(self._mcmc), size=num_samples, replace=many)]
        if self._importance is not None:
            draws, log_weights = self._importance
            weights = np.exp(log_weights - log_weights.max())
            picked = rng.choice(len(draws), size=num_samples, p=weights / weights.sum())
            return draws[picked]
        z = rng.standard_normal((len(mean), num_samples))
        from scipy.linalg import solve_triangular

        offsets = solve_triangular(factor.T, z, lower=False)
        return (mean[:, None] + offsets).T

    def logits(self, ranks: np.ndarray, topics: np.ndarray, parameters: np.ndarray) -> np.ndarray:
        """Logits of relevance of items under parameter draws.

        Args:
            ranks: Ranks of the items in every run, `num_runs x n`.
            topics: Topic index of each item, `n`.
            parameters: Parameter draws, `s x num_params` (or one vector, `num_params`;
                layout: :attr:`mean`, :meth:`parameter_blocks`).

        Returns:
            `s x n` (or `n` for one vector); equal to ``design @ parameters`` of the Newton
            fit.
        """
        num_runs, num_topics, depth = self._checked_shape()
        single = parameters.ndim == 1
        params = np.atleast_2d(parameters)
        slope, retrieved = self.rank_features(ranks, depth)
        w = params[:, :num_runs]
        c = params[:, num_runs : 2 * num_runs]
        a = params[:, 2 * num_runs : 2 * num_runs + num_topics]
        fused = self.fused_features(ranks, depth)
        start = 2 * num_runs + num_topics
        slopes = params[:, start : start + num_topics]
        beta = params[:, start + num_topics : start + num_topics + 2]
        out = w @ slope + c @ retrieved + a[:, topics] + beta @ fused + slopes[:, topics] * fused[0]
        cells = self._num_cells(num_runs, depth)
        if cells:
            base = 2 * num_runs + 2 * num_topics + 5
            out = out + params[:, base : base + cells][:, self._cell_of(ranks, depth)]
        return out[0] if single else out

    def predict(self, ranks: np.ndarray, topics: np.ndarray) -> np.ndarray:
        """P(relevant) of items at the MAP, `n` (for ranks `num_runs x n`)."""
        mean, _ = self._fitted()
        return _sigmoid(self.logits(ranks, topics, mean))

    def posterior(
        self,
        ranks: np.ndarray,
        topics: np.ndarray,
        num_samples: int | None = None,
        seed: int | np.random.Generator = 0,
        *,
        mcmc: bool = True,
    ) -> np.ndarray:
        """Posterior draws of P(relevant) of items, `num_samples x n`.

        Args:
            ranks: Ranks of the items in every run, `num_runs x n` (0: unranked).
            topics: Topic index of each item, `n`.
            num_samples: Draws (default: the settings').
            seed: A seed or a numpy generator.
            mcmc: With ``posterior="nuts"``: False draws from the Laplace Gaussian instead
                (:meth:`sample_parameters`).
        """
        rng = np.random.default_rng(seed)
        draws = self.sample_parameters(num_samples or self.settings.num_samples, rng, mcmc=mcmc)
        return _sigmoid(self.logits(ranks, topics, draws))

    def run_curves(self, ranks: np.ndarray) -> np.ndarray:
        """Each run's fitted rank-relevance curve at the mean topic: P(rel) at the MAP of a
        document that only run ``r`` ranks, at ``ranks`` (`m`), `num_runs x m`."""
        num_runs, num_topics, _ = self._checked_shape()
        mean, _ = self._fitted()
        params = mean.copy()
        mu_a = mean[self.parameter_blocks()["mu_a"]][0]
        params[2 * num_runs : 2 * num_runs + num_topics] = mu_a  # every topic at mu_a
        params[2 * num_runs + num_topics : 2 * num_runs + 2 * num_topics] = 0.0
        k = np.asarray(ranks, dtype=np.int64)
        topics = np.zeros(len(k), dtype=np.int64)
        curves = np.zeros((num_runs, len(k)))
        for r in range(num_runs):
            alone = np.zeros((num_runs, len(k)), dtype=np.int64)
            alone[r] = k
            curves[r] = _sigmoid(self.logits(alone, topics, params))
        return curves

    # ----------------------------------------------------------------- ArviZ
    def parameter_blocks(self) -> dict[str, slice]:
        """Where each named parameter lies in the parameter vector (``mean``, draws).

        Returns:
            ``{"w": run slopes, "c": run retrieved effects, "a": topic offsets, "b1_topic":
            topic deviations of the fused evidence's coefficient, "b_fused", "b_share",
            "mu_w", "mu_c", "mu_a"}``: slices of `num_runs` (``w``, ``c``), `num_topics`
            (``a``, ``b1_topic``) or one element (the rest); with ``cell_effects`` also
            ``"cell"``: `num_depth_bins * num_count_bins`, row-major over :meth:`cell_grid`.
        """
        num_runs, num_topics, depth = self._checked_shape()
        start = 2 * num_runs + 2 * num_topics
        blocks = {
            "w": slice(0, num_runs),
            "c": slice(num_runs, 2 * num_runs),
            "a": slice(2 * num_runs, 2 * num_runs + num_topics),
            "b1_topic": slice(2 * num_runs + num_topics, start),
        }
        for offset, name in enumerate(("b_fused", "b_share", "mu_w", "mu_c", "mu_a")):
            blocks[name] = slice(start + offset, start + offset + 1)
        cells = self._num_cells(num_runs, depth)
        if cells:
            blocks["cell"] = slice(start + 5, start + 5 + cells)
        return blocks

    def to_inference_data(
        self,
        ranks: np.ndarray | None = None,
        topics: np.ndarray | None = None,
        labels: np.ndarray | None = None,
        *,
        num_samples: int | None = None,
        seed: int | np.random.Generator = 0,
        run_names: Sequence[str] | None = None,
        topic_names: Sequence[str] | None = None,
    ) -> Any:
        """ArviZ data of the posterior draws (:meth:`sample_parameters`; one chain).

        The ``posterior`` group holds the parameters (:meth:`parameter_blocks`; dims ``run``
        for ``w`` and ``c``, ``topic`` for ``a`` and ``b1_topic``, with ``cell_effects``
        ``cell`` of dims ``best_rank x runs_ranking`` (:meth:`cell_grid`), scalars for the
        rest) and,
        given items, their ``p_rel`` (dim ``item``) from the same parameter draws, so equal
        to :meth:`posterior` with the same ``num_samples`` and ``seed``. Given their labels as
        well, ``observed_data`` and ``log_likelihood`` hold ``rel`` (Bernoulli, per item), for
        ``loo``. The ``posterior`` group's attrs hold ``pooling_posterior`` (``"laplace"``,
        ``"laplace-is"`` or ``"nuts"``), after an importance-sampling fit its ``pareto_k``,
        and with ``"nuts"`` the chain's ``mcmc_divergences``. NUTS draws are picked from the
        chain at random (:meth:`sample_parameters`), not in the chain's order, so ArviZ's
        ESS and R-hat of this data do not describe the chain.

        Args:
            ranks: Ranks of items in every run, `num_runs x n` (0: unranked), or None.
            topics: Topic index of each item, `n` (with ``ranks``).
            labels: Relevance of each item (0 or 1), `n`, or None.
            num_samples: Draws (default: the settings').
            seed: A seed or a numpy generator.
            run_names: Coordinates of ``run``, `num_runs` (default ``0 .. num_runs - 1``).
            topic_names: Coordinates of ``topic``, `num_topics`.

        Returns:
            ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x); sampled variables are
            `1 x num_samples x *shape`.

        Raises:
            InputDataError: unfitted, items without topics (or labels without items),
                inconsistent shapes, labels other than 0/1, or names of the wrong length.
        """
        from probrank import _arviz

        num_runs, num_topics, depth = self._checked_shape()
        rng = np.random.default_rng(seed)
        draws = self.sample_parameters(num_samples or self.settings.num_samples, rng)
        dims: dict[str, list[str]] = {"w": ["run"], "c": ["run"]}
        dims |= {"a": ["topic"], "b1_topic": ["topic"]}
        depth_labels, count_labels = self._grid(num_runs, depth)
        if self.settings.cell_effects:
            dims["cell"] = ["best_rank", "runs_ranking"]
        posterior: dict[str, np.ndarray] = {}
        for name, block in self.parameter_blocks().items():
            values = draws[:, block]  # (a vector by its dim, also of one run or one topic)
            if name == "cell":
                values = values.reshape(len(draws), len(depth_labels), len(count_labels))
            posterior[name] = (values if name in dims else values[:, 0])[None]
        coords: dict[str, list[Any]] = {
            "run": _names(run_names, num_runs, "run_names"),
            "topic": _names(topic_names, num_topics, "topic_names"),
        }
        if self.settings.cell_effects:
            coords |= {"best_rank": depth_labels, "runs_ranking": count_labels}
        groups: dict[str, dict[str, np.ndarray]] = {"posterior": posterior}
        attrs: dict[str, Any] = {"pooling_posterior": self.settings.posterior.value}
        if self.pareto_k is not None:
            attrs["pareto_k"] = self.pareto_k
        if self.mcmc_divergences is not None:
            attrs["mcmc_divergences"] = self.mcmc_divergences
        group_attrs = {"posterior": attrs}
        if ranks is None or topics is None:
            if ranks is not None or topics is not None or labels is not None:
                raise InputDataError("give the items' ranks and topics together (labels too)")
            return _arviz.build(groups, dims=dims, coords=coords, attrs=group_attrs)
        ranks, topics = self._items(ranks, topics)
        logits = self.logits(ranks, topics, draws)
        posterior["p_rel"] = _sigmoid(logits)[None]
        dims["p_rel"] = ["item"]
        if labels is not None:
            rel = np.asarray(labels, dtype=np.float64)
            if rel.shape != topics.shape or not np.all((rel == 0) | (rel == 1)):
                raise InputDataError(f"labels must be {len(topics)} values of 0 or 1")
            # log Bernoulli(rel | sigmoid(logit)) = -log(1 + exp(-logit)) or -log(1 + exp(logit))
            loglik = -np.logaddexp(0.0, np.where(rel == 1, -logits, logits))
            groups["observed_data"] = {"rel": rel}
            groups["log_likelihood"] = {"rel": loglik[None]}
            dims["rel"] = ["item"]
        return _arviz.build(groups, dims=dims, coords=coords, attrs=group_attrs)

    def _items(self, ranks: np.ndarray, topics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        num_runs, num_topics, _ = self._checked_shape()
        ranks = np.asarray(ranks)
        topics = np.asarray(topics, dtype=np.int64)
        if ranks.ndim != 2 or ranks.shape[0] != num_runs or topics.shape != (ranks.shape[1],):
            raise InputDataError(
                f"items must have ranks num_runs x n ({num_runs} runs) and n topics, got "
                f"{ranks.shape} and {topics.shape}"
            )
        if len(topics) and (topics.min() < 0 or topics.max() >= num_topics):
            raise InputDataError(f"topic indices must lie in 0 .. {num_topics - 1}")
        return ranks, topics

    # ----------------------------------------------------------------- persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save to a folder (manifest + safetensors; see :mod:`probrank.models._persist`):
        the settings, the shape (runs, topics, depth), the Laplace mean and factor and, after an
        importance-sampling fit, its weighted draws and their Pareto k; with
        ``posterior="nuts"`` the chain's draws (the chain runs now if it has not yet).

        Returns:
            The folder.

        Raises:
            InputDataError: unfitted, or ``path`` cannot be a model folder.
        """
        import torch

        from probrank.models import _persist
        from probrank.models._settings import settings_to_json

        mean, factor = self._fitted()
        num_runs, num_topics, depth = self._checked_shape()
        self._ensure_chain()  # a pending chain runs now, so that a load draws alike
        tensors = {
            "laplace": {
                "mean": torch.from_numpy(mean),
                "covariance_factor": torch.from_numpy(factor),
            }
        }
        state: dict[str, Any] = {"num_runs": num_runs, "num_topics": num_topics, "depth": depth}
        if self._importance is not None:
            draws, log_weights = self._importance
            tensors["importance"] = {
                "draws": torch.from_numpy(draws),
                "log_weights": torch.from_numpy(log_weights),
            }
            state["pareto_k"] = self.pareto_k
        if self._mcmc is not None:
            tensors["mcmc"] = {"draws": torch.from_numpy(self._mcmc)}
            state["mcmc_divergences"] = self.mcmc_divergences
        return _persist.save_model(
            path,
            model_class=type(self).__name__,
            settings=settings_to_json(self.settings),
            tensors=tensors,
            state=state,
            encoder=None,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PoolingRelevanceModel:
        """A model saved by :meth:`save`; its predictions and draws equal the saved model's.

        Raises:
            InputDataError: see :func:`probrank.models._persist.load_model`, or tensors that
                do not fit the saved shape (or are not a Cholesky factor).
        """
        from probrank.models import _persist
        from probrank.models._settings import settings_from_json

        manifest, tensors = _persist.load_model(path, cls.__name__)
        settings = manifest.read_settings(
            lambda data: settings_from_json(PoolingModelSettings, data)
        )
        state = manifest.state
        shape = (int(state["num_runs"]), int(state["num_topics"]), int(state["depth"]))
        model = cls(settings)
        size = model._num_parameters(*shape)
        laplace = tensors.get("laplace", {})
        if set(laplace) != {"mean", "covariance_factor"}:
            raise InputDataError("damaged saved model: no Laplace mean and factor", path=path)
        mean = laplace["mean"].numpy()
        factor = laplace["covariance_factor"].numpy()
        if (
            mean.dtype != np.float64
            or factor.dtype != np.float64
            or mean.shape != (size,)
            or factor.shape != (size, size)
            or not (np.isfinite(mean).all() and np.isfinite(factor).all())
            or np.any(np.triu(factor, 1) != 0.0)
            or np.any(np.diag(factor) <= 0.0)
        ):
            raise InputDataError(
                f"damaged saved model: the Laplace mean and factor must be finite float64 of "
                f"{size} and a lower Cholesky factor of {size} x {size} for {shape[0]} runs "
                f"and {shape[1]} topics",
                path=path,
            )
        model._shape = shape
        model.mean = mean.copy()
        model.covariance_factor = factor.copy()
        importance = tensors.get("importance")
        if importance is not None:
            if set(importance) != {"draws", "log_weights"}:
                raise InputDataError(
                    "damaged saved model: no importance draws and weights", path=path
                )
            draws = importance["draws"].numpy()
            log_weights = importance["log_weights"].numpy()
            if (
                draws.ndim != 2
                or draws.shape[1] != size
                or log_weights.shape != (len(draws),)
                or not (np.isfinite(draws).all() and np.isfinite(log_weights).all())
            ):
                raise InputDataError(
                    f"damaged saved model: importance draws must be finite, n x {size}, with n "
                    f"finite log weights",
                    path=path,
                )
            model._importance = (draws.copy(), log_weights.copy())
            model.pareto_k = float(state.get("pareto_k", np.nan))
        chain = tensors.get("mcmc")
        if chain is not None:
            stored = chain.get("draws")
            values = stored.numpy() if stored is not None else None
            if (
                set(chain) != {"draws"}
                or values is None
                or values.dtype != np.float64
                or values.ndim != 2
                or values.shape[1] != size
                or not np.isfinite(values).all()
            ):
                raise InputDataError(
                    f"damaged saved model: NUTS draws must be finite float64, n x {size}",
                    path=path,
                )
            model._mcmc = values.copy()
            model.mcmc_divergences = int(state.get("mcmc_divergences") or 0)
        return model

    def __repr__(self) -> str:
        if self._shape is None or self.mean is None:
            return "PoolingRelevanceModel(unfitted)"
        runs, topics, depth = self._shape
        return f"PoolingRelevanceModel(fitted, runs={runs}, topics={topics}, depth={depth})"


def _names(names: Sequence[str] | None, count: int, what: str) -> list[Any]:
    if names is None:
        return list(range(count))
    out = [str(n) for n in names]
    if len(out) != count:
        raise InputDataError(f"{what} must hold {count} names, got {len(out)}")
    return out


_EPS = 1e-3
_CHUNK = 250
"""Proposal draws whose log-likelihood is computed at once (memory: items x this)."""


def _count_edges(num_runs: int) -> list[int]:
    """Edges of the run-count bins: ``0, 1, 2, 4, ...`` below ``num_runs``, then it (bin
    ``j``: counts in ``(edges[j], edges[j + 1]]``)."""
    edges = [0]
    while 2 ** (len(edges) - 1) < num_runs:
        edges.append(2 ** (len(edges) - 1))
    return [*edges, max(num_runs, 1)]


_HALVINGS = 30


def _maximise(
    design: np.ndarray,
    labels: np.ndarray,
    precision: np.ndarray,
    theta: np.ndarray,
    settings: PoolingModelSettings,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """The MAP by Newton's method with backtracking: a step that lowers the log posterior is
    halved until it does not (the log posterior is concave, so near the MAP every full step is
    taken); it stops when the largest step taken is below ``settings.tolerance``.

    Returns:
        ``(theta, negative Hessian at theta, converged)``.
    """
    objective, gradient, hessian = _newton_terms(design, labels, precision, theta)
    for _ in range(settings.max_iterations):
        step = np.linalg.solve(hessian, gradient)
        for halving in range(_HALVINGS):
            terms = _newton_terms(design, labels, precision, theta + step)
            if terms[0] >= objective - 1e-10 * max(1.0, abs(objective)):
                break
            if halving < _HALVINGS - 1:
                step = step / 2.0
        theta = theta + step
        objective, gradient, hessian = terms
        if np.max(np.abs(step)) < settings.tolerance:
            return theta, hessian, True
    return theta, hessian, False


def _newton_terms(
    design: np.ndarray, labels: np.ndarray, precision: np.ndarray, theta: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """The log posterior (up to a constant), its gradient and its negative Hessian.

    Args:
        design: `n x num_params`.
        labels: 0/1, `n`.
        precision: The Gaussian prior's precision (mean 0), `num_params x num_params`.
        theta: `num_params`.

    Returns:
        ``(log_posterior, gradient `num_params`, negative Hessian `num_params x num_params`)``.
    """
    eta = design @ theta
    prob = _sigmoid(eta)
    loglik = -np.logaddexp(0.0, np.where(labels == 1, -eta, eta)).sum()
    log_post = float(loglik - 0.5 * theta @ precision @ theta)
    gradient = design.T @ (labels - prob) - precision @ theta
    hessian = (design.T * (prob * (1.0 - prob))) @ design + precision
    return log_post, gradient, hessian


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))
