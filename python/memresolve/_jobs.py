"""A pickle path of memresolve 0.1, before the package moved into wings.

Pickles name a class by its module; those written by 0.1 name ``memresolve._jobs``,
so it hands on what they need from ``memresolve._engine._jobs``. Nothing imports it
(tests/contract/test_structure.py lists it).
"""

from memresolve._engine._jobs import Normalization, Purge, PurgePlan, StatusChange

__all__ = ["Normalization", "Purge", "PurgePlan", "StatusChange"]
