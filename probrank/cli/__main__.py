"""``python -m probrank.cli``: the ``probrank`` command."""

from probrank.cli import console

console()
