"""Atomic, durable file replacement for everything a run writes (checkpoints, the state file,
the engine's pid file). Its own module so writers of small files do not load the checkpoint
models."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; not every platform can open a directory."""
    if os.name == "nt":  # pragma: no cover
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write(target: Path, payload: bytes, mode: int | None = None,
                 durable: bool = True) -> None:
    """Temp file in the target's own directory, fsync, rename over the target, fsync the
    directory. A symlink at `target` is replaced, never followed, so nothing lands elsewhere.
    `durable=False` keeps the atomic rename but skips both fsyncs, for files derived from a
    durable one (state file, engine pid file) that are rewritten on resume anyway."""
    directory = target.parent
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    if durable:
        _fsync_dir(directory)
