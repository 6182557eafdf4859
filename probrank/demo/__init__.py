"""``probrank demo``: every model on generated data, a report folder and a summary on stdout.

:func:`run_demo` generates the embedded default collection, runs each section of
:data:`probrank.demo.sections.SECTIONS` in order and writes ``report.md``, ``results.json`` and
one PNG per section into the report folder.
"""

from probrank.demo.runner import DemoContext, run_demo

__all__ = ["DemoContext", "run_demo"]
