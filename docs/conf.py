"""Sphinx configuration of probrank's documentation site (``make docs``).

Sphinx with the PyData theme, MyST for the Markdown pages and myst-nb for the tutorials: the
stack of the sites probrank's users read (Pyro, ArviZ, BoTorch's API), with what a strict build
needs: ``-W -n`` turns every broken cross-reference, missing page, dead internal link and
docstring that does not render into an error.

* **API reference**: one page per public package, generated at build time (``builder-inited``)
  from the package's ``__all__`` into ``docs/api/`` (ignored by git, so it never goes stale):
  the package docstring, a summary table, then each exported name with autodoc.
* **Tutorials**: the repository's ``tutorials/`` is copied to ``docs/tutorials/`` (ignored by
  git) at build time; myst-nb executes every notebook with ``SMOKE_TEST=1`` (small sizes) in
  its own folder, so the rendered pages show outputs that cannot go stale. Set
  ``PROBRANK_DOCS_EXECUTE=off`` to build without running them (outputs then absent).

``PROBRANK_DOCS_API=probrank.models,probrank.data`` limits the API pages to those packages (a
quick build; the tests use it).
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import shutil
import sys
import typing
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

# the notebooks' kernel runs small sizes, offline, with a sane thread count (2-core machines)
for key, value in {
    "SMOKE_TEST": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ.setdefault(key, value)
# the kernel's own inline backend draws the figures into the pages (``make`` sets Agg for tests)
os.environ.pop("MPLBACKEND", None)
# the notebooks' kernels log errors only (ipykernel 7 warns on every start that its local TCP
# transport is unencrypted): an IPython profile of the build's own
_IPYTHONDIR = DOCS / "_build" / "ipython"
(_IPYTHONDIR / "profile_default").mkdir(parents=True, exist_ok=True)
(_IPYTHONDIR / "profile_default" / "ipython_kernel_config.json").write_text(
    '{"IPKernelApp": {"log_level": "ERROR"}}\n', encoding="utf-8"
)
os.environ["IPYTHONDIR"] = str(_IPYTHONDIR)

project = "probrank"
author = "the probrank developers"
copyright = "2026, the probrank developers"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "sphinx_design",
]

exclude_patterns = ["_build", "tutorials/README.md", "**/.ipynb_checkpoints", "images"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# -- strictness: every reference must resolve, except to libraries without a local inventory
nitpicky = True
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(torch|numpy|np|pandas|pd|pyro|gpytorch|botorch|arviz|az|xarray|scipy|"
        r"matplotlib|transformers|linear_operator|pyarrow|starlette|uvicorn|ray|pyterrier|pt|"
        r"sklearn|tqdm|jinja2|sqlite3|pathlib|collections|typing|typing_extensions|argparse|"
        r"logging|concurrent|os|datetime|enum|dataclasses|abc|io|json|random|asyncio|"
        r"contextlib|types|numbers|builtins|re|threading|functools|warnings|math|time|socket|"
        r"subprocess|nn|dist|starlette|markupsafe|mmap|gzip)(\..*)?",
    ),
    (
        r"py:.*",
        r"(Tensor|ndarray|DataFrame|Series|Path|Any|Callable|Iterable|Iterator|Sequence|"
        r"Mapping|MutableMapping|Literal|Self|Protocol|TypeVar|ClassVar|Generator|NDArray|"
        r"ArrayLike|InferenceData|DataTree|Dataset|DataArray|Module|Parameter|Distribution|"
        r"Posterior|Model|AcquisitionFunction|MCAcquisitionFunction|Figure|Axes|T|"
        r"TorchDistribution|PathLike|Number|Hashable|Enum|IntEnum|StrEnum|NamedTuple|"
        r"MultivariateNormal|Starlette|Markup|(\w+\.)*Annotated)",
    ),
    (r"py:class", r"(optional|default|callable|iterable|sequence|mapping)"),
    # private modules are not documented: a public docstring may still name their objects
    (r"py:.*", r"probrank\.(\w+\.)*_\w+(\..*)?"),
    # type variables (``probrank.executors.base.T``)
    (r"py:.*", r"(\w+\.)*[A-Z]"),
    # Annotated metadata and literal values in type hints (``low=1``, ``'ray'``): not names
    (r"py:.*", r".*[=' ,&\[\]\(\)].*|\d+|None|True|False|\.\.\."),
]

# -- autodoc: Google-style docstrings, type hints in the descriptions
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_inherit_docstrings = False
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

# An attribute's or a property's docstring is prose: napoleon would read "Too narrow: ..." as
# a type named "Too narrow" (probrank's enum members and fields are documented that way).
from sphinx.ext.napoleon.docstring import GoogleDocstring  # noqa: E402


def _attribute_docstring_as_prose(self: Any) -> list[str]:
    return self.__class__(self._dedent(self._consume_to_end()), self._config).lines()


GoogleDocstring._parse_attribute_docstring = _attribute_docstring_as_prose

# -- MyST and notebooks
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3
nb_execution_mode = os.environ.get("PROBRANK_DOCS_EXECUTE", "force")
nb_execution_timeout = 600
nb_execution_in_temp = False
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# -- HTML
html_theme = "pydata_sphinx_theme"
html_title = "probrank"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
html_context = {"default_mode": "auto"}
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
suppress_warnings = ["mystnb.unknown_mime_type"]

# -- the API reference, generated from every public package's __all__
API_PACKAGES = [
    ("probrank.models", "The models"),
    ("probrank.data", "TREC files and candidate lists"),
    ("probrank.evaluation", "Evaluation and comparison of runs"),
    ("probrank.fusion", "Rank fusion"),
    ("probrank.pooling", "Pooling: which documents to judge"),
    ("probrank.likelihoods", "Likelihoods"),
    ("probrank.inference", "Inference: SVI, NUTS, Laplace"),
    ("probrank.posteriors", "Posteriors"),
    ("probrank.acquisition", "Acquisition functions"),
    ("probrank.diagnostics", "Diagnostics and SBC"),
    ("probrank.interactive", "Interactive ranking"),
    ("probrank.nn", "Neural building blocks"),
    ("probrank.encoders", "Encoders"),
    ("probrank.retrieval", "First-stage retrieval"),
    ("probrank.experiments", "Experiments"),
    ("probrank.executors", "Executors: local and Ray"),
    ("probrank.serve", "Judging in the browser"),
    ("probrank.exceptions", "Exceptions"),
]


if os.environ.get("PROBRANK_DOCS_API"):  # a subset, for a quick build (tests/docs)
    _chosen = os.environ["PROBRANK_DOCS_API"].split(",")
    API_PACKAGES = [(name, title) for name, title in API_PACKAGES if name in _chosen]
    # references into the packages left out cannot resolve; into the chosen ones they must
    _inside = "|".join(name.removeprefix("probrank.") for name in _chosen)
    nitpick_ignore_regex += [
        ("py:.*", rf"probrank\.(?!({_inside})(\.|$)).*"),
        ("py:.*", r"[A-Za-z_]\w*(\.\w+)?"),  # a short name may name an object left out
    ]


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "autofunction"
    return "autodata"


def _key(name: str, obj: Any) -> tuple[Any, ...]:
    """Identity of an API object: classes and functions by identity, data by name too."""
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return (id(obj),)
    return (id(obj), name)


def _submodules(package: str) -> list[str]:
    """The public modules under ``package`` (no ``_private`` part), in dotted order."""
    module = importlib.import_module(package)
    if not hasattr(module, "__path__"):
        return []
    found = []
    for info in pkgutil.walk_packages(module.__path__, prefix=package + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        found.append(info.name)
    return sorted(found)


def _exports(module_name: str) -> list[tuple[str, Any]]:
    module = importlib.import_module(module_name)
    return [(name, getattr(module, name)) for name in getattr(module, "__all__", [])]


def _also_defined(module_name: str) -> list[tuple[str, Any]]:
    """``__all__``, then the public classes the module defines but does not export.

    Such a class appears in an exported signature (a settings section, a result record): the
    reference needs an entry to link to.
    """
    module = importlib.import_module(module_name)
    names = list(getattr(module, "__all__", []))
    for name, obj in vars(module).items():
        if name.startswith("_") or name in names:
            continue
        if inspect.isclass(obj) and obj.__module__ == module_name:
            names.append(name)
    return [(name, getattr(module, name)) for name in names]


def _home(obj: Any, packages: list[str]) -> str | None:
    owner = getattr(obj, "__module__", None) or ""
    homes = [p for p in packages if owner == p or owner.startswith(p + ".")]
    return max(homes, key=len) if homes else None


def _document(lines: list[str], target: str, obj: Any) -> None:
    kind = _kind(obj)
    lines.append(f".. {kind}:: {target}")
    if kind == "autodata":
        lines.append("   :no-value:")
    lines.append("")


def api_pages() -> dict[str, str]:
    """reStructuredText of every API page: ``{package: text}``.

    Each object is documented once: under the package that exports it and whose name is the
    longest prefix of the object's ``__module__`` (its home), else under the first package
    that exports it; other packages' tables link to that entry. Then every public submodule's
    docstring and the names its ``__all__`` adds.
    """
    packages = [name for name, _ in API_PACKAGES]
    where: dict[tuple[Any, ...], str] = {}
    for package in packages:  # homes first, then first exporter
        for name, obj in _exports(package):
            if _home(obj, packages) == package:
                where.setdefault(_key(name, obj), f"{package}.{name}")
    for package in packages:
        for name, obj in _exports(package):
            where.setdefault(_key(name, obj), f"{package}.{name}")
    documented: set[tuple[Any, ...]] = set()
    pages = {}
    for package, title in API_PACKAGES:
        heading = f"``{package}``: {title}"
        lines = [
            heading,
            "=" * len(heading),
            "",
            f".. automodule:: {package}",
            "   :no-members:",
            "",
        ]
        exports = _exports(package)
        if exports:
            lines += [".. autosummary::", "   :nosignatures:", ""]
            for name, obj in exports:
                target = where[_key(name, obj)]
                inside = target.startswith(package + ".")
                lines.append(f"   {target[len(package) + 1 :]}" if inside else f"   {target}")
            lines.append("")
        for name, obj in exports:
            key = _key(name, obj)
            if where[key] == f"{package}.{name}" and key not in documented:
                documented.add(key)
                _DOCUMENTED.setdefault(id(obj), where[key])
                _document(lines, f"{package}.{name}", obj)
            elif where[key].rsplit(".", 1)[1] != name:  # another name of an object: an entry
                kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "data"
                lines += [
                    f".. py:{kind}:: {name}",
                    f"   :module: {package}",
                    "",
                    f"   Another name of :py:obj:`{where[key]}`.",
                    "",
                ]
        for module_name in _submodules(package):
            sub = f"``{module_name}``"
            lines += [sub, "-" * len(sub), "", f".. automodule:: {module_name}", "   :no-members:"]
            # a module named like a function its package exports (``diagnostics.loo``): the
            # function keeps the name in the index
            parent, _, leaf = module_name.rpartition(".")
            shadow = getattr(importlib.import_module(parent), leaf, None)
            if shadow is not None and not inspect.ismodule(shadow):
                lines.append("   :no-index:")
            lines.append("")
            for name, obj in _also_defined(module_name):
                key = _key(name, obj)
                if key in where or key in documented:
                    continue
                where[key] = f"{module_name}.{name}"
                documented.add(key)
                _DOCUMENTED.setdefault(id(obj), where[key])
                _document(lines, f"{module_name}.{name}", obj)
        pages[package] = "\n".join(lines) + "\n"
    return pages


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_api_pages(app: Any = None) -> None:
    """Write ``docs/api/<package>.rst`` for every package of :data:`API_PACKAGES`."""
    out = DOCS / "api"
    out.mkdir(exist_ok=True)
    for package, text in api_pages().items():
        _write(out / f"{package}.rst", text)
    toc = [
        "API reference",
        "=============",
        "",
        "Every name each public package exports (its ``__all__``), with signatures, shapes and "
        "cross-links, then each public module's docstring and the names it adds.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
    ]
    toc += [f"   {package}" for package, _ in API_PACKAGES]
    _write(out / "index.rst", "\n".join(toc) + "\n")


def _import(path: str) -> Any:
    """The object a dotted path names (module, then attributes), or None."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def resolve_alias(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve what the Python domain alone cannot, and nothing more.

    * a short name (``Run``, ``QLFusion.fit``) that names exactly one documented object, or
      that the current module binds to a documented object under another name;
    * a full path to where an object is defined (``probrank.diagnostics.sbc.run_sbc``) when
      it is documented under the package that exports it (``probrank.diagnostics.run_sbc``),
      found by identity.

    Anything else stays unresolved, and the strict build fails on it.
    """
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"]
    objects = domain.objects
    if target.startswith("probrank."):
        obj = _import(target)
        if obj is None:
            return None
        for key in (("obj", id(obj)),):
            documented = _DOCUMENTED.get(key[1])
            if documented and documented in objects:
                return _refnode(app, env, node, contnode, documented, objects)
        owner, _, attr = target.rpartition(".")
        parent = _import(owner)
        if parent is not None and inspect.isclass(parent):
            documented = _DOCUMENTED.get(id(parent))
            if documented and f"{documented}.{attr}" in objects:
                return _refnode(app, env, node, contnode, f"{documented}.{attr}", objects)
        return None
    suffix = "." + target.lstrip(".~")
    matches = sorted(
        name for name, entry in objects.items() if name.endswith(suffix) and not entry.aliased
    )
    if len(matches) > 1:  # prefer the current class, then the current module
        here = ".".join(filter(None, [node.get("py:module"), node.get("py:class")]))
        local = [m for m in matches if m.startswith(here + ".")] if here else []
        matches = local or matches
    if len(matches) == 1:
        return _refnode(app, env, node, contnode, matches[0], objects)
    if not matches and node.get("py:module"):  # another name of a documented object
        obj = _import(f"{node['py:module']}.{target.lstrip('.~')}")
        documented = _DOCUMENTED.get(id(obj)) if obj is not None else None
        if documented and documented in objects:
            return _refnode(app, env, node, contnode, documented, objects)
    return None


def _refnode(app: Any, env: Any, node: Any, contnode: Any, name: str, objects: Any) -> Any:
    from sphinx.util.nodes import make_refnode

    entry = objects[name]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name)


_DOCUMENTED: dict[int, str] = {}


def _disambiguate(modname: str | None, name: str, matches: list[Any]) -> list[Any]:
    """Of several objects called ``name``, the one the modules of ``modname`` mean.

    A type hint such as ``Strategy`` is written where ``probrank.acquisition.Strategy`` is
    imported; probrank.pooling has a ``Strategy`` too. Aliases (``:canonical:`` entries) go
    first; then, when every module under ``modname`` that binds ``name`` binds the same object,
    that object's documented entry is the match.
    """
    kept = [m for m in matches if not m[1].aliased] or matches
    if len(kept) < 2 or not modname:
        return kept
    short = name.rsplit(".", 1)[-1]
    bound = {
        id(module.__dict__[short])
        for module_name, module in list(sys.modules.items())
        if module is not None
        and (module_name == modname or module_name.startswith(modname + "."))
        and short in getattr(module, "__dict__", {})
    }
    if len(bound) == 1:
        documented = _DOCUMENTED.get(bound.pop())
        chosen = [m for m in kept if m[0] == documented]
        if chosen:
            return chosen
    return kept


def _domain_class() -> type:
    from sphinx.domains.python import PythonDomain

    class ProbrankPythonDomain(PythonDomain):
        """Python's domain, with :func:`_disambiguate` for names found more than once."""

        def find_obj(self, env, modname, classname, name, type, searchmode=0):  # type: ignore[no-untyped-def]
            matches = super().find_obj(env, modname, classname, name, type, searchmode)
            if len(matches) > 1:
                matches = _disambiguate(modname, name, matches)
            return matches

    return ProbrankPythonDomain


def drop_type_docstrings(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A module-level dict or tuple has no docstring of its own: drop its type's."""
    if what in ("data", "attribute") and lines:
        own = inspect.getdoc(typing.get_origin(obj) or type(obj)) or ""
        if own and "\n".join(lines).strip() == own.strip():
            lines.clear()


def copy_tutorials(app: Any = None) -> None:
    """Mirror ``tutorials/`` into ``docs/tutorials/`` (only files that changed are written)."""
    source, target = ROOT / "tutorials", DOCS / "tutorials"
    wanted = set()
    for path in source.rglob("*"):
        if not path.is_file() or ".ipynb_checkpoints" in path.parts:
            continue
        copy = target / path.relative_to(source)
        wanted.add(copy)
        if not copy.exists() or copy.read_bytes() != path.read_bytes():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
    for path in target.rglob("*"):
        if path.is_file() and path not in wanted:
            path.unlink()


def setup(app: Any) -> None:
    app.add_domain(_domain_class(), override=True)
    app.connect("builder-inited", copy_tutorials)
    app.connect("autodoc-process-docstring", drop_type_docstrings, priority=100)
    app.connect("builder-inited", write_api_pages)
    app.connect("missing-reference", resolve_alias)
