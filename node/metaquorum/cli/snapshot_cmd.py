"""`metaquorum snapshot create --http HOST:PORT`: ask a running node to snapshot its state
machine now (KIP-630: a snapshot at the applied, committed offset; the log may then be cleaned
below it).

Role: the client side of the node's `POST /snapshot` on its HTTP listener
(`metaquorum.http.listener`, served by `metaquorum.http.app`). On 200 it prints the snapshot id
as Kafka names the file, `<20-digit end offset>-<10-digit epoch>` (`%020d-%010d.checkpoint`
without the suffix), then the end offset and epoch, and exits 0. Everything else is one line on
stderr naming the fix, exit 1: nothing new committed since the last snapshot (409), a node that
did not finish the snapshot in time, an unreachable listener, a bad HOST:PORT.
Invariants: one request, no retry (a retried POST could snapshot twice; harmless, but the
answer would not be the snapshot this call made).
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
from pathlib import Path
from typing import Any

import aiohttp

from metaquorum.net.endpoint import ConfigError, parse_endpoint
from metaquorum.net.tls import command_config_tls
from metaquorum.storage.snapshots import OffsetAndEpoch, snapshot_file_name

PROG = "metaquorum snapshot create"


class SnapshotError(Exception):
    """One line for stderr: what went wrong and the fix."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("snapshot", help="snapshots of a running node")
    sub = parser.add_subparsers(dest="snapshot_command", metavar="SUBCOMMAND")
    sub.required = True
    p = sub.add_parser("create", help="snapshot the node's state machine now; print its id")
    p.add_argument(
        "--http",
        required=True,
        metavar="HOST:PORT",
        help="the node's HTTP listener (its metaquorum.http.listener)",
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    p.add_argument(
        "--command-config",
        type=Path,
        metavar="F",
        help="security.protocol=SSL and ssl.truststore.*: HTTPS (metaquorum.http.ssl.enable)",
    )
    p.set_defaults(func=_create)


async def create_snapshot(
    host: str, port: int, timeout_s: float, tls: ssl.SSLContext | None = None
) -> OffsetAndEpoch:
    """POST /snapshot to the node (HTTPS with `tls`); the snapshot id it wrote, or
    SnapshotError."""
    scheme = "http" if tls is None else "https"
    url = f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}/snapshot"
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, ssl=tls if tls is not None else True) as response,
        ):
            status = response.status
            body = await response.json(content_type=None) if status in (200, 403, 409) else None
    except (aiohttp.ClientError, TimeoutError) as e:
        raise SnapshotError(
            f"cannot reach {url} ({type(e).__name__}): check --http names the node's "
            "metaquorum.http.listener and that the node runs"
        ) from None
    except ValueError:
        raise SnapshotError(f"{url} answered something that is not JSON: is it a node?") from None
    if status == 409:
        raise SnapshotError(
            "nothing new committed since the last snapshot: append records first "
            "(metaquorum log append) and retry"
        )
    if status == 403:
        raise SnapshotError(
            f"{url} refused: POST /snapshot is off on that node: set "
            "metaquorum.http.snapshot.enable=true in its config and restart it"
        )
    if status == 404:
        raise SnapshotError(f"{url} has no snapshot endpoint: point --http at a metaquorum node")
    if status != 200 or not isinstance(body, dict):
        raise SnapshotError(f"{url} answered HTTP {status}: check the node's log")
    try:
        return OffsetAndEpoch(int(body["end_offset"]), int(body["epoch"]))
    except (KeyError, TypeError, ValueError):
        raise SnapshotError(f"{url} answered {body!r}, not a snapshot id") from None


def _create(args: argparse.Namespace) -> int:
    try:
        endpoint = parse_endpoint(args.http, "--http")
        if args.timeout <= 0:
            raise SnapshotError("--timeout must be > 0 seconds")
        provider = command_config_tls(args.command_config) if args.command_config else None
        tls = provider() if provider is not None else None
        snapshot_id = asyncio.run(create_snapshot(endpoint.host, endpoint.port, args.timeout, tls))
    except ConfigError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except SnapshotError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    name = snapshot_file_name(snapshot_id).removesuffix(".checkpoint")
    print(f"{name} end offset {snapshot_id.offset} epoch {snapshot_id.epoch}")
    return 0
