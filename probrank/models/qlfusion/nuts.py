"""SVI against NUTS for one cross-fitting quantifier's Bayesian output layer.

:func:`svi_vs_nuts` (:meth:`~probrank.models.qlfusion.QLFusion.svi_vs_nuts`) trains the
quantifiers of one fold as cross-fitting does (SVI, the model's estimator, binomial loss); then,
holding the learned layer norm and hidden layer fixed, NUTS samples the output layer's weights
under the same N(0, 1) priors and binomial likelihood on the member's training lists. Both
posteriors predict the member's test lists.
"""

from __future__ import annotations

import torch
from torch import Tensor

from probrank.models.qlfusion.members import CrossFitData
from probrank.models.qlfusion.network import train_quantifier
from probrank.models.qlfusion.settings import QLFusionSettings

__all__ = ["svi_vs_nuts"]


def _member_subset(part: dict[str, Tensor], members: slice) -> dict[str, Tensor]:
    return {k: v[members] for k, v in part.items()}


def svi_vs_nuts(
    settings: QLFusionSettings,
    data: CrossFitData,
    *,
    fold: int = 0,
    run_index: int = 0,
    seed: int = 0,
    num_samples: int = 300,
    warmup_steps: int = 300,
    num_chains: int = 2,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Compare the output layer's SVI posterior with NUTS for one (fold, run) quantifier.

    The quantifiers of ``fold`` are trained as cross-fitting trains them (SVI, binomial loss);
    then, holding the learned layer norm and hidden layer fixed, NUTS samples the output
    layer's 33 weights under the same N(0, 1) priors and binomial likelihood on the member's
    training lists. Both posteriors predict the member's test lists.

    Args:
        settings: The training settings (depth, batch sizes, steps, estimator, ...).
        data: The cross-fitting members (:meth:`QLFusion.prepare_cross_fit`).
        fold: The fold whose quantifiers are trained.
        run_index: The run whose quantifier NUTS samples.
        seed: Seeds SVI, NUTS and the predictive draws.
        num_samples: NUTS draws per chain.
        warmup_steps: NUTS warm-up steps per chain.
        num_chains: NUTS chains.
        progress: Show progress bars.

    Returns:
        ``{"SVI": {...}, "NUTS": {...}}`` with the posterior mean of ``|w|``, the mean posterior
        sd, test MAE of the posterior predictive mean ``p_hat``, coverage of the test lists'
        observed proportions by 90% posterior predictive intervals (binomial noise
        included), and for NUTS the largest R-hat and smallest bulk ESS; plus
        ``{"SVI vs NUTS": {"mean |diff| / NUTS sd": ..., "SVI sd / NUTS sd": ...}}``.
    """
    import pyro
    import pyro.distributions as dist

    from probrank.diagnostics.arviz import output_layer_dims, summary, to_inference_data
    from probrank.inference.mcmc import fit_nuts

    depth = settings.depth
    n_runs = len(data.run_names)
    part = slice(fold * n_runs, (fold + 1) * n_runs)
    train, val, test = (_member_subset(d, part) for d in (data.train, data.val, data.test))
    trained = train_quantifier(
        train, val, bayesian=True, losses=["binomial"], batch_sizes=settings.batch_sizes,
        lr=settings.lr, max_epochs=settings.max_epochs, patience=settings.patience,
        max_steps=settings.max_steps, hidden=settings.hidden,
        estimator=settings.estimator.value, init_scale=settings.init_scale, seed=seed,
        progress=progress,
    )  # fmt: skip
    member = int(trained.chosen[0, run_index]) * n_runs + run_index
    net = trained.net
    out = net.output
    keep, tkeep = train["mask"][run_index], test["mask"][run_index]
    with torch.no_grad():
        copies = len(trained.batch_sizes)
        h = net.features(train["x"].repeat(copies, 1, 1))[member][keep].double()
        th = net.features(test["x"].repeat(copies, 1, 1))[member][tkeep].double()
        w_loc = out.weight_loc[member, 0].double()  # type: ignore[index]
        w_sd = out.weight_scale[member, 0].double()  # type: ignore[index]
        b_loc = out.bias_loc[member, 0].double()  # type: ignore[index]
        b_sd = out.bias_scale[member, 0].double()  # type: ignore[index]
    counts = train["counts"][run_index][keep].double()
    true_p = test["counts"][run_index][tkeep].double() / depth
    zero = torch.tensor(0.0, dtype=torch.float64)

    def model(h: Tensor, counts: Tensor | None = None) -> None:
        w = pyro.sample("output.weight", dist.Normal(zero, 1.0).expand([h.shape[-1]]).to_event(1))
        b = pyro.sample("output.bias", dist.Normal(zero, 1.0))
        with pyro.plate("topics", h.shape[0]):
            pyro.sample("k_rel", dist.Binomial(depth, logits=h @ w + b), obs=counts)

    draws = fit_nuts(model, h, counts, num_samples=num_samples, warmup_steps=warmup_steps,
                     num_chains=num_chains, seed=seed, progress=progress)  # fmt: skip
    generator = torch.Generator().manual_seed(seed)
    svi_w = w_loc + w_sd * torch.randn(num_chains * num_samples, w_loc.shape[0],
                                       generator=generator, dtype=torch.float64)  # fmt: skip
    svi_b = b_loc + b_sd * torch.randn(num_chains * num_samples, generator=generator,
                                       dtype=torch.float64)  # fmt: skip
    nuts_w = draws["output.weight"].reshape(-1, w_loc.shape[0])
    nuts_b = draws["output.bias"].reshape(-1)

    def predictive(w: Tensor, b: Tensor) -> dict[str, float]:
        p = torch.sigmoid(th @ w.T + b)  # n_test x S
        # posterior predictive of the observed proportion: binomial noise on top of p_hat
        k = torch.binomial(torch.full_like(p, float(depth)), p, generator=generator) / depth
        low, high = torch.quantile(k, torch.tensor([0.05, 0.95], dtype=p.dtype), dim=1)
        return {
            "posterior mean |w|": float(w.mean(0).abs().mean()),
            "mean posterior sd of w": float(w.std(0).mean()),
            "test MAE of p_hat": float((p.mean(1) - true_p).abs().mean()),
            "90% interval coverage": float(((true_p >= low) & (true_p <= high)).double().mean()),
        }

    dims, coords = output_layer_dims("output", w_loc.shape[0], 1)
    dims = {"output.weight": ["hidden"], "output.bias": []}
    idata = to_inference_data(draws, dims=dims, coords={"hidden": coords["hidden"]})
    table = summary(idata, round_to="none")  # unrounded R-hat / ESS
    result = {"SVI": predictive(svi_w, svi_b), "NUTS": predictive(nuts_w, nuts_b)}
    result["NUTS"]["max R-hat"] = float(table["r_hat"].max())
    result["NUTS"]["min bulk ESS"] = float(table["ess_bulk"].min())
    nuts_sd = nuts_w.std(0)
    result["SVI vs NUTS"] = {
        "mean |diff of means| / NUTS sd": float(((w_loc - nuts_w.mean(0)).abs() / nuts_sd).mean()),
        "mean SVI sd / NUTS sd": float((w_sd / nuts_sd).mean()),
        "training lists": float(h.shape[0]),
        "batch size chosen": float(trained.batch_sizes[int(trained.chosen[0, run_index])]),
    }
    return result
