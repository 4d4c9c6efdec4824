"""The Hypothesis profiles of the suite (loaded by ``tests/conftest.py``), how many examples the
differential tests run, and the type of the ``resolve`` fixture."""

from __future__ import annotations

import os
from collections.abc import Callable

from hypothesis import HealthCheck, settings

from memresolve import Resolution

# dev: quick local runs. ci: what .ci/run uses, reproducible. deep: nightly or by hand.
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=300,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep", max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROFILE = os.environ.get("MEMRESOLVE_HYPOTHESIS_PROFILE", "dev")
settings.load_profile(PROFILE)

# The differential tests (tests/*/test_parity*.py) run more examples than the
# rest: they are the proof that both backends agree. deep = 100,000 per test.
PARITY_EXAMPLES = {"dev": 300, "ci": 2_000, "deep": 100_000}.get(PROFILE, 300)


Resolve = Callable[..., Resolution]
