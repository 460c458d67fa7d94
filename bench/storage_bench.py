"""Storage benchmark: durable appends/s of the metadata log beside the disk's raw write+fsync rate.

For batches of 1, 16 and 256 records of 100 B: time `append_records_as_leader` + `flush`
(fsync) per batch, and, on the same disk in the same run, a bare `os.write` + `os.fsync` loop
of the same byte size, alternating short slices of each. Prints median appends/s, records/s,
MB/s and the median per-round ratio to the raw rate.

    .venv/bin/python bench/storage_bench.py [--dir DIR] [--seconds S] [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from metaquorum.protocol.records import build_batch
from metaquorum.storage.log import LogConfig, MetadataLog

RECORD = b"x" * 100


def raw_rate(directory: Path, size: int, seconds: float) -> float:
    """write+fsync of `size` bytes per op, appending to one file: ops/s."""
    path = directory / "raw.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    data = b"r" * size
    n = 0
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            os.write(fd, data)
            os.fsync(fd)
            n += 1
        return n / (time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()


def log_rate(directory: Path, records: int, seconds: float) -> float:
    """append as leader + flush (fsync) per batch of `records` records: appends/s."""
    d = Path(tempfile.mkdtemp(dir=directory)) / "__cluster_metadata-0"
    log = MetadataLog.open(d, LogConfig())
    values = [RECORD] * records
    n = 0
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            log.append_records_as_leader(values, 1, timestamp_ms=0)
            log.flush()
            n += 1
        return n / (time.perf_counter() - start)
    finally:
        log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="directory on the disk to test")
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=6, help="raw/log alternations")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    base = args.dir or Path(os.environ.get("METAQUORUM_BENCH_DIR", tempfile.gettempdir()))
    base.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        work = Path(tmp)
        for count in (1, 16, 256):
            size = len(build_batch(0, 1, [RECORD] * count, timestamp_ms=0))
            # Alternate short raw and log slices: the disk is shared, so compare neighbours.
            slice_s = args.seconds / args.rounds / 2
            raws, ours, ratios = [], [], []
            for _ in range(args.rounds):
                raw = raw_rate(work, size, slice_s)
                log = log_rate(work, count, slice_s)
                raws.append(raw)
                ours.append(log)
                ratios.append(log / raw)
            raw_m, ours_m = statistics.median(raws), statistics.median(ours)
            results.append(
                {
                    "records_per_batch": count,
                    "batch_bytes": size,
                    "raw_fsync_ops_per_s": round(raw_m, 1),
                    "log_appends_per_s": round(ours_m, 1),
                    "log_records_per_s": round(ours_m * count, 1),
                    "log_mb_per_s": round(ours_m * size / 1e6, 3),
                    "ratio_to_raw": round(statistics.median(ratios), 3),
                }
            )
    if args.json:
        json.dump({"dir": str(base), "results": results}, sys.stdout, indent=2)
        print()
    else:
        print(f"disk: {base}")
        print(
            f"{'records':>8} {'bytes':>7} {'raw ops/s':>10} {'log app/s':>10} "
            f"{'records/s':>10} {'MB/s':>7} {'ratio':>6}"
        )
        for r in results:
            print(
                f"{r['records_per_batch']:>8} {r['batch_bytes']:>7} {r['raw_fsync_ops_per_s']:>10} "
                f"{r['log_appends_per_s']:>10} {r['log_records_per_s']:>10} "
                f"{r['log_mb_per_s']:>7} {r['ratio_to_raw']:>6}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
