"""``python -m memresolve``: the same as the ``memresolve`` command."""

import sys

from memresolve._cli._main import main

sys.exit(main())
