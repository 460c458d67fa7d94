"""Fail-stop storage (issue 12): a failed write or fsync is reported once, with the file, the
operation and the errno; nothing is reported flushed past it, and no later operation (least of
all a second fsync, which may return 0 after the kernel dropped the dirty pages) runs.

The fault here is a patched `os.fsync` / `os.pwrite` below the storage (the disk is the part
faked); the same behaviour on a real process with libfiu is in
tests/integration/test_storage_faults.py.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from metaquorum.core.log import LogEntry
from metaquorum.runtime.records_bridge import batches_for_entries
from metaquorum.runtime.storage_io import StorageIO, StorageStoppedError
from metaquorum.storage.formatter import ServerConfig, format_storage
from metaquorum.storage.io_errors import StorageIOError, io_op
from metaquorum.storage.log import LogConfig
from metaquorum.storage.replica import ReplicaStorage, open_replica_storage

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[ReplicaStorage]:
    cfg = tmp_path / "server.properties"
    cfg.write_text(
        "process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://localhost:9093\nmetadata.log.dir={tmp_path / 'meta'}\n"
        "controller.quorum.voters=1@localhost:9093\n"
    )
    format_storage(ServerConfig.load(cfg), CLUSTER, standalone=False)
    st = open_replica_storage(tmp_path / "meta", node_id=1, config=LogConfig(fsync=True))
    yield st


def _batch(offset: int) -> bytes:
    entries = [LogEntry(offset, 1, b"v%d" % offset)]
    (data,) = batches_for_entries(entries, timestamp_ms=0)
    return data


class FailingCall:
    """Replace `os.<name>` so that its next `times` calls fail with `err`, then work again
    (what a disk does after a transient error: the next fsync may well return 0)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str, err: int, times: int) -> None:
        self.real: Callable[..., Any] = getattr(os, name)
        self.err, self.left, self.calls = err, times, 0
        monkeypatch.setattr(os, name, self)

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        if self.left > 0:
            self.left -= 1
            raise OSError(self.err, os.strerror(self.err))
        return self.real(*args)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


async def test_no_flushed_after_a_failed_fsync(
    storage: ReplicaStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed: list[int] = []
    failures: list[BaseException] = []
    io = StorageIO(storage, flushed.append, failures.append)
    await io.call(lambda: storage.log.append_as_follower(_batch(0)))
    fsync = FailingCall(monkeypatch, "fsync", errno.EIO, times=1)
    io.request_flush(1)
    await _settle()
    assert flushed == [] and fsync.calls == 1
    assert len(failures) == 1
    line = str(failures[0])
    segment = storage.log.segments[-1].log_path
    assert line == f"fsync of {segment} failed: EIO (Input/output error)"
    # The fsyncgate trap: a later flush would succeed (the fault is gone) and claim offset 2.
    io.post(lambda: storage.log.append_as_follower(_batch(1)))
    io.request_flush(2)
    await _settle()
    io.request_flush(2)
    await _settle()
    assert flushed == [], "an offset was reported durable after a failed fsync"
    assert fsync.calls == 1, "an fsync was retried after a failed one"
    assert storage.log.log_end_offset == 1  # the second append never ran either
    with pytest.raises(StorageStoppedError, match=r"fsync of .* failed: EIO"):
        await io.call(lambda: storage.log.log_end_offset)
    assert len(failures) == 1  # reported once
    await io.close()  # closes without another fsync
    assert fsync.calls == 1


async def test_failed_write_names_the_segment_and_stops(
    storage: ReplicaStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures: list[BaseException] = []
    flushed: list[int] = []
    io = StorageIO(storage, flushed.append, failures.append)
    FailingCall(monkeypatch, "pwrite", errno.ENOSPC, times=1)
    io.post(lambda: storage.log.append_as_follower(_batch(0)))
    io.request_flush(1)
    await _settle()
    assert flushed == []
    assert [str(f) for f in failures] == [
        f"write of {storage.log.segments[-1].log_path} failed: ENOSPC (No space left on device)"
    ]
    await io.close()


async def test_failed_quorum_state_write_is_fatal(
    storage: ReplicaStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metaquorum.storage.quorum_state import QuorumStateFile

    failures: list[BaseException] = []
    io = StorageIO(storage, lambda _: None, failures.append)
    FailingCall(monkeypatch, "fsync", errno.EIO, times=1)
    state = QuorumStateFile(leader_id=-1, leader_epoch=3, voted_id=1)
    with pytest.raises(StorageIOError, match=r"fsync of .*quorum-state\.tmp failed: EIO"):
        await io.call(lambda: storage.write_election_state(state))
    await _settle()
    assert len(failures) == 1
    await io.close()


def test_io_op_keeps_a_named_error_and_names_a_bare_one(tmp_path: Path) -> None:
    with pytest.raises(StorageIOError) as info, io_op("truncate", tmp_path / "a.log"):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    want = f"truncate of {tmp_path / 'a.log'} failed: EROFS (Read-only file system)"
    assert str(info.value) == want
    assert info.value.errno == errno.EROFS and isinstance(info.value, OSError)
    with (
        pytest.raises(StorageIOError, match="fsync of /inner"),
        io_op("write", "/outer"),
        io_op("fsync", "/inner"),
    ):
        raise OSError(errno.EIO, "Input/output error")


async def test_refused_follower_append_stops_instead_of_stalling(storage: ReplicaStorage) -> None:
    """A batch the log refuses (here: not at its end offset) is a failure reported at once,
    not a future nobody reads while the follower waits for a `Flushed` that never comes."""
    failures: list[BaseException] = []
    flushed: list[int] = []
    io = StorageIO(storage, flushed.append, failures.append)
    io.post(lambda: storage.log.append_as_follower(_batch(5)))
    io.request_flush(6)
    await _settle()
    assert flushed == [] and len(failures) == 1
    assert "5" in str(failures[0])
    await io.close()
