"""The compiled Rust module (PyO3). Private: import ``memresolve`` instead."""

__all__ = [
    "AUTHORITY_NAMES",
    "REASON_NAMES",
    "RESOLVER_VERSION",
    "SCOPE_KIND_NAMES",
    "STATUS_NAMES",
    "__version__",
    "scope_id",
]

__version__: str
RESOLVER_VERSION: str
SCOPE_KIND_NAMES: list[str]
STATUS_NAMES: list[str]
AUTHORITY_NAMES: list[str]
REASON_NAMES: list[str]

def scope_id(kind: str, fields: list[str]) -> str:
    """The canonical scope identifier (SPEC §1), computed by the Rust core."""
