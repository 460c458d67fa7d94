"""Snapshots on real processes (marker `integration`): the key-value state machine is
snapshotted every `metadata.log.max.record.bytes.between.snapshots` bytes, the log start moves,
an observer that starts after that catches up through FetchSnapshot, and a restarted voter
reloads its snapshot; every replica ends with the same state."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import Endpoint
from metaquorum.runtime.local_quorum import LocalQuorum

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

EXTRA = {
    "metadata.log.max.record.bytes.between.snapshots": "2000",
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.fetch.timeout.ms": "1000",
}


def _append_many(q: LocalQuorum, n: int, start: int = 0) -> dict[bytes, bytes]:
    expected: dict[bytes, bytes] = {}

    async def go() -> None:
        c = LogClient([Endpoint("127.0.0.1", x.port) for x in q.nodes.values()])
        try:
            for i in range(start, start + n):
                key, value = b"k%d" % (i % 40), b"v%d" % i
                await c.append([key + b"=" + value])
                expected[key] = value
        finally:
            await c.close()

    asyncio.run(go())
    return expected


def _digest(data: dict[bytes, bytes]) -> str:
    """The state digest /status reports, computed here from what the test wrote."""
    h = hashlib.sha256()
    for k, v in sorted(data.items()):
        h.update(len(k).to_bytes(4, "big") + k + len(v).to_bytes(4, "big") + v)
    return h.hexdigest()[:16]


def _same_state_everywhere(q: LocalQuorum, ids: list[int], timeout_s: float) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    last: dict[int, object] = {}
    while time.monotonic() < deadline:
        sts = {n: q.nodes[n].status() for n in ids}
        last = dict(sts)
        if all(s is not None for s in sts.values()):
            sms = [s["state_machine"] for s in sts.values() if s is not None]
            hws = {s["high_watermark"] for s in sts.values() if s is not None}
            same = len(hws) == 1 and all(sm == sms[0] for sm in sms)
            if same and sms[0]["applied_offset"] == hws.pop():
                return sms[0]  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"replicas did not converge: {last}")


def test_snapshots_move_log_start_and_observer_catches_up_through_one(tmp_path: Path) -> None:
    q = LocalQuorum(tmp_path, 3, observers=1, extra=EXTRA)
    q.write_configs()
    q.format()
    for nid in q.voter_ids:
        q.start(nid)
    try:
        leader, _ = q.wait_for_leader(30)
        expected = _append_many(q, 400)
        sm = _same_state_everywhere(q, q.voter_ids, 20)
        assert sm["keys"] == len(expected) == 40
        assert sm["digest"] == _digest(expected)
        lead = q.nodes[leader].status()
        assert lead is not None and lead["snapshots_written"] >= 1
        assert lead["log_start_offset"] > 0 and lead["snapshot_id"] is not None
        snap_offset, snap_epoch = lead["snapshot_id"]
        name = f"{snap_offset:020d}-{snap_epoch:010d}.checkpoint"
        assert (q.nodes[leader].directory / "__cluster_metadata-0" / name).exists()

        q.start(4)  # the observer's fetch offset 0 is below the leader's log start
        sm4 = _same_state_everywhere(q, [leader, 4], 30)
        assert sm4 == _same_state_everywhere(q, q.voter_ids, 5)
        obs = q.nodes[4].status()
        assert obs is not None and obs["state"] == "observer"
        assert obs["log_start_offset"] >= snap_offset  # it started from a downloaded snapshot
        part = q.nodes[4].directory / "__cluster_metadata-0"
        assert any(p.name.endswith(".checkpoint") for p in part.iterdir())

        # A voter restarted after kill -9 reloads its snapshot and the log after it.
        follower = next(n for n in q.voter_ids if n != leader)
        q.kill(follower)
        expected.update(_append_many(q, 50, start=400))
        q.start(follower)
        final = _same_state_everywhere(q, [*q.voter_ids, 4], 30)
        assert final["keys"] == 40 and final["digest"] == _digest(expected)

        # `snapshot create` on demand (POST /snapshot): a snapshot at the applied offset.
        expected.update(_append_many(q, 3, start=450))
        _same_state_everywhere(q, [leader], 10)
        node = q.nodes[leader]
        req = urllib.request.Request(f"http://127.0.0.1:{node.http_port}/snapshot", method="POST")
        with urllib.request.urlopen(req, timeout=15) as r:
            created = json.loads(r.read())
        s = node.status()
        assert s is not None
        assert created["end_offset"] == s["state_machine"]["applied_offset"]
        name = f"{created['end_offset']:020d}-{created['epoch']:010d}.checkpoint"
        assert (node.directory / "__cluster_metadata-0" / name).exists()
        with pytest.raises(urllib.error.HTTPError) as again:  # nothing new since
            urllib.request.urlopen(req, timeout=15)
        assert again.value.code == 409
    finally:
        q.stop_all()
