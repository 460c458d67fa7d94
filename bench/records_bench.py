"""Records benchmark: build and parse a 1,000-record RecordBatch v2 (100 B values).

Prints ops/s and MB/s for: build_batch, iter_batches + CRC check, and full record decoding.

    .venv/bin/python bench/records_bench.py [--seconds S] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from metaquorum.protocol.records import build_batch, iter_batches

VALUES = [bytes([i % 256]) * 100 for i in range(1000)]


def rate(fn: Callable[[], object], seconds: float) -> float:
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    batch = build_batch(0, 1, VALUES, timestamp_ms=1_700_000_000_000)
    size = len(batch)

    def build() -> object:
        return build_batch(0, 1, VALUES, timestamp_ms=1_700_000_000_000)

    def validate() -> object:
        return [b.is_valid() for b in iter_batches(batch)]

    def parse() -> object:
        return [r.value for b in iter_batches(batch) for r in b]

    results = {}
    for name, fn in (("build", build), ("validate_crc", validate), ("parse_records", parse)):
        ops = rate(fn, args.seconds)
        results[name] = {
            "batches_per_s": round(ops, 1),
            "records_per_s": round(ops * 1000),
            "mb_per_s": round(ops * size / 1e6, 1),
        }
    if args.json:
        json.dump({"batch_bytes": size, "results": results}, sys.stdout, indent=2)
        print()
    else:
        print(f"batch: 1000 records x 100 B = {size} bytes")
        for name, r in results.items():
            print(
                f"{name:>14}: {r['batches_per_s']:>9} batches/s "
                f"{r['records_per_s']:>10} records/s {r['mb_per_s']:>8} MB/s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
