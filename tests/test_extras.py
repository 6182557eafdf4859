"""Optional extras: a missing one is one clear line naming it; every ``require`` names a
declared extra that installs the module; core modules never import an extra's package at
import time."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import tomllib

from probrank._extras import require
from probrank.cli._parsing import describe_error
from probrank.exceptions import MissingExtraError, ProbrankError

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
CORE = PYPROJECT["project"]["dependencies"]
NOT_MODELS = {"test", "bench"}
"""Extras for developers, not for a model."""

OPTIONAL_PACKAGES = ("probrank/serve", "probrank/integrations")
"""Packages that are themselves an extra's code (they may import it at the top)."""


def _distribution(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _modules_of(distribution: str) -> set[str]:
    return {
        module
        for module, dists in packages_distributions().items()
        if distribution in {d.lower().replace("_", "-") for d in dists}
    }


def test_a_missing_extra_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bm25s", None)  # as if not installed
    with pytest.raises(MissingExtraError) as info:
        require("bm25s", extra="mediqa", purpose="the MEDIQA entailment features")
    message = describe_error(info.value)
    assert message == (
        "bm25s is not installed; it is needed for the MEDIQA entailment features: "
        "pip install 'probrank[mediqa]'"
    )
    assert isinstance(info.value, ImportError) and isinstance(info.value, ProbrankError)


def test_the_interactive_users_name_their_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from probrank.interactive.users import utilities_from_grades

    monkeypatch.setitem(sys.modules, "rouge_score", None)
    monkeypatch.setitem(sys.modules, "rouge_score.tokenizers", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'probrank\[interactive\]'"):
        utilities_from_grades([1, 2], ["a", "b"])


def _require_calls() -> list[tuple[str, str, str]]:
    calls = []
    for path in sorted((ROOT / "probrank").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "require"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                extra = next(k.value for k in node.keywords if k.arg == "extra")
                assert isinstance(extra, ast.Constant), path
                calls.append((str(path.relative_to(ROOT)), node.args[0].value, extra.value))
    return calls


def test_every_require_names_a_declared_extra_that_installs_the_module() -> None:
    calls = _require_calls()
    assert {extra for _, _, extra in calls} >= {"mediqa", "interactive"}
    for where, module, extra in calls:
        assert extra in EXTRAS and extra not in NOT_MODELS, (where, extra)
        top = module.partition(".")[0]
        providers = {_distribution(r) for r in EXTRAS[extra]}
        assert any(top in _modules_of(d) for d in providers), (where, module, extra)


def _extra_only_modules() -> set[str]:
    core = {_distribution(r) for r in CORE}
    modules: set[str] = set()
    for extra, requirements in EXTRAS.items():
        if extra in NOT_MODELS:
            continue
        for requirement in requirements:
            name = _distribution(requirement)
            if name not in core:
                modules |= _modules_of(name)
    return modules


def test_core_modules_import_no_extra_at_import_time() -> None:
    extra_only = _extra_only_modules()
    assert "rouge_score" in extra_only  # the interactive extra's
    found = []
    for path in sorted((ROOT / "probrank").rglob("*.py")):
        if str(path.relative_to(ROOT)).startswith(OPTIONAL_PACKAGES):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only: a function may import its extra
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found += [
                f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in extra_only
            ]
    assert found == []


def test_the_makefile_installs_the_extras_the_tests_and_demo_need() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installed = re.search(r'-e "\.\[([^\]]*)\]"', makefile)
    assert installed is not None
    extras = installed.group(1)
    variable = re.fullmatch(r"\$\((\w+)\)", extras)
    if variable:  # -e ".[$(EXTRAS)]" with EXTRAS := test,minilm,...
        defined = re.search(rf"^{variable.group(1)} :?= (.*)$", makefile, flags=re.M)
        assert defined is not None
        extras = defined.group(1).strip()
    assert {"test", "minilm", "mediqa", "interactive"} <= set(extras.split(","))
