"""``python -m memresolve``: the same as the ``memresolve`` command."""

import sys

from memresolve._cli import main

sys.exit(main())
