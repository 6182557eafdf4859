"""Priors and likelihoods named in a config as ``"module.path:callable"``
(:mod:`probrank._plugins`): imported beside the config, probed, refused in one line."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pytest
import torch

from probrank._config import check_config
from probrank._plugins import (
    PluginField,
    PluginKind,
    is_plugin,
    resolve,
    resolve_config_plugins,
)
from probrank.exceptions import InputDataError
from probrank.likelihoods import beta_binomial_proportion

MODULE = """
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


def vector_prior():
    return dist.Normal(torch.zeros(3), 1.0)


def wrong_shape(total_count):
    return lambda logits: dist.Binomial(total_count, logits=logits.sum(-1))


def not_a_factory(total_count):
    return 3
"""


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    name = f"mylik_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MODULE, encoding="utf-8")
    yield tmp_path
    sys.modules.pop(name, None)


def _module(folder: Path) -> str:
    return f"mylik_{folder.name.replace('-', '_')}"


def test_a_likelihood_beside_the_config_is_imported_probed_and_built(folder: Path) -> None:
    torch.manual_seed(0)
    target = f"{_module(folder)}:beta_binomial"
    spec = resolve(target, {"concentration": 4.0}, PluginKind.PROPORTION_LIKELIHOOD, folder=folder)
    assert str(folder) not in sys.path  # taken off again
    logits = torch.randn(3, 5, dtype=torch.float64)
    counts = torch.randint(0, 21, (3, 5)).double()
    mine = spec.build(20)(logits).log_prob(counts)
    library = beta_binomial_proportion(20, 4.0)(logits).log_prob(counts)
    torch.testing.assert_close(mine, library, rtol=1e-10, atol=1e-10)


def test_a_prior_is_a_scalar_distribution(folder: Path) -> None:
    spec = resolve(f"{_module(folder)}:laplace", {"scale": 0.5}, PluginKind.PRIOR, folder=folder)
    prior = spec.build()
    assert float(prior.log_prob(torch.tensor(0.0))) == pytest.approx(-torch.log(torch.tensor(1.0)))


@pytest.mark.parametrize(
    ("target", "args", "kind", "message"),
    [
        ("nosuchmodule_xyz:f", None, PluginKind.PRIOR, "no module named 'nosuchmodule_xyz'"),
        ("{m}:missing", None, PluginKind.PRIOR, "has no 'missing'"),
        ("{m}", None, PluginKind.PRIOR, "expected 'module.path:callable'"),
        ("{m}:laplace", {"shape": 1.0}, PluginKind.PRIOR, "cannot be called with"),
        ("{m}:vector_prior", None, PluginKind.PRIOR, "one scalar weight"),
        ("{m}:wrong_shape", None, PluginKind.PROPORTION_LIKELIHOOD, "expected (2, 3)"),
        ("{m}:not_a_factory", None, PluginKind.PROPORTION_LIKELIHOOD, "callable of logits"),
        ("{m}:laplace", None, PluginKind.PROPORTION_LIKELIHOOD, "got a Laplace: wrap it"),
    ],
)
def test_bad_callables_are_one_line_errors(
    folder: Path, target: str, args: dict | None, kind: PluginKind, message: str
) -> None:
    with pytest.raises(InputDataError) as info:
        resolve(target.format(m=_module(folder)), args, kind, folder=folder, key="q.likelihood")
    text = str(info.value)
    assert message in text and "\n" not in text and text.startswith("q.likelihood: ")


@dataclass(frozen=True)
class _Table:
    likelihood: (
        Annotated[str, PluginField(PluginKind.PROPORTION_LIKELIHOOD, ("binomial",))] | None
    ) = None
    likelihood_args: dict[str, float] | None = None


@dataclass(frozen=True)
class _Schema:
    quantifier: _Table | None = None


def test_config_plugins_are_found_through_the_schema_and_named_by_line(folder: Path) -> None:
    config = folder / "exp.toml"
    good = {"quantifier": {"likelihood": f"{_module(folder)}:beta_binomial"}}
    check_config(good, _Schema, path=config)
    specs = resolve_config_plugins(good, _Schema, path=config)
    assert list(specs) == [("quantifier", "likelihood")]
    builtin = {"quantifier": {"likelihood": "binomial"}}
    assert resolve_config_plugins(builtin, _Schema, path=config) == {}
    with pytest.raises(
        InputDataError, match=re.escape("must be one of 'binomial' or 'module.path")
    ):
        check_config({"quantifier": {"likelihood": "poisson"}}, _Schema, path=config)
    text = '[quantifier]\nlikelihood = "nosuch_mod_q:f"\n'
    bad = {"quantifier": {"likelihood": "nosuch_mod_q:f"}}
    with pytest.raises(InputDataError) as info:
        resolve_config_plugins(bad, _Schema, path=config, text=text)
    assert str(info.value).startswith(f"{config}:2: quantifier.likelihood: ")
    assert is_plugin("a.b:c") and not is_plugin("binomial")
