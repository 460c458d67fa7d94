"""The ledger check of a nemesis run: what the replicas' logs hold after the run, against what
the clients were told.

Role: read every node's segment files (`__cluster_metadata-0/*.log`, data batches only, after
the nodes stopped) and the clients' history, and check:
- no acknowledged record lost: every append answered ok is in the log at the offset its
  answer named;
- none duplicated: no value at two offsets;
- one total order: below the final high watermark (every node reached it before the stop),
  every replica holds the same records at the same offsets;
- nothing invented: every value in the log was appended by a client, and no append that was
  never sent (failed to connect) is in it.
Invariants: a pure function of the files and the history; the list of violations is empty
exactly when the run passes the ledger.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from metaquorum.protocol.records import iter_batches

Records = list[tuple[int, str]]


def replica_records(data_dir: Path) -> Records:
    out: Records = []
    for seg in sorted((data_dir / "__cluster_metadata-0").glob("*.log")):
        for batch in iter_batches(seg.read_bytes()):
            if batch.is_control:
                continue
            out.extend((r.offset, (r.value or b"").decode()) for r in batch)
    return out


def load_history(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def check(history: list[dict[str, Any]], replicas: dict[int, Records], hw: int) -> list[str]:
    bad: list[str] = []
    committed = {i: [r for r in recs if r[0] < hw] for i, recs in replicas.items()}
    ids = sorted(committed)
    ref = committed[ids[0]]
    for i in ids[1:]:
        if committed[i] != ref:
            diff = next(
                (a, b) for a, b in zip([*committed[i], None], [*ref, None], strict=False) if a != b
            )
            bad.append(
                f"replicas {ids[0]} and {i} differ below HW {hw}: first {diff[1]} vs {diff[0]}"
            )
    at = dict(ref)
    counts = Counter(v for _, v in ref)
    for v, n in counts.items():
        if n > 1:
            bad.append(f"value {v} is in the log {n} times")
    appends = {op["value"]: op for op in history if op["f"] == "append"}
    lost = [
        op for op in appends.values() if op["type"] == "ok" and at.get(op["offset"]) != op["value"]
    ]
    for op in lost[:10]:
        bad.append(
            f"acknowledged append {op['value']} at offset {op['offset']} lost "
            f"(the log has {at.get(op['offset'])!r} there)"
        )
    if len(lost) > 10:
        bad.append(f"... {len(lost)} acknowledged appends lost in all")
    for off, v in ref:
        op = appends.get(v)
        if op is None:
            bad.append(f"offset {off} holds {v!r}, which no client appended")
        elif op["type"] == "fail":
            bad.append(f"offset {off} holds {v!r}, an append that was never sent")
    return bad
