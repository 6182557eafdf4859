"""The architecture as the imports show it (DESIGN.md "Layout"): every module of ``probrank/``
(and the scripts of ``benchmarks/`` and the notebooks of ``tutorials/``) is parsed with ``ast``,
every ``import`` and ``from ... import`` found anywhere in it (function-level lazy imports
included) becomes an edge, and

* the package-level graph (``probrank.data``, ``probrank.models``, ... and the top-level modules)
  has no cycle, nor has the module-level graph;
* DESIGN's "Never" rules hold: ``data`` imports neither ``evaluation`` nor ``models``;
  ``evaluation`` neither ``models`` nor ``nn``; the parts (``nn``, ``likelihoods``,
  ``inference``, ``encoders``, ``posteriors``) none of ``models``, ``interactive`` and the CLI;
  ``models`` neither the CLI nor ``experiments``; ``experiments`` neither the CLI nor ``nn``,
  ``inference``, ``likelihoods``, ``posteriors`` (the model objects are the only door);
  nothing outside ``experiments``, the CLI and ``demo`` imports ``experiments``;
* no ``nn.Module``, ``PyroModule`` or BoTorch ``Model`` subclass is defined under
  ``experiments/``.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "probrank"

CLI = {"probrank.cli"}
"""The command line: the package ``probrank.cli`` (one module per command)."""

PARTS = ("nn", "likelihoods", "inference", "encoders", "posteriors")

EXPERIMENTS_NEVER = (
    "probrank.nn",
    "probrank.inference",
    "probrank.likelihoods",
    "probrank.posteriors",
)
"""What a protocol never imports (issue 22: the model objects are the only door)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module of ``probrank`` that ``name`` (a module or a name in one) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every ``probrank`` module ``tree`` imports (at any depth: lazy imports count)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            # ``from pkg import sub`` imports the submodule ``pkg.sub`` (not the package's
            # ``__init__`` alone); ``from pkg import name`` imports ``pkg``
            targets = [
                f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source
                for a in node.names
            ]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        else:
            continue
        for target in targets:
            if target == "probrank" or target.startswith("probrank."):
                resolved = _resolve(target)
                if resolved is not None and resolved != module:
                    yield resolved


def _module_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = set(_imports(tree, name, path.name == "__init__.py"))
    return graph


GRAPH = _module_graph()


