"""A pickle path of memresolve 0.1, before the package moved into wings.

Pickles name a class by its module; those written by 0.1 name ``memresolve._result``,
so it hands on what they need from ``memresolve._model._result``. Nothing imports it
(tests/contract/test_structure.py lists it).
"""

from memresolve._model._result import Exclusion, PromptMemory, RawResolution, Resolution, Trace

__all__ = ["Exclusion", "PromptMemory", "RawResolution", "Resolution", "Trace"]
