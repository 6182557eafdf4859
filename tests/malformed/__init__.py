"""The malformed-input corpus of issue 14: every command and every loader, fed broken input.

:data:`CLI_CASES` are command lines run by ``tests/test_malformed_corpus.py`` through
:func:`probrank.cli.main` (and a sample as real processes); :data:`LOADER_CASES` call the
loaders that no command reaches. Each case lays out its own folder (``{d}`` in a path, an
argument, an expected fragment or an environment value stands for it) from ``files``: a ``str``
is written as UTF-8, ``bytes`` as is, :data:`FOLDER` makes a folder. Output paths named in
``sentinels`` are pre-created with :data:`SENTINEL` bytes that must survive the failed command.

Good inputs the cases start from (the ``GOOD_*`` texts and the layouts) are checked to load by
positive controls in the test module, so each failure comes from the one thing broken.
"""

from __future__ import annotations

from tests.malformed.commands import EVAL_CASES, FUSE_CASES
from tests.malformed.datasets import DATASET_CASES
from tests.malformed.encode import ENCODE_CASES, EXECUTOR_CASES
from tests.malformed.experiment import EXPERIMENT_CASES
from tests.malformed.formats import FORMAT_CASES
from tests.malformed.inputs import CliCase, LoaderCase
from tests.malformed.interactive import DEMO_CASES, GLOBAL_CASES, INTERACTIVE_CASES
from tests.malformed.saved import SURFACE_LOADER_CASES
from tests.malformed.surfaces import SURFACE_CLI_CASES

__all__ = ["CLI_CASES", "LOADER_CASES"]

CLI_CASES: list[CliCase] = [
    *EVAL_CASES,
    *FUSE_CASES,
    *EXPERIMENT_CASES,
    *EXECUTOR_CASES,
    *ENCODE_CASES,
    *INTERACTIVE_CASES,
    *DEMO_CASES,
    *GLOBAL_CASES,
    *SURFACE_CLI_CASES,
]
LOADER_CASES: list[LoaderCase] = [*DATASET_CASES, *FORMAT_CASES, *SURFACE_LOADER_CASES]
