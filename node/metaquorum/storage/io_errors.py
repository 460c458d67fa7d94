"""Storage IO failures named by file and operation: what a fail-stop node prints (issue 12).

Role: `io_op(op, path)` wraps one system call (write, pwrite, fsync, ftruncate, rename) on one
file; an `OSError` escaping it becomes a `StorageIOError` whose `str()` is the single line an
operator reads when the node stops: the operation, the file and the errno by name, e.g.
`fsync of /data/__cluster_metadata-0/00000000000000000000.log failed: EIO (Input/output error)`.

Invariant: a `StorageIOError` is never retried or swallowed by the storage package; after a failed
fsync the page cache may have dropped the dirty pages ("fsyncgate"), so a later fsync that
returns 0 proves nothing. The runtime treats it as fatal, as Kafka's raft driver does (its fault
handler halts the process).
"""

from __future__ import annotations

import errno as errno_names
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class StorageIOError(OSError):
    """An IO call on a named file failed (subclass of `OSError`; `errno` as the cause's)."""

    def __init__(self, op: str, path: Path | str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror, str(path))
        self.op = op
        self.path = str(path)

    def __str__(self) -> str:
        name = errno_names.errorcode.get(self.errno or 0, f"errno {self.errno}")
        return f"{self.op} of {self.path} failed: {name} ({self.strerror})"


@contextmanager
def io_op(op: str, path: Path | str) -> Iterator[None]:
    """Name the file and operation of an `OSError` raised inside the block."""
    try:
        yield
    except StorageIOError:
        raise
    except OSError as e:
        raise StorageIOError(op, path, e) from e
