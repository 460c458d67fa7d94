"""File-system durability helpers: fsync of files and directories and atomic replacement.

Invariants: a file created, renamed or deleted is durable only once its directory is fsync'd,
so every such operation here ends with `fsync_dir`; `atomic_write` never leaves a partially
written target (the content goes to `<name>.tmp`, is fsync'd, then renamed over the target).
Kafka does the same for meta.properties, quorum-state and checkpoints (reference §4.2-§4.4).
"""

from __future__ import annotations

import os
from pathlib import Path

from metaquorum.storage.io_errors import io_op


def fsync_dir(path: Path) -> None:
    """fsync a directory so that entries created, renamed or deleted in it are durable."""
    with io_op("fsync", path):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes, *, mode: int = 0o644, fsync: bool = True) -> None:
    """Replace `path` by `data` atomically: write `<path>.tmp`, fsync, rename, fsync the dir."""
    tmp = path.with_name(path.name + ".tmp")
    with io_op("write", tmp):
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with io_op("write", tmp):
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        if fsync:
            with io_op("fsync", tmp):
                os.fsync(fd)
    finally:
        os.close(fd)
    with io_op("rename", path):
        os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)


def remove_durably(path: Path) -> None:
    """Delete a file (if present) and fsync its directory."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_dir(path.parent)
