"""One sample of one node: what the kernel and the node's /metrics say about its resources.

Role: from `/proc/<pid>` the resident set (VmRSS), the thread count and the open file
descriptors; from the data dir the bytes it occupies on disk (allocated blocks, as `du`), its
segment and snapshot counts and largest snapshot; from the node's `/metrics`
(prometheus_client's GC collector) the garbage collections per generation. A node that is
down gives a row with `up: false`.

Invariants: a sample reads only (no request to the node mutates anything); every field is
a number or None, so a row is one JSON line.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def proc_stats(pid: int) -> dict[str, int] | None:
    """RSS bytes, threads, open fds of a live process; None if it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if "VmRSS" not in fields:  # a zombie
        return None
    return {
        "rss_bytes": int(fields["VmRSS"].split()[0]) * 1024,
        "threads": int(fields["Threads"].strip()),
        "fds": fds,
    }


def dir_stats(directory: Path) -> dict[str, int]:
    """Bytes allocated on disk under `directory`, and its segment and snapshot file counts."""
    total = segments = snapshots = largest = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                st = os.stat(os.path.join(root, name))
            except FileNotFoundError:  # deleted while we walked (log cleaning)
                continue
            total += st.st_blocks * 512
            segments += name.endswith(".log")
            if name.endswith(".checkpoint") and name != "bootstrap.checkpoint":
                snapshots += 1
                largest = max(largest, st.st_size)
    return {
        "disk_bytes": total,
        "segments": segments,
        "snapshots": snapshots,
        "largest_snapshot_bytes": largest,
    }


def gc_counts(http_port: int, timeout_s: float = 2.0) -> dict[str, int] | None:
    """python_gc_collections_total per generation from the node's /metrics."""
    url = f"http://127.0.0.1:{http_port}/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            text = r.read().decode()
    except (OSError, ValueError):
        return None
    out: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "python_gc_collections":
            for s in family.samples:
                if s.name.endswith("_total"):
                    out[f"gc{s.labels['generation']}"] = int(s.value)
    return out


def sample_node(node_id: int, pid: int | None, data_dir: Path, http_port: int) -> dict[str, Any]:
    row: dict[str, Any] = {"node": node_id, "pid": pid}
    stats = proc_stats(pid) if pid is not None else None
    row["up"] = stats is not None
    row.update(stats or {"rss_bytes": None, "threads": None, "fds": None})
    row.update(dir_stats(data_dir))
    row.update(gc_counts(http_port) or {"gc0": None, "gc1": None, "gc2": None})
    return row
