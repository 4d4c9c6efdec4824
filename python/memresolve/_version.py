"""The installed package's version (the one in Cargo.toml, carried by the wheel's metadata)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("memresolve")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
