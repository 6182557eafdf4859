"""QLFusion: a shallow Bayesian quantifier of relevant documents in a ranked list.

For one (topic, run) the input is the run's top ``k`` scores, min-max normalised within the
list and zero padded; the network is

    LayerNorm(k) (learned gain and bias) -> Linear(k, 32) -> sigmoid
        -> BayesianLinear(32, 1) with N(0, 1) priors -> sigmoid = p_hat,

``p_hat`` the predicted proportion of relevant documents in the top ``k``. The likelihood is
``Binomial(k, p_hat)`` of the observed relevant count (equal to the paper's
``KL(B(k, p) || B(k, p_hat))`` loss up to a constant), so SVI on this model maximises the
ELBO of the paper's loss. Only the output layer is Bayesian; the layer norm and hidden layer
are point estimates (``nn.Parameter`` of the :class:`~pyro.nn.PyroModule`) learned by the same
SVI steps.

:class:`QLFusionNet` is vectorised over ``num_models`` independent members (e.g. every
(fold, run, batch size) combination of a cross-validation) so that all of them train in one
SVI loop; every parameter's first dimension indexes the member. ``bayesian=False`` gives the
deterministic twin (a plain output layer; the guide is empty, so the ELBO is the
log-likelihood) and ``loss="mse"`` swaps the binomial for a Gaussian likelihood on the
proportion (squared error): the paper's Table 2 grid.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.infer import TraceMeanField_ELBO
from pyro.nn import PyroModule
from torch import Tensor, nn

from probrank._options import parse_enum
from probrank.data.trec import Qrels, Run
from probrank.exceptions import InputDataError
from probrank.fusion.normalize import normalize_scores
from probrank.inference.ensemble_batches import EnsembleBatches
from probrank.inference.svi import FitResult, FusedAdam, fit_svi
from probrank.likelihoods.proportion import (
    Likelihood,
    binomial_proportion,
    gaussian_proportion,
    likelihood_name,
    mean_proportion,
)
from probrank.models.qlfusion.likelihoods import LatentConcentration
from probrank.nn.bayesian_linear import BayesianLinear

__all__ = [
    "QLFusionNet",
    "QuantifierLoss",
    "RowGroups",
    "TrainedQuantifier",
    "list_features",
    "relevant_counts",
    "train_quantifier",
]


class QuantifierLoss(str, Enum):
    """The training loss (likelihood) of the quantifier."""

    BINOMIAL = "binomial"
    """The paper's loss: binomial likelihood of the relevant count (= KL(B(n,p)||B(n,p_hat)))."""
    MSE = "mse"
    """Squared error on the proportion, as a Gaussian likelihood (the ablation)."""


def list_features(
    run: Run, query_ids: Sequence[str], depth: int = 100, *, dtype: torch.dtype | None = None
) -> Tensor:
    """The quantifier's input: each list's top ``depth`` scores, min-max normalised, padded.

    A topic the run lacks (or an empty list) gives a row of zeros; a list whose scores are all
    equal maps to 1.0 (as :func:`probrank.fusion.normalize.normalize` does).

    Args:
        run: The run.
        query_ids: `n` topics, in output order.
        depth: `k`, the list length.
        dtype: Floating dtype of the features; default ``torch.get_default_dtype()``.

    Returns:
        `n x k` features in ``dtype``.
    """
    out = torch.zeros(len(query_ids), depth, dtype=_floating(dtype))
    scores = run.as_dict()
    for i, qid in enumerate(query_ids):
        if qid not in scores or not scores[qid]:
            continue
        top = run.ranking(qid, depth)
        out[i, : len(top)] = torch.tensor(normalize_scores([s for _, s in top], "minmax"))
    return out


def relevant_counts(
    run: Run,
    qrels: Qrels,
    query_ids: Sequence[str],
    depth: int = 100,
    relevance_level: int = 1,
    *,
    dtype: torch.dtype | None = None,
) -> Tensor:
    """Relevant documents among each list's top ``depth`` (trec_eval order).

    Args:
        run: The run.
        qrels: The judgements (unjudged documents count as non-relevant).
        query_ids: `n` topics.
        depth: `k`.
        relevance_level: Minimum grade counted as relevant.
        dtype: Floating dtype of the counts (the likelihoods take real-valued counts);
            default ``torch.get_default_dtype()``.

    Returns:
        `n` counts in ``[0, k]``, in ``dtype``.
    """
    judged = qrels.as_dict()
    scores = run.as_dict()
    out = torch.zeros(len(query_ids), dtype=_floating(dtype))
    for i, qid in enumerate(query_ids):
        if qid not in scores:
            continue
        grades = judged.get(qid, {})
        out[i] = sum(1 for d, _ in run.ranking(qid, depth) if grades.get(d, 0) >= relevance_level)
    return out


