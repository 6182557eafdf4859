"""Your own prior or likelihood, named in a config file as ``"module.path:callable"``.

A config may name a callable instead of a built-in choice::

    likelihood = "mylik:beta_binomial"          # module mylik (beside the config), function
    likelihood_args = { concentration = 10.0 }  # keyword arguments of that function

:func:`resolve` imports the module with the config file's folder first on the import path (and
takes it off again), finds the callable, and checks it *before any work starts* by calling it
the way the model will, on a small probe (:class:`PluginKind`): a prior factory must return a
Pyro distribution over scalars; a likelihood factory, given the number of documents counted,
must return a callable that maps logits `2 x 3` to a distribution with batch shape `2 x 3`
whose ``log_prob`` of counts in ``[0, n]`` is finite. A missing module, a missing callable, a
keyword it does not take or a result of the wrong shape is one :class:`InputDataError` naming
the file and the key, which the CLI prints as one line.

Why by hand: Python's entry points name installed plug-ins, not a module beside a config file;
Hydra's ``_target_`` instantiation would bring its config system with it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from probrank.exceptions import InputDataError

__all__ = [
    "PluginError",
    "PluginField",
    "PluginKind",
    "PluginSpec",
    "import_callable",
    "is_plugin",
    "locate_plugin",
    "resolve",
    "resolve_config_plugins",
]

_TARGET = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


class PluginError(InputDataError):
    """A plug-in callable failed while a model used it (a likelihood that is NaN on the real
    data, say). ``target`` is its ``"module:callable"``: a command that read it from a config
    file adds the file and line of the key that names it.

    Args:
        message: What is wrong, in one line.
        target: The callable's ``"module.path:callable"``.
        path: The config file, if known.
        line: The line of the key in ``path``, if known.
    """

    def __init__(
        self, message: str, *, target: str, path: object | None = None, line: int | None = None
    ) -> None:
        super().__init__(message, path=path, line=line)
        self.target = target


def locate_plugin(
    document: Mapping[str, Any], target: str, text: str | None
) -> tuple[tuple[str, ...], int | None] | None:
    """The key of a config that names ``target`` (``("quantifier", "likelihood")``) and its
    line in ``text``, or None."""
    from probrank._config import locate_key

    def walk(table: Mapping[str, Any], key: tuple[str, ...]) -> tuple[str, ...] | None:
        for name, value in table.items():
            if value == target:
                return (*key, name)
            if isinstance(value, Mapping):
                found = walk(value, (*key, name))
                if found is not None:
                    return found
        return None

    where = walk(document, ())
    if where is None:
        return None
    return where, (locate_key(text, where) if text is not None else None)


class PluginKind(str, Enum):
    """What a plug-in callable builds, and the probe it is checked with."""

    PRIOR = "prior"
    """``fn(**args) -> pyro Distribution`` over a scalar weight (event and batch shape ``()``;
    the layer expands it to its weights), e.g. ``dist.Laplace(0.0, scale)``."""
    PROPORTION_LIKELIHOOD = "proportion_likelihood"
    """``fn(total_count, **args) -> (logits `... x m` -> Distribution with batch shape
    `... x m`)`` over relevant counts out of ``total_count``, like
    :func:`probrank.likelihoods.beta_binomial_proportion`."""


@dataclass(frozen=True)
class PluginSpec:
    """A resolved plug-in: its ``"module:callable"`` text, the callable and its arguments.

    ``build(*leading)`` calls the callable with the leading positional arguments the model
    supplies (``total_count`` for a likelihood) and the config's keyword arguments.
    """

    target: str
    function: Callable[..., Any]
    args: Mapping[str, Any] = field(default_factory=dict)
    kind: PluginKind = PluginKind.PRIOR

    def build(self, *leading: Any) -> Any:
        return self.function(*leading, **dict(self.args))


def is_plugin(value: object) -> bool:
    """Whether a config value names a callable (``"module.path:callable"``)."""
    return isinstance(value, str) and ":" in value


def import_callable(target: str, *, folder: Path | None = None) -> Callable[..., Any]:
    """The callable ``target`` (``"module.path:callable"``) names.

    Args:
        target: ``"module.path:name"`` (``name`` may be dotted: an attribute of an attribute).
        folder: Put first on the import path while importing (the config file's folder);
            removed afterwards.

    Raises:
        InputDataError: malformed text, a module that is not found or fails to import, or a
            missing or non-callable attribute.
    """
    if not _TARGET.fullmatch(target):
        raise InputDataError(f"{target!r}: expected 'module.path:callable'")
    module_name, _, attribute = target.partition(":")
    added = folder is not None and str(folder) not in sys.path
    if added:
        sys.path.insert(0, str(folder))
    try:
        if importlib.util.find_spec(module_name.split(".")[0]) is None:
            where = f" (looked in {folder} and the installed packages)" if folder else ""
            raise InputDataError(f"{target!r}: no module named {module_name!r}{where}")
        try:
            module = importlib.import_module(module_name)
        except InputDataError:
            raise
        except Exception as exc:
            raise InputDataError(
                f"{target!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
    finally:
        if added:
            sys.path.remove(str(folder))
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise InputDataError(f"{target!r}: module {module_name!r} has no {attribute!r}")
        value = getattr(value, part)
    if not callable(value):
        raise InputDataError(f"{target!r}: {attribute!r} is not callable")
    return value  # type: ignore[no-any-return]


def resolve(
    target: str,
    args: Mapping[str, Any] | None,
    kind: PluginKind,
    *,
    folder: Path | None = None,
    key: str | None = None,
    path: Path | None = None,
) -> PluginSpec:
    """Import ``target`` and check it by calling it on :class:`PluginKind`'s probe.

    Args:
        target: ``"module.path:callable"``.
        args: Keyword arguments for the callable (the config's ``<key>_args`` table).
        kind: What it must build.
        folder: The config file's folder (first on the import path while importing).
        key: The config key, for the message (``quantifier.likelihood``).
        path: The config file, for the message.

    Returns:
        The checked :class:`PluginSpec`.

    Raises:
        InputDataError: one line naming the file, the key and what is wrong.
    """
    where = f"{key}: " if key else ""
    args = dict(args or {})
    try:
        function = import_callable(target, folder=folder)
        _check_signature(function, target, args, leading=_LEADING[kind])
        spec = PluginSpec(target, function, args, kind)
        _PROBES[kind](spec)
    except InputDataError as exc:
        raise InputDataError(f"{where}{exc.reason}", path=path, line=exc.line) from exc
    return spec


_LEADING = {PluginKind.PRIOR: 0, PluginKind.PROPORTION_LIKELIHOOD: 1}
"""Positional arguments the model passes before the config's keyword arguments."""


def _check_signature(
    function: Callable[..., Any], target: str, args: Mapping[str, Any], *, leading: int
) -> None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: the probe decides
        return
    try:
        signature.bind(*([None] * leading), **args)
    except TypeError as exc:
        takes = ", ".join(signature.parameters) or "no arguments"
        raise InputDataError(
            f"{target!r} cannot be called with {leading} positional argument(s) and "
            f"{sorted(args)} ({exc}); it takes ({takes})"
        ) from exc


def _probe_prior(spec: PluginSpec) -> None:
    import torch
    from torch.distributions import Distribution

    prior = _call(spec)
    if not isinstance(prior, Distribution):
        raise InputDataError(
            f"{spec.target!r} must return a pyro distribution, got {type(prior).__name__}"
        )
    if tuple(prior.batch_shape) != () or tuple(prior.event_shape) != ():
        raise InputDataError(
            f"{spec.target!r} must return a distribution over one scalar weight (batch and "
            f"event shape ()), got batch {tuple(prior.batch_shape)}, event "
            f"{tuple(prior.event_shape)}"
        )
    value = prior.log_prob(torch.zeros(()))
    if not torch.isfinite(value):
        raise InputDataError(f"{spec.target!r}: log density at 0 is {float(value)}, not finite")


def _probe_likelihood(spec: PluginSpec) -> None:
    import torch
    from torch.distributions import Distribution

    total = 10
    likelihood = _call(spec, total)
    if isinstance(likelihood, Distribution) or not callable(likelihood):
        # a pyro distribution is callable (it samples): called with logits it would fail
        # with "torch.Size() takes an iterable of 'int'"
        hint = ": wrap it, `return lambda logits: ...`" if callable(likelihood) else ""
        raise InputDataError(
            f"{spec.target!r}(total_count, ...) must return a callable of logits (logits -> "
            f"distribution), got a {type(likelihood).__name__}{hint}"
        )
    logits = torch.linspace(-2.0, 2.0, 6).reshape(2, 3)
    try:
        distribution = likelihood(logits)
    except Exception as exc:
        raise InputDataError(
            f"{spec.target!r}: its likelihood failed on logits of shape (2, 3): "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(distribution, Distribution):
        raise InputDataError(
            f"{spec.target!r}: its likelihood must return a pyro distribution, got "
            f"{type(distribution).__name__}"
        )
    if tuple(distribution.batch_shape) != (2, 3):
        raise InputDataError(
            f"{spec.target!r}: logits of shape (2, 3) gave batch shape "
            f"{tuple(distribution.batch_shape)}, expected (2, 3)"
        )
    counts = torch.tensor([[0.0, 5.0, 10.0], [1.0, 3.0, 9.0]])
    try:
        values = distribution.log_prob(counts)
    except Exception as exc:
        raise InputDataError(
            f"{spec.target!r}: log_prob of counts in [0, {total}] failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if tuple(values.shape) != (2, 3) or not bool(torch.isfinite(values).all()):
        raise InputDataError(
            f"{spec.target!r}: log_prob of counts in [0, {total}] must be finite with shape "
            f"(2, 3), got {tuple(values.shape)}"
        )
    from probrank.likelihoods.proportion import mean_proportion

    try:
        mean = mean_proportion(likelihood, logits, total)
    except InputDataError as exc:
        raise InputDataError(f"{spec.target!r}: {exc.reason}") from None
    if bool(((mean < 0) | (mean > 1)).any()):
        raise InputDataError(
            f"{spec.target!r}: its mean proportion must lie in [0, 1], got "
            f"{[round(float(v), 4) for v in mean.reshape(-1)]} for logits -2 .. 2"
        )


def _call(spec: PluginSpec, *leading: Any) -> Any:
    try:
        return spec.build(*leading)
    except InputDataError:
        raise
    except Exception as exc:
        raise InputDataError(
            f"{spec.target!r} failed when called with {dict(spec.args)}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


_PROBES: dict[PluginKind, Callable[[PluginSpec], None]] = {
    PluginKind.PRIOR: _probe_prior,
    PluginKind.PROPORTION_LIKELIHOOD: _probe_likelihood,
}
"""The check of each kind: call the factory as the model will, on a small probe."""


@dataclass(frozen=True)
class PluginField:
    """Schema marker (``Annotated[str, PluginField(kind, builtins)]``) for a config key that
    takes a built-in name or ``"module.path:callable"``, with its keyword arguments under
    ``<key>_args`` (a field of the same table).

    As an ``Annotated`` check (:mod:`probrank._config`) it refuses a value that is neither a
    built-in name nor of the ``module:callable`` form; :func:`resolve_config_plugins` then
    imports and probes the callables once the whole file has passed its schema.
    """

    kind: PluginKind
    builtins: tuple[str, ...] = ()

    def __call__(self, value: Any) -> str | None:
        if value in self.builtins or (isinstance(value, str) and _TARGET.fullmatch(value)):
            return None
        names = ", ".join(repr(b) for b in self.builtins)
        return f"must be one of {names} or 'module.path:callable', got {value!r}"


def _plugin_fields(schema: Any) -> list[tuple[str, PluginField | None, Any]]:
    """``(name, marker or None, sub-schema or None)`` for every field of a schema table."""
    import dataclasses
    import typing

    found = []
    hints = typing.get_type_hints(schema, include_extras=True)
    for f in dataclasses.fields(schema):
        marker, sub = None, None
        for hint in _alternatives(hints[f.name]):
            if typing.get_origin(hint) is typing.Annotated:
                marker = next((m for m in hint.__metadata__ if isinstance(m, PluginField)), marker)
            elif dataclasses.is_dataclass(hint):
                sub = hint
        found.append((f.name, marker, sub))
    return found


def _alternatives(hint: Any) -> list[Any]:
    import types
    import typing

    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return [a for arg in typing.get_args(hint) for a in _alternatives(arg)]
    return [hint]


def resolve_config_plugins(
    document: Mapping[str, Any], schema: Any, *, path: Path, text: str | None = None
) -> dict[tuple[str, ...], PluginSpec]:
    """Import and probe every ``"module:callable"`` of a config that passed its schema.

    Args:
        document: The parsed config.
        schema: Its schema dataclass (fields marked with :class:`PluginField`).
        path: The config file: its folder goes first on the import path.
        text: The file's text, to name the line of a bad key.

    Returns:
        ``{("quantifier", "likelihood"): PluginSpec, ...}`` for the keys that name callables.

    Raises:
        InputDataError: ``<file>:<line>: <key>: <what>`` for a callable that cannot be
            imported, takes other arguments, or builds something of the wrong shape.
    """
    from probrank._config import dotted, locate_key

    specs: dict[tuple[str, ...], PluginSpec] = {}

    def walk(table: Mapping[str, Any], kind: Any, key: tuple[str, ...]) -> None:
        for name, marker, sub in _plugin_fields(kind):
            if name not in table:
                continue
            value = table[name]
            if marker is not None and isinstance(value, str) and ":" in value:
                where = (*key, name)
                try:
                    specs[where] = resolve(
                        value,
                        table.get(f"{name}_args"),
                        marker.kind,
                        folder=path.resolve().parent,
                    )
                except InputDataError as exc:
                    line = locate_key(text, where) if text is not None else None
                    raise InputDataError(
                        f"{dotted(where)}: {exc.reason}", path=path, line=line
                    ) from None
            elif sub is not None and isinstance(value, Mapping):
                walk(value, sub, (*key, name))

    walk(document, schema, ())
    return specs