def _unit(module: str) -> str:
    """A module's node in the package-level graph: its subpackage of ``probrank``
    (``probrank.models``), or the top-level module itself (``probrank._files``)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for source, targets in GRAPH.items():
        graph.setdefault(_unit(source), set())
        for target in targets:
            if _unit(target) != _unit(source) and target != "probrank":
                graph[_unit(source)].add(_unit(target))
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (a list of nodes, the first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_lazy_and_relative_imports() -> None:
    # the parser itself: known edges, some of them function-level imports
    assert "probrank.experiments" in GRAPH["probrank.cli.experiment"]  # inside run()
    assert "probrank.experiments.fuse" in GRAPH["probrank.cli.fuse"]
    assert "probrank.cli._parsing" in GRAPH["probrank.cli.eval"]
    assert "probrank.models.qlfusion.network" in GRAPH["probrank.models.qlfusion.model"]
    assert len(GRAPH) > 150


def test_the_package_level_graph_is_acyclic() -> None:
    cycle = _cycle(_package_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_module_level_graph_is_acyclic() -> None:
    # a package's __init__ re-exporting its submodules, and a submodule importing a sibling,
    # is no cycle; a module importing a name from its own package's __init__ that re-exports
    # it back would be
    cycle = _cycle(GRAPH)
    assert cycle is None, " -> ".join(cycle or [])


def _edges_from(units: Iterable[str]) -> Iterator[tuple[str, str]]:
    for source, targets in GRAPH.items():
        if _unit(source) in units or source in units:
            for target in targets:
                yield source, target


def _violations(sources: Iterable[str], forbidden: Iterable[str]) -> list[str]:
    forbidden = tuple(forbidden)
    return [
        f"{s} imports {t}"
        for s, t in _edges_from(set(sources))
        if _unit(t) in forbidden or t in forbidden
    ]


@pytest.mark.parametrize(
    ("sources", "forbidden"),
    [
        (["probrank.data"], ["probrank.evaluation", "probrank.models"]),
        (["probrank.evaluation"], ["probrank.models", "probrank.nn"]),
        (
            [f"probrank.{part}" for part in PARTS],
            ["probrank.models", "probrank.interactive", *CLI],
        ),
        (["probrank.models"], [*CLI, "probrank.experiments"]),
        # protocols read a config, build the model objects and run them: the parts the
        # models are assembled from are theirs, not the protocols'
        (["probrank.experiments"], [*CLI, *EXPERIMENTS_NEVER]),
        (["probrank.demo"], [*CLI]),
    ],
)
def test_design_never_rules(sources: list[str], forbidden: list[str]) -> None:
    assert _violations(sources, forbidden) == []


def _outside_users_of_experiments() -> list[str]:
    allowed = {"probrank.experiments", "probrank.demo", *CLI}
    return [
        f"{s} imports {t}"
        for s, targets in GRAPH.items()
        for t in targets
        if _unit(t) == "probrank.experiments" and _unit(s) not in allowed and s not in allowed
    ]


def _script_imports(source: str, where: str) -> Iterator[tuple[str, str]]:
    tree = ast.parse(source, filename=where)
    for target in _imports(tree, "__script__", False):
        yield where, target


def test_nothing_outside_experiments_cli_and_demo_imports_experiments() -> None:
    assert _outside_users_of_experiments() == []
    found = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        found += [
            f"{w} imports {t}"
            for w, t in _script_imports(path.read_text(encoding="utf-8"), path.name)
            if _unit(t) == "probrank.experiments"
        ]
    for path in sorted((ROOT / "tutorials").rglob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join(
            "".join(cell["source"]) for cell in cells if cell.get("cell_type") == "code"
        )
        lines = [line for line in code.splitlines() if not line.lstrip().startswith(("!", "%"))]
        found += [
            f"{w} imports {t}"
            for w, t in _script_imports("\n".join(lines), path.name)
            if _unit(t) == "probrank.experiments"
        ]
    assert found == []


NETWORK_BASES = {"Module", "PyroModule", "Model", "nn.Module", "torch.nn.Module"}


def _base_names(node: ast.ClassDef) -> set[str]:
    names = set()
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base  # PyroModule[...]
        names.add(ast.unparse(target))
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
    return names


def test_no_network_is_defined_under_experiments() -> None:
    found = []
    for path in sorted((PACKAGE / "experiments").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and _base_names(node) & NETWORK_BASES:
                found.append(f"{path.relative_to(ROOT)}: class {node.name}")
    assert found == []


def test_the_checks_catch_what_they_should() -> None:
    # each check on a made-up graph: a cycle, a forbidden edge, an outside user
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    tree = ast.parse("class Net(PyroModule[torch.nn.Module]):\n    pass\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert _base_names(node) & NETWORK_BASES
    lazy = "def f():\n    from probrank.experiments.qlfusion_cv import run\n"
    assert [t for _, t in _script_imports(lazy, "x")] == ["probrank.experiments.qlfusion_cv"]


def test_every_public_module_declares_all() -> None:
    missing = []
    for name, path in MODULES.items():
        if any(part.startswith("_") and part != "__init__" for part in path.parts[-1:]):
            continue  # a private module (probrank.cli._parsing, ...): declared or not, not public
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared = any(
            isinstance(node, ast.Assign | ast.AnnAssign)
            and any(
                getattr(t, "id", None) == "__all__"
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            )
            for node in tree.body
        )
        if not declared:
            missing.append(name)
    assert missing == []