def _floating(dtype: torch.dtype | None) -> torch.dtype:
    """``dtype`` (default ``torch.get_default_dtype()``), refused unless floating."""
    chosen = dtype if dtype is not None else torch.get_default_dtype()
    if not chosen.is_floating_point:
        raise InputDataError(f"dtype must be a floating dtype, got {chosen}")
    return chosen


RowGroups = Sequence[tuple[int, int]]
"""``[(members, rows), ...]``: contiguous member groups and how many leading rows each uses."""


def _hidden(
    x: Tensor, gain: Tensor, bias: Tensor, weight: Tensor, offset: Tensor, layer_norm: bool
) -> Tensor:
    """``sigmoid(LayerNorm(x) W^T + b)`` for `M x n x k` inputs and `M`-batched parameters."""
    normed = (nn.functional.layer_norm(x, (x.shape[-1],)) if layer_norm else x) * gain + bias
    return torch.sigmoid(torch.baddbmm(offset, normed, weight.transpose(-1, -2)))


class _DeterministicLinear(PyroModule):
    """A batched plain linear layer ``M x o x d`` (the deterministic twin's output layer)."""

    def __init__(self, in_features: int, out_features: int, members: int, generator: object):
        super().__init__()
        bound = in_features**-0.5
        shape = (members, out_features, in_features)
        self.weight = nn.Parameter((torch.rand(shape, generator=generator) * 2 - 1) * bound)  # type: ignore[call-overload]
        self.bias = nn.Parameter(torch.zeros(members, out_features))

    def forward(self, x: Tensor) -> Tensor:
        return torch.matmul(x, self.weight.transpose(-1, -2)) + self.bias.unsqueeze(-2)


