"""The ``probrank`` command: one module per subcommand, each owning its arguments and calling
the public API; this module holds the registry and the one place where errors are caught.

Every subcommand module (:data:`COMMANDS`) defines ``TORCH``
(whether it uses torch: its pools are then sized too), ``add_arguments(parser)`` and
``run(args)``; nothing else but parsing and printing. A module is imported only when its
command is the one being run (or asked for ``--help``), so the parser of ``probrank eval``
loads no torch.

Every error, of any kind and from any command, is caught in :func:`main` and becomes one line
``probrank: error: <file>:<line>: <what>`` on stderr and exit code 2; ``--debug`` adds the
traceback. Command-line errors are one line too. A closed output pipe ends the command quietly,
Ctrl-C with ``probrank: interrupted`` and exit code 130, SIGTERM with one line and exit code
143: never a traceback or a death by signal. ``--threads N`` (before or after the subcommand)
sizes every thread pool (:mod:`probrank._threads`) before numpy or torch loads; ``-v`` / ``-q``
set the log level of the ``probrank`` loggers (``-q`` also turns progress bars off;
:func:`probrank.cli._parsing.logging_scope`).

Option choices come from the registries and enums they name (fusion methods, data sets,
posteriors, strategies, demo sections, ...), never from lists repeated here. Those live in
modules that may load numpy or torch, so the parser is built in two steps: the command's name
(and ``--threads``) are read first, the thread pools are sized, and only then is the chosen
command's full parser built (:func:`_parser`).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from probrank._threads import configure_torch, thread_scope
from probrank.cli._parsing import (
    OneLineParser,
    Terminated,
    UsageError,
    add_global_options,
    describe_error,
    logging_scope,
    sigterm_raises,
    silence_stdout,
    threads_before_parsing,
)

__all__ = ["COMMANDS", "QUICK_EXIT", "command_module", "console", "main"]

COMMANDS: dict[str, str] = {
    "eval": "evaluate runs exactly as trec_eval 10 does (double precision)",
    "demo": "run the models on generated data and write a report",
    "experiment": "run an experiment config (models/*/*.toml)",
    "encode": "encode a collection into the encoder cache (locally or on Ray)",
    "fuse": "fuse runs (learned methods by cross-validation)",
    "interactive": "simulated (or --human) interactive answer selection",
    "serve": "web pages for pairwise relevance judging by many annotators",
    "annotators": "add, revoke or list the annotators of a judging database (their links)",
    "pool": "simulate pooling strategies against full qrels, or pick documents to judge next",
}
"""The subcommands, by name, in ``--help`` order, with their one-line help; the module
``probrank.cli.<name>`` holds the rest."""


QUICK_EXIT = frozenset({"eval"})
"""Short commands that :func:`console` runs without the cyclic garbage collector, with
glibc's malloc keeping the memory they free (:func:`probrank._allocator.keep_freed_memory`),
and after which it ends the process at once (``os._exit`` once the output is flushed): they
make no reference cycle worth collecting and leave nothing to clean up, and the collector's
passes over the objects of numpy, pyarrow and the runs, then the interpreter's own clean-up of
them, cost as much as reading a run."""


def command_module(name: str) -> ModuleType:
    """The module of subcommand ``name`` (``probrank.cli.<name>``)."""
    return importlib.import_module(f"probrank.cli.{name}")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the full arguments of ``command`` only (the others are listed, and
    accept only the global options: they are not the one being run)."""
    parser = OneLineParser(prog="probrank", description="Bayesian relevance estimation toolkit.")
    add_global_options(parser, top_level=True)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_line in COMMANDS.items():
        # the one-line help is the description until the command's module gives a longer one
        child = sub.add_parser(
            name, help=help_line, description=help_line[:1].upper() + help_line[1:] + "."
        )
        if name == command:
            command_module(name).add_arguments(child)
        add_global_options(child, top_level=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``probrank`` console script; returns the exit code.

    The one place where errors are caught: whatever a command raises ends as one line on
    stderr (see the module docstring).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    with sigterm_raises():
        try:
            threads, command = threads_before_parsing(argv, COMMANDS)
            with thread_scope(threads) as count:
                args = _parser(command).parse_args(argv)
                debug = args.debug
                _run(args, count)
            sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        except SystemExit as exc:  # --help
            return exc.code if isinstance(exc.code, int) else 0
        except BrokenPipeError:
            silence_stdout()
            return 0
        except KeyboardInterrupt:
            print("probrank: interrupted", file=sys.stderr)
            return 130
        except Terminated:
            print("probrank: error: terminated (SIGTERM)", file=sys.stderr)
            return 143
        except Exception as exc:  # every error becomes one line
            if debug and not isinstance(exc, UsageError):
                import traceback

                traceback.print_exc()
            print(f"probrank: error: {describe_error(exc)}", file=sys.stderr)
            return 2
    return 0


def console() -> NoReturn:
    """``python -m probrank.cli``: :func:`main` on ``sys.argv``, then the process ends with its
    exit code; at once after the commands of :data:`QUICK_EXIT` (their output flushed)."""
    argv = sys.argv[1:]
    quick = threads_before_parsing(argv, COMMANDS)[1] in QUICK_EXIT
    if quick:  # freed numpy temporaries reused, not page-faulted in again
        from probrank._allocator import keep_freed_memory

        keep_freed_memory()
    if quick and "--bayesian" not in argv:  # (a sampler's traces hold reference cycles)
        gc.disable()
    code = main(argv)
    if quick:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: main has said what it had to say
            pass
        os._exit(code)
    sys.exit(code)


def _run(args: argparse.Namespace, threads: int) -> None:
    """Size torch's pools (commands that use torch), set up logging, call the command."""
    module = command_module(args.command)
    args.threads_given = args.threads
    if module.TORCH:
        configure_torch(threads)
    with logging_scope(args.verbose - args.quiet):
        module.run(args)


if __name__ == "__main__":
    sys.exit(main())
