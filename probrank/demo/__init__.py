"""``probrank demo``: every model on generated data, a report folder and a summary on stdout.

:func:`run_demo` generates the embedded default collection, runs each section of
:data:`probrank.demo.sections.SECTIONS` (named by :class:`DemoSection`) in order and writes
``report.md``, ``results.json`` and one PNG per section into the report folder. The sections
call the model objects and their parts: :mod:`~probrank.demo.qlfusion`,
:mod:`~probrank.demo.gpf`, :mod:`~probrank.demo.multitask`, :mod:`~probrank.demo.interactive`.
"""

from probrank.demo.context import DemoContext, DemoSection
from probrank.demo.runner import run_demo

__all__ = ["DemoContext", "DemoSection", "run_demo"]
