"""How the file-to-file jobs make their output appear: all at once, or not at all."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

__all__ = ["publish"]


def publish(partial: Path, target: Path, overwrite: bool) -> None:
    """Moves the finished output into place, replacing an old one only when asked."""
    if target.exists():
        if not overwrite:
            raise FileExistsError(f"output {target} exists; pass overwrite=True to replace it")
        old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:12]}"
        target.rename(old)
        try:
            partial.rename(target)
        except BaseException:
            old.rename(target)  # the old output stays whole when the new one cannot land
            raise
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)
    else:
        partial.rename(target)
