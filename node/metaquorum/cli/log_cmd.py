"""`metaquorum log --bootstrap-controller H:P append VALUE... | tail --from OFFSET [--follow]`.

append: one Produce (acks=-1) of the values as one batch; prints the base offset once the
records are committed. tail: committed data records from OFFSET, one per line as
`offset<TAB>value` (value decoded as UTF-8 with backslash escapes); `--follow` keeps polling.
Exit codes: 0 ok, 1 failure (one line on stderr), 2 usage; 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from metaquorum.admin.client import AdminError, parse_bootstrap
from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import ConfigError
from metaquorum.net.tls import command_config_tls


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("log", help="append to / read the replicated log")
    parser.add_argument("--bootstrap-controller", required=True, metavar="HOST:PORT[,...]")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="F",
        help="client properties (security.protocol=SSL, ssl.*)",
    )
    sub = parser.add_subparsers(dest="log_command", metavar="SUBCOMMAND")
    sub.required = True
    p = sub.add_parser("append", help="append values (one record each) and wait for commit")
    p.add_argument("values", nargs="+", help="record values (UTF-8)")
    p.set_defaults(func=_append)
    p = sub.add_parser("tail", help="print committed records from an offset")
    p.add_argument("--from", dest="from_offset", type=int, default=0, metavar="OFFSET")
    p.add_argument("--follow", "-f", action="store_true", help="keep waiting for new records")
    p.set_defaults(func=_tail)


def _client(args: argparse.Namespace) -> LogClient:
    try:
        tls = command_config_tls(args.command_config) if args.command_config else None
    except ConfigError as e:
        raise AdminError(str(e)) from None
    return LogClient(parse_bootstrap(args.bootstrap_controller), timeout_s=args.timeout, tls=tls)


async def _do_append(args: argparse.Namespace) -> int:
    client = _client(args)
    try:
        base = await client.append([v.encode() for v in args.values])
    finally:
        await client.close()
    print(f"appended {len(args.values)} record(s) at offset {base}")
    return 0


async def _do_tail(args: argparse.Namespace) -> int:
    if args.from_offset < 0:
        raise AdminError("--from must be >= 0")
    client = _client(args)
    offset = args.from_offset
    try:
        while True:
            records, offset, hw = await client.read(offset, max_wait_ms=500)
            for r in records:
                text = r.value.decode("utf-8", errors="backslashreplace")
                sys.stdout.write(f"{r.offset}\t{text}\n")
            sys.stdout.flush()
            if not args.follow and offset >= hw:
                return 0
    finally:
        await client.close()


def _run(coro: Any) -> int:
    try:
        rc: int = asyncio.run(coro)
        return rc
    except AdminError as e:
        print(f"metaquorum log: {e} (check --bootstrap-controller and the quorum)", file=sys.stderr)
        return 1


def _append(args: argparse.Namespace) -> int:
    return _run(_do_append(args))


def _tail(args: argparse.Namespace) -> int:
    return _run(_do_tail(args))


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="metaquorum")
    register(_parser.add_subparsers(dest="command"))
    _args = _parser.parse_args(["log", *sys.argv[1:]])
    sys.exit(_args.func(_args))
