"""The key-value state a quorum's nodes should hold, from what a client had acknowledged.

Role: the oracle of the backup/restore and recover-from tests (test_backup_schedule,
test_operator_recover). Their client is the Ledger with kv values (`w<w>-<n>=v`), which the
node's KeyValueStateMachine maps to keys, so snapshots keep them; each node's GET /status
reports its map's size and digest (`state_machine.keys`, `.digest`). `allowed` gives the
(size, digest) pairs a node may show: every acknowledged value, plus any subset of the values
whose append had no answer (they may or may not be committed).

Invariants: pure; the digest is the node's KeyValueStateMachine.digest.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import urllib.request
from collections.abc import Iterable
from typing import Any

MAX_UNKNOWN = 8  # more unanswered appends than this are too many subsets to enumerate


def digest(data: dict[bytes, bytes]) -> str:
    h = hashlib.sha256()
    for k, v in sorted(data.items()):
        h.update(len(k).to_bytes(4, "big") + k + len(v).to_bytes(4, "big") + v)
    return h.hexdigest()[:16]


def as_map(values: Iterable[bytes]) -> dict[bytes, bytes]:
    out = {}
    for v in values:
        key, _, val = v.partition(b"=")
        out[key] = val
    return out


def allowed(acked: Iterable[bytes], unknown: Iterable[bytes]) -> set[tuple[int, str]]:
    base = as_map(acked)
    maybe = sorted(set(unknown))
    assert len(maybe) <= MAX_UNKNOWN, f"{len(maybe)} appends without an answer: too many"
    out = set()
    for k in range(len(maybe) + 1):
        for extra in itertools.combinations(maybe, k):
            m = {**base, **as_map(extra)}
            out.add((len(m), digest(m)))
    return out


def node_state(pod_ip: str, http_port: int = 8080) -> dict[str, Any]:
    """A node's /status `state_machine` (applied_offset, keys, digest)."""
    with urllib.request.urlopen(f"http://{pod_ip}:{http_port}/status", timeout=5) as r:
        return dict(json.loads(r.read())["state_machine"])
