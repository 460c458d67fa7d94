"""The voter sets a replica's log holds (its VotersRecords, KIP-853), read from its segment
files after a run: the authority the watcher's sampled answers are judged against.

Role: a library of the Kubernetes nemesis (no test here). `voter_sets` lists (offset, set) of
every VotersRecord in `__cluster_metadata-0/*.log`, in offset order; `merged` joins several
replicas' lists by offset (they agree below the HW: the ledger checks the data records);
`jumps` names every pair of consecutive sets in the log that differ by more than one member
(the KIP-853 rule: one voter added or removed per committed change). A set below the oldest
segment kept (log cleaning behind a snapshot) is not in the list.
Invariant: pure functions of the files; keys are (id, directory id) as quorum_watch.Seen has
them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path

from metaquorum.protocol.control_records import decode_control_record
from metaquorum.protocol.messages import VotersRecord
from metaquorum.protocol.records import iter_batches
from quorum_watch import Key

VoterSets = list[tuple[int, frozenset[Key]]]


def voter_sets(data_dir: Path) -> VoterSets:
    out: VoterSets = []
    for seg in sorted((data_dir / "__cluster_metadata-0").glob("*.log")):
        for batch in iter_batches(seg.read_bytes()):
            if not batch.is_control:
                continue
            for record in batch:
                _, message = decode_control_record(record)
                if isinstance(message, VotersRecord):
                    voters = message.voters
                    keys = frozenset((v.voter_id, str(v.voter_directory_id)) for v in voters)
                    out.append((record.offset, keys))
    return out


def merged(replicas: Iterable[VoterSets]) -> VoterSets:
    by_offset: dict[int, frozenset[Key]] = {}
    for sets in replicas:
        by_offset.update(sets)
    return sorted(by_offset.items())


def jumps(sets: VoterSets) -> list[str]:
    return [
        f"the log's VotersRecord at offset {b[0]} changes {len(a[1] ^ b[1])} members at once: "
        f"{sorted(a[1])} -> {sorted(b[1])}"
        for a, b in itertools.pairwise(sets)
        if len(a[1] ^ b[1]) > 1
    ]