class QLFusionNet(PyroModule):
    """The QLFusion network, vectorised over ``num_models`` independent members.

    Args:
        depth: `k`, the input width (the list length for the paper's inputs).
        hidden: Width of the hidden sigmoid layer (32 in the paper).
        num_models: `M`, independent members trained together.
        bayesian: A :class:`~probrank.nn.bayesian_linear.BayesianLinear` output layer with
            N(0, ``prior_scale``) priors (True) or a plain one (False).
        loss: ``"binomial"`` (the paper's) or ``"mse"``, or one of them per member.
        estimator: The output layer's gradient estimator (``"flipout"`` as in the paper).
        prior_scale: Standard deviation of the output layer's Normal priors.
        init_scale: Initial standard deviation of the output layer's mean-field guide.
        layer_norm: Normalise each input row (the paper's, for score curves); False keeps
            only the learned per-feature gain and bias (for pre-standardised features).
        total_count: `n` of the binomial likelihood, the list length whose relevant
            documents are counted (default ``depth``; set it when the inputs are not the
            list's scores).
        weight_prior: The output layer's weight prior in place of N(0, ``prior_scale``)
            (a Pyro distribution over one weight, expanded to every weight).
        likelihood: ``total_count -> (logits -> Distribution)``, the counts' likelihood of
            the ``"binomial"`` members in place of the binomial (e.g. a beta-binomial).
        seed: Seeds the initial weights.

    Inputs are `M x n x k`; :meth:`model` and :meth:`guide` take ``(x, counts, mask, scale)``,
    all `M x n` but ``x``, with ``counts`` None to predict.
    """

    def __init__(
        self,
        depth: int = 100,
        hidden: int = 32,
        *,
        num_models: int = 1,
        bayesian: bool = True,
        loss: QuantifierLoss | str | Sequence[QuantifierLoss | str] = QuantifierLoss.BINOMIAL,
        estimator: str = "flipout",
        prior_scale: float = 1.0,
        init_scale: float = 1e-2,
        layer_norm: bool = True,
        total_count: int | None = None,
        weight_prior: dist.Distribution | None = None,
        likelihood: Callable[[int], Likelihood] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self._likelihood = likelihood
        if depth < 1 or hidden < 1 or num_models < 1:
            raise InputDataError(
                f"depth, hidden and num_models must be positive, got {depth}, {hidden}, "
                f"{num_models}"
            )
        self.depth, self.hidden, self.num_models = depth, hidden, num_models
        self.total_count = depth if total_count is None else int(total_count)
        if self.total_count < 1:
            raise InputDataError(f"total_count must be positive, got {total_count}")
        self.bayesian = bayesian
        self.layer_norm = layer_norm
        names = [loss] * num_models if isinstance(loss, str) else list(loss)
        if len(names) != num_models:
            raise InputDataError(f"got {len(names)} losses for {num_models} members")
        self.losses = [parse_enum(QuantifierLoss, n, "loss") for n in names]
        self.register_buffer(
            "binomial", torch.tensor([n is QuantifierLoss.BINOMIAL for n in self.losses])
        )
        generator = torch.Generator().manual_seed(seed)
        self.norm_gain = nn.Parameter(torch.ones(num_models, 1, depth))
        self.norm_bias = nn.Parameter(torch.zeros(num_models, 1, depth))
        bound = depth**-0.5
        self.hidden_weight = nn.Parameter(
            (torch.rand(num_models, hidden, depth, generator=generator) * 2 - 1) * bound
        )
        self.hidden_bias = nn.Parameter(
            (torch.rand(num_models, 1, hidden, generator=generator) * 2 - 1) * bound
        )
        prior = dist.Normal(0.0, prior_scale) if weight_prior is None else weight_prior
        self.output: PyroModule
        if bayesian:
            self.output = BayesianLinear(
                hidden,
                1,
                prior,
                prior,
                estimator=estimator,
                batch_shape=(num_models,),
                init_scale=init_scale,
                seed=int(torch.randint(0, 2**31 - 1, (), generator=generator)),
            )
        else:
            self.output = _DeterministicLinear(hidden, 1, num_models, generator)
        built = None if likelihood is None else likelihood(self.total_count)
        if built is not None:
            check_likelihood(built, likelihood)
        self._latent = built if isinstance(built, LatentConcentration) else None
        if self._latent is not None:  # log c of each member, learned with the network
            self.concentration_layer = _LogConcentration(
                num_models, self._latent.initial_log_concentration
            )

    @torch.no_grad()
    def refit_concentration(
        self, x: Tensor, counts: Tensor, mask: Tensor, *, points: int = 601
    ) -> None:
        """Set each member's latent concentration to its MAP given the fitted network.

        Training keeps every parameter at the epoch of best validation MAE, which ``c`` does
        not affect, so the ``c`` of that epoch need not have converged. With the network fixed
        (the guide's mean weights), ``log p(k | c) + log p(c)`` over a member's training lists
        is a smooth function of one number: maximised on a grid of ``points`` values of
        ``log c`` in ``[log 0.1, log 1e5]`` (no-op without a latent concentration).

        Args:
            x: `M x n x k` training inputs.
            counts: `M x n` relevant counts.
            mask: `M x n` bool, False on padding rows.
        """
        if self._latent is None:
            return
        p_hat = self.predict(x, mean_weights=True, latent=True)[0].double().clamp(1e-9, 1 - 1e-9)
        grid = torch.linspace(math.log(0.1), math.log(1e5), points, dtype=torch.float64)
        c = grid.exp().view(-1, 1, 1)  # G x 1 x 1
        total = torch.tensor(float(self.total_count), dtype=torch.float64)
        log_lik = dist.BetaBinomial(c * p_hat, c * (1 - p_hat), total_count=total).log_prob(
            counts.double()
        )  # G x M x n
        objective = (log_lik * mask.double()).sum(-1) + dist.LogNormal(
            self._latent.initial_log_concentration, self._latent.prior_sd
        ).log_prob(c.view(-1, 1))  # G x M
        best = grid[objective.argmax(0)]
        log_value = self.concentration_layer.log_value
        log_value.copy_(best.view(-1, 1).to(log_value))

    @property
    def concentration(self) -> Tensor | None:
        """`M x 1` learned concentrations
        (:class:`~probrank.models.qlfusion.likelihoods.LatentConcentration`), or None for a
        likelihood without one."""
        if self._latent is None:
            return None
        return self.concentration_layer.log_value.detach().exp()

    def likelihoods(self, members: Tensor | None = None) -> tuple[Likelihood, Likelihood]:
        """The counts' likelihood of the ``"binomial"`` members (the paper's binomial, or the
        ``likelihood`` given) and the Gaussian (MSE) one, of counts out of `k`.

        Args:
            members: `M'` member indices whose learned parameters (a latent concentration)
                the likelihood takes, for logits `... x M' x n` (default: all `M`).
        """
        if self._latent is not None:
            log_c = self.concentration_layer.log_value.detach()
            log_c = log_c if members is None else log_c[members]
            counts = self._latent.with_concentration(log_c.exp())
        elif self._likelihood is None:
            counts = binomial_proportion(self.total_count)
        else:
            counts = self._likelihood(self.total_count)
        return counts, gaussian_proportion(self.total_count)

    def features(self, x: Tensor, groups: RowGroups | None = None) -> Tensor:
        """Layer norm, hidden linear layer and sigmoid.

        Args:
            x: `M x n x k` inputs.
            groups: Optional ``[(members, rows), ...]`` covering the `M` members in order:
                only the first ``rows`` rows of each group's members are computed, the rest
                are padding and get zero activations (mini-batches of different sizes).

        Returns:
            `M x n x hidden` hidden activations.
        """
        gain, bias = self.norm_gain, self.norm_bias
        weight, offset = self.hidden_weight, self.hidden_bias
        if groups is None:
            return _hidden(x, gain, bias, weight, offset, self.layer_norm)
        if sum(m for m, _ in groups) != x.shape[0] or any(r > x.shape[1] for _, r in groups):
            raise InputDataError(f"row groups {list(groups)} do not fit inputs {tuple(x.shape)}")
        split = [m for m, _ in groups]  # split (not slicing): one concatenation in backward
        parts = []
        for (_, rows), xg, g, b, w, o in zip(
            groups,
            x.split(split),
            gain.split(split),
            bias.split(split),
            weight.split(split),
            offset.split(split),
            strict=True,
        ):
            h = _hidden(xg[:, :rows], g, b, w, o, self.layer_norm)
            parts.append(nn.functional.pad(h, (0, 0, 0, x.shape[1] - rows)))
        return torch.cat(parts)

    def forward(self, x: Tensor, groups: RowGroups | None = None) -> Tensor:
        """Logits of ``p_hat``, `M x n`, for inputs `M x n x k` (one weight draw)."""
        return self.output(self.features(x, groups)).squeeze(-1)

    def model(
        self,
        x: Tensor,
        counts: Tensor | None = None,
        mask: Tensor | None = None,
        scale: Tensor | None = None,
        groups: RowGroups | None = None,
    ) -> Tensor:
        """The Pyro model: ``counts ~ likelihood(logits)`` with logits from :meth:`forward`.

        Args:
            x: `M x n x k` inputs.
            counts: `M x n` observed relevant counts, or None.
            mask: `M x n` bool, False for padding rows (ignored by the likelihood).
            scale: `M x n` likelihood scale, ``N_m / n`` to scale a mini-batch up to member
                ``m``'s full training set of ``N_m`` lists.
            groups: Row groups (see :meth:`features`); rows outside them must be masked.

        Returns:
            `M x n` ``p_hat`` (also the deterministic site ``"p_hat"``).
        """
        logits = self(x, groups)
        p_hat = pyro.deterministic("p_hat", torch.sigmoid(logits))
        counts_likelihood, mse_likelihood = self.likelihoods()
        if self._latent is not None:  # the concentration's prior, once per step (MAP)
            log_c = self.concentration_layer()
            pyro.factor("concentration_prior", self._latent.prior_log_prob(log_c))
            counts_likelihood = self._latent.with_concentration(log_c.exp())
        keep = torch.ones_like(logits, dtype=torch.bool) if mask is None else mask.bool()
        binomial = self.binomial.view(-1, 1)
        with (
            pyro.plate("members", x.shape[0], dim=-2),
            pyro.plate("topics", x.shape[1], dim=-1),
            poutine.scale(scale=scale if scale is not None else 1.0),
        ):
            for name, likelihood, selected in zip(
                ("k_rel", "k_rel_mse"),
                (counts_likelihood, mse_likelihood),
                (binomial, ~binomial),
                strict=True,
            ):
                if bool(selected.any()):
                    pyro.sample(name, likelihood(logits).mask(keep & selected), obs=counts)  # type: ignore[attr-defined]
        return p_hat

    def guide(
        self,
        x: Tensor,
        counts: Tensor | None = None,
        mask: Tensor | None = None,
        scale: Tensor | None = None,
        groups: RowGroups | None = None,
    ) -> None:
        """The mean-field Normal guide of the output layer (empty for the deterministic twin)."""
        if isinstance(self.output, BayesianLinear):
            self.output.guide()

    @torch.no_grad()
    def predict(
        self,
        x: Tensor,
        num_samples: int = 100,
        *,
        seed: int = 0,
        mean_weights: bool = False,
        latent: bool = False,
    ) -> Tensor:
        """Draws of the predicted proportion from the fitted guide (or the point estimate).

        The proportion is the likelihood's mean share given the logits
        (:meth:`mean_proportion`; ``sigmoid(logits)`` for the built-ins), so that a probit
        or zero-inflated likelihood's prediction means what the likelihood says.

        Args:
            x: `M x n x k` inputs.
            num_samples: `S` draws of the output layer (ignored by the deterministic twin or
                with ``mean_weights``).
            seed: Seeds the draws.
            mean_weights: Use the guide's mean weights (one "draw").
            latent: Return ``sigmoid(logits)``, the likelihood's input (what
                :func:`~probrank.models.qlfusion.predictive.predictive_shares` and
                :func:`~probrank.models.qlfusion.predictive.pointwise_log_likelihood` take),
                instead of the mean proportion.

        Returns:
            `S x M x n` proportions (`1 x M x n` when deterministic or ``mean_weights``).
        """
        logits = self.logit_draws(x, num_samples, seed=seed, mean_weights=mean_weights)
        return torch.sigmoid(logits) if latent else self.mean_proportion(logits)

    @torch.no_grad()
    def logit_draws(
        self, x: Tensor, num_samples: int = 100, *, seed: int = 0, mean_weights: bool = False
    ) -> Tensor:
        """Draws of the logits, the likelihood's argument (arguments as :meth:`predict`).

        Returns:
            `S x M x n` logits (`1 x M x n` when deterministic or ``mean_weights``).
        """
        hidden = self.features(x)
        out: Any = self.output
        if not isinstance(out, BayesianLinear):
            # the plain product, not out(hidden): calling a PyroModule outside a trace would
            # register its parameters in Pyro's global param store
            logits = torch.matmul(hidden, out.weight.transpose(-1, -2)) + out.bias.unsqueeze(-2)
            return logits.squeeze(-1).unsqueeze(0)
        if mean_weights:
            w_loc, b_loc = out.weight_loc, out.bias_loc
            logits = torch.matmul(hidden, w_loc.transpose(-1, -2)) + b_loc.unsqueeze(-2)
            return logits.squeeze(-1).unsqueeze(0)
        return out.predictive(hidden, num_samples, seed=seed).squeeze(-1)

    def mean_proportion(self, logits: Tensor) -> Tensor:
        """The likelihood's expected share of relevant documents given the logits
        (:func:`probrank.likelihoods.mean_proportion`), per member: the counts' likelihood
        for the ``"binomial"`` members, ``sigmoid`` for the Gaussian (MSE) ones.

        Args:
            logits: `... x M x n` logits.

        Returns:
            `... x M x n` proportions.
        """
        counts, _ = self.likelihoods()
        p_hat = torch.sigmoid(logits)
        if not bool(self.binomial.any()):
            return p_hat
        mean = mean_proportion(counts, logits, self.total_count)
        return torch.where(self.binomial.view(-1, 1), mean, p_hat)


def _likelihood_error(net: QLFusionNet, message: str) -> InputDataError:
    """An error about the network's counts' likelihood: a :class:`~probrank._plugins.
    PluginError` naming its ``"module:callable"`` when it came from a config."""
    from probrank._plugins import PluginError

    target = getattr(net.likelihoods()[0], "target", None)
    if isinstance(target, str):
        return PluginError(message, target=target)
    return InputDataError(message)


def check_likelihood_on_data(net: QLFusionNet, x: Tensor, counts: Tensor, mask: Tensor) -> None:
    """Check the counts' likelihood on the real training lists at the network's current
    (initial) logits: finite ``log_prob``, finite gradient in the logits and a finite mean
    proportion for every list, so that a likelihood that is NaN only on real data is named
    (with the list) instead of ending the SVI loop with "the training loss became nan".

    Args:
        net: The network (its ``"binomial"`` members use the likelihood).
        x: `M x N x k` inputs.
        counts: `M x N` relevant counts.
        mask: `M x N` bool, False on padding rows.

    Raises:
        InputDataError: naming the likelihood, the list and its count (a
            :class:`~probrank._plugins.PluginError` for a config's ``"module:callable"``).
    """
    likelihood = net.likelihoods()[0]
    name = likelihood_name(likelihood)
    with torch.no_grad():
        logits = net.logit_draws(x, 1, seed=0, mean_weights=True)[0]
    leaf = logits.detach().requires_grad_(True)
    keep = mask.bool() & net.binomial.view(-1, 1)
    try:  # as training evaluates it: without argument validation (fit_svi's validate=False)
        with torch.enable_grad(), pyro.validation_enabled(False):
            log_prob = likelihood(leaf).log_prob(counts)
            (grad,) = torch.autograd.grad(log_prob[keep].sum(), leaf, allow_unused=True)
    except Exception as exc:
        raise _likelihood_error(
            net, f"the likelihood {name} failed on the training counts: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}"
        ) from exc  # fmt: skip
    grad = torch.zeros_like(logits) if grad is None else grad
    log_prob = log_prob.detach()
    bad = keep & ~(torch.isfinite(log_prob) & torch.isfinite(grad))
    if bool(bad.any()):
        m, i = (int(v) for v in bad.nonzero()[0])
        what = "log_prob" if not bool(torch.isfinite(log_prob[m, i])) else "its gradient"
        raise _likelihood_error(
            net, f"the likelihood {name}: {what} is not finite on {int(bad.sum())} training "
            f"list(s), first a list with {float(counts[m, i]):g} relevant of "
            f"{net.total_count} at logit {float(logits[m, i]):.4g} (log_prob "
            f"{float(log_prob[m, i])}); it must be finite for every count in [0, "
            f"{net.total_count}]"
        )  # fmt: skip
    try:
        net.mean_proportion(logits)
    except InputDataError as exc:
        raise _likelihood_error(net, exc.reason) from None


def check_likelihood(built: object, factory: object) -> None:
    """A likelihood factory's result must be a callable of logits, not a distribution (Pyro
    distributions are callable: calling one with logits would *sample* with the logits as
    the sample shape, and fail far from the cause).

    Raises:
        InputDataError: naming the factory and what it returned.
    """
    from torch.distributions import Distribution

    if isinstance(built, Distribution) or not callable(built):
        raise InputDataError(
            f"the likelihood factory {likelihood_name(factory)}(total_count, ...) must return "
            f"a callable of logits (logits -> distribution), got a {type(built).__name__}"
            + (": wrap it, `return lambda logits: ...`" if isinstance(built, Distribution) else "")
        )


class _LogConcentration(PyroModule):
    """``log c`` of each member's latent concentration (`M x 1`), a point estimate learned by
    the same SVI steps as the hidden layer (read through ``forward`` so that Pyro registers it
    in the parameter store, which keeps each member's best-epoch value)."""

    def __init__(self, members: int, start: float) -> None:
        super().__init__()
        self.log_value = nn.Parameter(torch.full((members, 1), start))

    def forward(self) -> Tensor:
        return self.log_value


@dataclass
class TrainedQuantifier:
    """Quantifiers trained for every (batch size, loss) pair, one batch size chosen per member.

    Members of the underlying net are ordered ``(batch size, loss, member)``.

    Attributes:
        net: The vectorised :class:`QLFusionNet` with `B * L * M` members.
        batch_sizes: The `B` candidate batch sizes.
        losses: The `L` losses trained.
        chosen: `L x M` index into ``batch_sizes`` chosen per (loss, member) on validation MAE.
        val_mae: `B x L x M` validation mean absolute error at each member's best epoch.
        best_epoch: `B x L x M` best epoch of each member, in the member's own epochs.
        fit: The :class:`~probrank.inference.svi.FitResult`.
    """

    net: QLFusionNet
    batch_sizes: list[int]
    losses: list[QuantifierLoss]
    chosen: Tensor
    val_mae: Tensor
    best_epoch: Tensor
    fit: FitResult

    def draws(
        self,
        x: Tensor,
        loss: QuantifierLoss | str = QuantifierLoss.BINOMIAL,
        num_samples: int = 100,
        *,
        seed: int = 0,
        latent: bool = False,
    ) -> Tensor:
        """Posterior draws of the proportion under each member's chosen batch size.

        Args:
            x: `M x n x k` inputs.
            loss: Which loss's quantifiers to use.
            num_samples: `S` draws (1 for the deterministic twin).
            seed: Seeds the draws.
            latent: ``sigmoid(logits)`` (the likelihood's input) instead of the likelihood's
                mean proportion (see :meth:`QLFusionNet.predict`).

        Returns:
            `S x M x n` proportions.
        """
        b, l_count = len(self.batch_sizes), len(self.losses)
        member = self.chosen_members(loss)
        full = x.unsqueeze(0).expand(b * l_count, *x.shape).reshape(-1, *x.shape[1:])
        draws = self.net.predict(full, num_samples, seed=seed, latent=latent)
        return draws[:, member]

    def chosen_members(self, loss: QuantifierLoss | str = QuantifierLoss.BINOMIAL) -> Tensor:
        """`M` indices into :attr:`net`'s members: each member's chosen batch size."""
        li = self.losses.index(parse_enum(QuantifierLoss, loss, "loss"))
        m = self.chosen.shape[-1]
        return (self.chosen[li] * len(self.losses) + li) * m + torch.arange(m)

    def likelihood(self, loss: QuantifierLoss | str = QuantifierLoss.BINOMIAL) -> Likelihood:
        """The counts' likelihood of the chosen members (with their learned parameters, if
        any), for logits `... x M x n`."""
        parsed = parse_enum(QuantifierLoss, loss, "loss")
        counts, mse = self.net.likelihoods(self.chosen_members(parsed))
        return counts if parsed is QuantifierLoss.BINOMIAL else mse

    def predict(
        self,
        x: Tensor,
        loss: QuantifierLoss | str = QuantifierLoss.BINOMIAL,
        num_samples: int = 100,
        *,
        seed: int = 0,
    ) -> Tensor:
        """Posterior predictive mean of ``p_hat``, `M x n`, for inputs `M x n x k`."""
        return self.draws(x, loss, num_samples, seed=seed).mean(0)

    def chosen_batch_sizes(self) -> list[list[int]]:
        """The batch size chosen for each (loss, member)."""
        return [[self.batch_sizes[i] for i in row] for row in self.chosen.tolist()]


def _masked_mae(p_hat: Tensor, p: Tensor, mask: Tensor) -> Tensor:
    weight = mask.to(p_hat.dtype)
    return ((p_hat - p).abs() * weight).sum(-1) / weight.sum(-1).clamp_min(1.0)


def train_quantifier(
    train: Mapping[str, Tensor],
    val: Mapping[str, Tensor],
    *,
    bayesian: bool = True,
    losses: Sequence[QuantifierLoss | str] = (QuantifierLoss.BINOMIAL,),
    batch_sizes: Sequence[int] = (1, 2, 4, 8, 16),
    lr: float = 5e-4,
    max_epochs: int = 500,
    patience: int = 20,
    max_steps: int | None = None,
    hidden: int = 32,
    estimator: str = "flipout",
    init_scale: float = 1e-2,
    layer_norm: bool = True,
    total_count: int | None = None,
    weight_prior: dist.Distribution | None = None,
    likelihood: Callable[[int], Likelihood] | None = None,
    num_samples: int = 1,
    seed: int = 0,
    progress: bool = True,
) -> TrainedQuantifier:
    """Train `M` independent quantifiers for every batch size and loss, in one SVI loop.

    All `B * L * M` (batch size, loss, member) combinations are members of one vectorised
    :class:`QLFusionNet` trained by :func:`~probrank.inference.svi.fit_svi` (Pyro SVI,
    ``TraceMeanField_ELBO``, Adam with ``lr`` as one fused
    :class:`~probrank.inference.svi.FusedAdam` step). Each member uses its own batch size
    (:class:`~probrank.inference.ensemble_batches.EnsembleBatches`; the hidden layer is
    evaluated only on each group's real rows), so a step of the loop is one step of every
    member. Validation MAE is checked every period of ``ceil(N / max batch size)`` steps (one
    epoch of the largest batch size); each member's patience and epoch limit are converted
    from its own epochs to periods, so a member with batch size ``b`` stops improving after
    ``max_epochs`` of *its* epochs, stops after ``patience`` of its epochs without improvement,
    and keeps its best parameters. Per (loss, member), the batch size with the lowest
    validation MAE is chosen; validation never sees test lists.

    Args:
        train: ``{"x": M x N x k, "counts": M x N, "mask": M x N bool}`` training lists
            (``mask`` False on padding rows, for members with fewer lists).
        val: The same keys for the validation lists.
        bayesian: Bayesian output layer (True) or the deterministic twin.
        losses: Losses to train (``"binomial"``, ``"mse"``).
        batch_sizes: Candidate mini-batch sizes.
        lr: Adam learning rate.
        max_epochs: Epoch limit, in each member's own epochs.
        patience: Early-stopping patience, in each member's own epochs.
        max_steps: Optional cap on the number of SVI steps (every member takes one per step).
        hidden: Hidden width.
        estimator: Output layer estimator.
        init_scale: Initial standard deviation of the output layer's guide.
        layer_norm: Row-wise layer norm of the inputs (see :class:`QLFusionNet`).
        total_count: The list length `n` the counts are out of (default: the input width
            `k`, right for the paper's inputs).
        weight_prior: The output layer's weight prior (default N(0, 1); see
            :class:`QLFusionNet`).
        likelihood: The counts' likelihood factory of the ``"binomial"`` members (default
            the binomial; see :class:`QLFusionNet`).
        num_samples: Weight draws averaged for the validation MAE (1: the guide's mean).
        seed: Seeds initialisation and training.
        progress: Show a progress bar.

    Returns:
        A :class:`TrainedQuantifier`.
    """
    x, counts, mask = train["x"], train["counts"], train["mask"].bool()
    members, size, depth = x.shape
    n_list = depth if total_count is None else int(total_count)
    val_x, val_mask = val["x"], val["mask"].bool()
    val_p = val["counts"] / n_list
    if bool((mask.sum(-1) < 1).any()) or bool((val_mask.sum(-1) < 1).any()):
        raise InputDataError("every member needs at least one training and one validation list")
    if not batch_sizes or min(batch_sizes) < 1:
        raise InputDataError(f"batch sizes must be positive, got {list(batch_sizes)}")
    if max_epochs < 1 or patience < 1 or (max_steps is not None and max_steps < 1):
        raise InputDataError(
            f"max_epochs, patience and max_steps must be positive, got {max_epochs}, "
            f"{patience}, {max_steps}"
        )
    loss_list = [parse_enum(QuantifierLoss, n, "loss") for n in losses]
    sizes = [min(b, size) for b in batch_sizes]
    copies = len(sizes) * len(loss_list)
    group = len(loss_list) * members

    def tile(t: Tensor, times: int) -> Tensor:
        return t.unsqueeze(0).expand(times, *t.shape).reshape(-1, *t.shape[1:])

    batches = EnsembleBatches(
        [x.unsqueeze(0).expand(len(loss_list), *x.shape).flatten(0, 1),
         counts.unsqueeze(0).expand(len(loss_list), *counts.shape).flatten(0, 1)],
        tile(mask, len(loss_list)),
        sizes,
    )  # fmt: skip
    member_sizes = torch.tensor(sizes).repeat_interleave(group)
    own_epoch = torch.ceil(size / member_sizes) / batches.period  # periods per own epoch
    patience_periods = torch.ceil(patience * own_epoch).long().clamp_min(1)
    limit_periods = torch.ceil(max_epochs * own_epoch).long().clamp_min(1)
    max_periods = int(limit_periods.max())
    if max_steps is not None:
        max_periods = max(1, min(max_periods, max_steps // batches.period))
    net = QLFusionNet(
        depth,
        hidden,
        num_models=copies * members,
        bayesian=bayesian,
        loss=[n for _ in sizes for n in loss_list for _ in range(members)],
        estimator=estimator,
        init_scale=init_scale,
        layer_norm=layer_norm,
        total_count=n_list,
        weight_prior=weight_prior,
        likelihood=likelihood,
        seed=seed,
    )
    vx, vp, vm = (tile(t, copies) for t in (val_x, val_p, val_mask))
    periods_done = [0]

    def metric() -> Tensor:
        with torch.inference_mode():
            if num_samples <= 1:
                p_hat = net.predict(vx, mean_weights=True)[0]
            else:
                p_hat = net.predict(vx, num_samples, seed=seed).mean(0)
            mae = _masked_mae(p_hat, vp, vm).double()
        periods_done[0] += 1
        # a member past its own epoch limit can no longer improve (its best is kept)
        return torch.where(periods_done[0] > limit_periods, math.inf, mae)

    tiled = tile(x, copies), tile(counts, copies), tile(mask, copies)
    if likelihood is not None:  # your own likelihood, on the real counts before any step
        check_likelihood_on_data(net, *tiled)
    try:
        fit = fit_svi(
            net.model,
            net.guide,
            batches,
            optimizer=FusedAdam({"lr": lr}),
            loss=TraceMeanField_ELBO(),
            max_epochs=max_periods,
            patience=patience_periods,
            metric=metric,
            seed=seed,
            progress=progress,
            description="quantifiers" + ("" if bayesian else " (det.)"),
            validate=False,
        )
    except ValueError as exc:  # InputDataError too: "the training loss became nan"
        if likelihood is None or "nan" not in str(exc).lower():
            raise
        name = likelihood_name(net.likelihoods()[0])
        raise _likelihood_error(net, f"training failed with the likelihood {name}: {exc}") from exc
    net.refit_concentration(*tiled)  # a latent c at its MAP given the best-epoch network
    shape = (len(sizes), len(loss_list), members)
    val_mae = torch.as_tensor(fit.best_metric, dtype=torch.float64).view(shape)
    best_period = torch.as_tensor(fit.best_epoch, dtype=torch.float64).view(shape)
    best_epoch = torch.floor(best_period / own_epoch.view(shape)).long()
    return TrainedQuantifier(
        net=net,
        batch_sizes=list(batch_sizes),
        losses=loss_list,
        chosen=val_mae.argmin(0),
        val_mae=val_mae,
        best_epoch=best_epoch,
        fit=fit,
    )
