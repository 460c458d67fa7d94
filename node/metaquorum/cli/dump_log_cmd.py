"""`metaquorum dump-log`: print log segments and snapshots as Kafka's `kafka-dump-log.sh`
(reference §6.6).

Exit codes: 0 every file read and every batch valid; 1 a file could not be read or held
invalid batches or trailing bytes (reported on stdout; one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from metaquorum.storage.dump import DumpError, dump_file


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "dump-log", help="print .log segments and .checkpoint snapshots (as kafka-dump-log.sh)"
    )
    p.add_argument("--files", nargs="+", type=Path, required=True, metavar="FILE")
    p.add_argument("--deep-iteration", action="store_true", help="print every record")
    p.add_argument(
        "--print-data",
        "--print-data-log",
        action="store_true",
        dest="print_data",
        help="print record keys and values (implies --deep-iteration)",
    )
    p.set_defaults(func=_dump)


def _dump(args: argparse.Namespace) -> int:
    bad: list[str] = []
    for path in args.files:
        try:
            counts = dump_file(path, deep_iteration=args.deep_iteration, print_data=args.print_data)
        except DumpError as e:
            print(f"metaquorum dump-log: {e}", file=sys.stderr)
            return 1
        problems = []
        if counts["invalid_batches"]:
            problems.append(
                f"{counts['invalid_batches']} invalid batches (first at byte "
                f"{counts['first_invalid_position']})"
            )
        if counts["invalid_bytes"]:
            problems.append(
                f"{counts['invalid_bytes']} invalid trailing bytes at byte "
                f"{counts['invalid_position']}"
            )
        if problems:
            bad.append(f"{path}: " + ", ".join(problems))
    if bad:
        print("metaquorum dump-log: " + "; ".join(bad), file=sys.stderr)
        return 1
    return 0
