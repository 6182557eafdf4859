"""The protocols' small configs on the local executor and on Ray give the same results.

Each protocol runs once per executor on the same config (the Ray run on the session's 2-CPU
instance); every value, table and data entry must be equal, except the wall times measured where
each task ran. The configs are the protocols' own test configs (tiny random transformers,
generated data) or the smoke config on the shared data, kept small so the whole file takes
about a minute.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from probrank.experiments import load_document, settings_of
from probrank.experiments.results import ExperimentResult
from tests.experiments.gpf import test_finetune, test_frozen
from tests.experiments.interactive.test_protocol import TINY
from tests.experiments.mediqa.test_protocol import _config as mediqa_config
from tests.experiments.mediqa.test_protocol import fake_data  # noqa: F401  (a fixture)

pytestmark = pytest.mark.xdist_group("ray")

MODELS = Path(__file__).resolve().parents[2] / "models"

TIMINGS = ("s/round", "median_round_seconds", "wall time", "seconds")
"""Names of values that are wall times (differ from run to run on any executor)."""


def _comparable(value: Any) -> Any:
    """``value`` without its wall times, NaN as a string (so that equal NaNs compare equal)."""
    if isinstance(value, dict):
        return {
            k: _comparable(v)
            for k, v in value.items()
            if not any(t in str(k).lower() for t in TIMINGS)
        }
    if isinstance(value, list | tuple):
        return [_comparable(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def _same(local: ExperimentResult, ray: ExperimentResult) -> None:
    assert local.values, "the protocol returned no values"
    assert _comparable(ray.values) == _comparable(local.values)
    assert _comparable(ray.extra) == _comparable(local.extra)
    assert _comparable(json.loads(json.dumps(ray.data, default=str))) == _comparable(
        json.loads(json.dumps(local.data, default=str))
    )


def _both(run: Callable[..., ExperimentResult], config: dict, **kwargs: Any) -> None:
    """Run ``config`` (a checked document) locally and on Ray, and check the results are
    equal (a smoke run's settings with the ``[smoke]`` tables merged)."""
    smoke = bool(kwargs.get("smoke", False))
    local = run(settings_of(copy.deepcopy(config), smoke=smoke), **kwargs)
    on_ray = copy.deepcopy(config)
    on_ray["experiment"] = {**on_ray["experiment"], "executor": "ray"}
    _same(local, run(settings_of(on_ray, smoke=smoke), **kwargs))


@pytest.mark.integration
def test_qlfusion_cv_smoke(ray_instance: Any, shared_data: Path) -> None:
    from probrank.experiments.qlfusion_cv.protocol import run

    path = MODELS / "qlfusion" / "robust03.toml"
    config = load_document(path)
    # a proper subset of the variants keeps it quick: one Bayesian SVI group, the LR group
    config["protocol"]["variants"] = ["qlfusion", "qlfusion_lr"]
    _both(run, config, config_path=path, seeds=2, smoke=True, progress=False)


def test_gpf_ranker_tiny(ray_instance: Any, tmp_path: Path) -> None:
    from probrank.experiments.gpf.frozen import run

    config = test_frozen._config(tmp_path)
    config["heads"]["epochs"] = [2]
    _both(run, config, config_path=tmp_path / "tiny.toml", seeds=2, smoke=False)


def test_gpf_finetune_tiny(ray_instance: Any, tmp_path: Path) -> None:
    from probrank.experiments.gpf.finetune import run

    config = test_finetune._config(tmp_path)
    _both(run, config, config_path=tmp_path / "tiny.toml", seeds=1, smoke=False)


def test_mediqa_multitask_fake(
    ray_instance: Any,
    fake_data: dict,  # noqa: F811
    tmp_path: Path,
) -> None:
    from probrank.experiments.mediqa.protocol import run

    config = mediqa_config(fake_data, tmp_path)
    _both(run, config, config_path=tmp_path / "fake.toml", seeds=2, smoke=False)


def test_interactive_grid(ray_instance: Any, tmp_path: Path) -> None:
    from probrank.experiments.interactive.protocol import run

    path = tmp_path / "grid.toml"
    path.write_text(
        TINY + '\n[[grid]]\nposteriors = ["laplace", "mcdropout"]\nstrategies = ["ei"]\n'
        "noises = [0.3]\n"
    )
    _both(run, load_document(path), config_path=path, seeds=2, smoke=True)


OWN_MODULE = """
import pyro.distributions as dist
import torch


def beta_binomial(total_count, concentration=10.0):
    def likelihood(logits):
        p = torch.sigmoid(logits)
        n = torch.full_like(logits, float(total_count))
        return dist.BetaBinomial(concentration * p, concentration * (1 - p), n)

    return likelihood


def laplace(scale=1.0):
    return dist.Laplace(0.0, scale)
"""


@pytest.mark.integration
def test_qlfusion_cv_with_your_own_prior_and_likelihood(
    ray_instance: Any, shared_data: Path, tmp_path: Path
) -> None:
    """Issue 31: a ``"module:callable"`` prior and likelihood beside the config reach the Ray
    workers (which neither ran the config's import nor have its folder on their path) and give
    the local executor's numbers."""
    import sys

    from probrank.experiments.qlfusion_cv.protocol import run

    name = f"raylik_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(OWN_MODULE, encoding="utf-8")
    path = tmp_path / "mine.toml"  # the README's config, with a Ray-sized smoke table
    path.write_text(
        '[experiment]\nprotocol = "qlfusion_cv"\nthreads = 1\n\n'
        '[data]\nshared = "fusion/robust03"\nruns = "runs/input.[apuV]*.gz"\n\n'
        '[protocol]\nvariants = ["qlfusion"]\nmeasures = ["P@5", "nDCG@10"]\n\n'
        f'[quantifier]\nlikelihood = "{name}:beta_binomial"\n'
        "likelihood_args = { concentration = 5.0 }\n"
        f'prior = "{name}:laplace"\nprior_args = {{ scale = 0.5 }}\n\n'
        "[smoke.protocol]\ntopics = 20\nfolds = 4\n\n"
        "[smoke.quantifier]\nbatch_sizes = [4, 16]\nmax_epochs = 3\npatience = 2\n"
        "max_steps = 10\nposterior_samples = 5\n",
        encoding="utf-8",
    )
    try:
        config = load_document(path)
        _both(run, config, config_path=path, seeds=1, smoke=True, progress=False)
    finally:
        sys.modules.pop(name, None)
