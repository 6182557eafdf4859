"""``python -m probrank.cli``: the ``probrank`` command."""

import sys

from probrank.cli import main

sys.exit(main())
