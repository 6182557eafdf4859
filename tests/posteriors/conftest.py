"""Shared fixtures of the candidate-posterior tests: features, trained Siamese networks and a
builder for every posterior kind."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from probrank.inference.swag import SWAGCollector
from probrank.nn.siamese import PairFitSettings, SiameseUtilityNet, fit_pairs, graded_pairs
from probrank.posteriors.gppl import GPPLPosterior, cosine_prior_mean
from probrank.posteriors.laplace import LastLayerLaplacePosterior
from probrank.posteriors.neural import (
    CandidateSetPosterior,
    EnsemblePosterior,
    IncrementalUpdate,
    MCDropoutPosterior,
)
from probrank.posteriors.swag import SWAGUtilityPosterior, swag_parameters

H = 3  # features are (u, v, u*v, |u-v|): 4 * H wide
N = 9  # candidates (more than the ensemble's 3 members: a singular sample covariance)
KINDS = ["mcdropout", "swag", "laplace", "ensemble", "gppl"]


def features(n: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    u = torch.randn(H, generator=generator, dtype=torch.float64).expand(n, H)
    v = u + torch.randn(n, H, generator=generator, dtype=torch.float64)
    return torch.cat([u, v, u * v, (u - v).abs()], dim=-1)


def trained(seed: int, swag: SWAGCollector | None = None) -> SiameseUtilityNet:
    x = torch.cat([features(6, s) for s in range(10)])
    truth = x[:, H : 2 * H].sum(-1)
    pairs = graded_pairs([truth[k : k + 6].round().tolist() for k in range(0, 60, 6)])
    net = SiameseUtilityNet(4 * H, (16, 4), dropout=0.2, activation="tanh", seed=seed).double()
    hook = None if swag is None else (lambda m, e: swag.collect(swag_parameters(m, 2)))
    fit_pairs(net, x, pairs, PairFitSettings(epochs=6, lr=0.05, seed=seed), on_epoch_end=hook)
    return net


@pytest.fixture(scope="session")
def nets() -> dict[str, object]:
    """A SWAG-tracked network and a 3-member ensemble (read only: posteriors copy them)."""
    collector = SWAGCollector(max_rank=6)
    net = trained(0, collector)
    return {"net": net, "swag": collector.posterior(), "members": [net, trained(1), trained(2)]}


def build(kind: str, nets: dict[str, object], update: IncrementalUpdate | None = None):  # type: ignore[no-untyped-def]
    x = features(N, 99)
    rule = update or IncrementalUpdate(lr=1.0, seed=4)
    net = nets["net"]
    builders: dict[str, Callable[[], CandidateSetPosterior]] = {
        "mcdropout": lambda: MCDropoutPosterior(net, x, update=rule, prediction_seed=3),  # type: ignore[arg-type]
        "swag": lambda: SWAGUtilityPosterior(net, nets["swag"], x, update=rule, sample_seed=5),  # type: ignore[arg-type]
        "laplace": lambda: LastLayerLaplacePosterior(
            net,  # type: ignore[arg-type]
            x,
            prior_precision=0.5,
            residual_variance=0.2,
            scale=0.05,
        ),
        "ensemble": lambda: EnsemblePosterior(nets["members"], x, update=rule),  # type: ignore[arg-type]
        "gppl": lambda: GPPLPosterior(x, cosine_prior_mean(H, 2.0), seed=1),
    }
    return builders[kind]()
