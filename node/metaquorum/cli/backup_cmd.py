"""`metaquorum backup create | list | verify | restore` (issue 31; docs/backup.md).

    metaquorum backup create --bootstrap-controller H:P[,...] [--command-config F] --to URL
    metaquorum backup list URL
    metaquorum backup verify URL/NAME
    metaquorum backup prune URL --keep N [--max-age D]
    metaquorum backup restore URL/NAME (--config F | --data-dir D --node-id N --endpoint E)
                              [--directory-id U] [--cluster-id ID]

URL: a directory (a path or file:///path) or s3://bucket[/prefix] (credentials and endpoint
from the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or AWS_SHARED_CREDENTIALS_FILE,
AWS_ENDPOINT_URL, AWS_REGION; never printed). Made to run as a Kubernetes Job: one command,
settings from flags and env, one line on stdout on success, one line on stderr on failure.

`create` also writes its result as one line of JSON (name, offsets, size, seconds) to the
Kubernetes termination-message file (`$METAQUORUM_TERMINATION_LOG`, default
/dev/termination-log) when that file exists and is writable, so the operator reads it from the
Job's pod status without reading logs.

Exit codes: 0 ok; 1 refused or failed (one line on stderr naming the fix); 2 usage (argparse).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metaquorum.admin.client import AdminClient, AdminError, parse_bootstrap
from metaquorum.backup.create import DEFAULT_OBSERVER_ID, BackupOptions, create_backup
from metaquorum.backup.destinations import open_destination, split_backup_url
from metaquorum.backup.manifest import BackupError, Manifest
from metaquorum.backup.prune import Policy, parse_duration, prune
from metaquorum.backup.reform import ListenerAddress
from metaquorum.backup.restore import restore_backup
from metaquorum.backup.verify import read_manifest, verify_backup
from metaquorum.net.endpoint import ConfigError
from metaquorum.net.tls import command_config_tls
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.types import Uuid
from metaquorum.runtime.config import env_overrides
from metaquorum.storage.formatter import FormatterError, ServerConfig


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("backup", help="back up, list, verify and restore the log")
    sub = parser.add_subparsers(dest="backup_command", metavar="SUBCOMMAND")
    sub.required = True

    p = sub.add_parser("create", help="take a backup of a live quorum through the wire")
    p.add_argument("--bootstrap-controller", required=True, metavar="HOST:PORT[,...]")
    p.add_argument("--command-config", type=Path, metavar="F", help="client TLS settings")
    p.add_argument("--to", required=True, metavar="URL", help="a directory or s3://bucket/prefix")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per step (default 60)")
    p.add_argument(
        "--observer-id",
        type=int,
        default=DEFAULT_OBSERVER_ID,
        help=f"the replica id the backup fetches as (default {DEFAULT_OBSERVER_ID})",
    )
    p.set_defaults(func=_create)

    p = sub.add_parser("list", help="list the complete backups at URL")
    p.add_argument("url", metavar="URL")
    p.set_defaults(func=_list)

    p = sub.add_parser("verify", help="check a backup's checksums and decode every file")
    p.add_argument("backup", metavar="URL/NAME")
    p.set_defaults(func=_verify)

    p = sub.add_parser("prune", help="drop the complete backups beyond a retention policy")
    p.add_argument("url", metavar="URL")
    p.add_argument("--keep", type=int, required=True, metavar="N", help="keep the newest N")
    p.add_argument("--max-age", metavar="D", help="also drop those older than D (30d, 12h, ...)")
    p.set_defaults(func=_prune)

    p = sub.add_parser("restore", help="format a new metadata log dir from a backup")
    p.add_argument("backup", metavar="URL/NAME")
    p.add_argument("--config", "-c", type=Path, help="server.properties of the node to restore")
    p.add_argument("--data-dir", type=Path, help="the metadata log dir (without --config)")
    p.add_argument("--node-id", type=int, help="this node's id (without --config)")
    p.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="NAME://HOST:PORT",
        help="this node's controller endpoint (without --config; repeatable)",
    )
    p.add_argument("--directory-id", help="this replica's new directory id (default: random)")
    p.add_argument("--cluster-id", help="refuse a backup of any other cluster id")
    p.set_defaults(func=_restore)


def _fail(command: str, message: object) -> int:
    print(f"metaquorum backup {command}: {message}", file=sys.stderr)
    return 1


TERMINATION_LOG = "/dev/termination-log"


def write_termination_summary(m: Manifest, url: str, seconds: float) -> bool:
    """One line of JSON for the operator (the pod's termination message, at most 4096 bytes);
    only into a file that exists and is writable (Kubernetes mounts it in every container).
    Whether it was written."""
    path = Path(os.environ.get("METAQUORUM_TERMINATION_LOG") or TERMINATION_LOG)
    if not path.is_file() or not os.access(path, os.W_OK):
        return False
    summary = {
        "name": m.name,
        "url": f"{url.rstrip('/')}/{m.name}",
        "clusterId": m.cluster_id,
        "startOffset": m.start_offset,
        "endOffset": m.end_offset,
        "endEpoch": m.end_epoch,
        "sizeBytes": m.size,
        "files": len(m.files),
        "createdMs": m.created_ms,
        "durationSeconds": round(seconds, 3),
    }
    try:
        path.write_text(json.dumps(summary, sort_keys=True) + "\n", encoding="utf-8")
    except OSError:
        return False
    return True


def _create(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        tls = command_config_tls(args.command_config) if args.command_config else None
        admin = AdminClient(
            parse_bootstrap(args.bootstrap_controller), timeout_s=args.timeout, tls=tls
        )
        dest = open_destination(args.to)
        dest.names()  # a destination that does not exist or refuses us fails before any read

        async def run() -> Any:
            try:
                return await create_backup(
                    admin, dest, BackupOptions(observer_id=args.observer_id, timeout_s=args.timeout)
                )
            finally:
                await admin.close()

        m = asyncio.run(run())
    except (BackupError, AdminError, ConfigError, ProtocolError) as e:
        return _fail("create", e)
    write_termination_summary(m, args.to, time.monotonic() - started)
    print(
        f"backup {m.name}: cluster {m.cluster_id}, offsets [{m.start_offset}, {m.end_offset}) "
        f"epoch {m.end_epoch}, {len(m.files)} files, {m.size} bytes, "
        f"at {args.to.rstrip('/')}/{m.name}"
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    try:
        dest = open_destination(args.url)
        names = dest.names()
        rows = [read_manifest(dest, n) for n in names]
    except BackupError as e:
        return _fail("list", e)
    for m in rows:
        print(f"{m.name}\tcluster {m.cluster_id}\tend offset {m.end_offset}\t{m.size} bytes")
    return 0


def _prune(args: argparse.Namespace) -> int:
    try:
        max_age = parse_duration(args.max_age) if args.max_age else None
        dest = open_destination(args.url)
        dropped = prune(dest, Policy(args.keep, max_age), datetime.now(UTC))
    except BackupError as e:
        return _fail("prune", e)
    kept = f"keep {args.keep}" + (f", max age {args.max_age}" if args.max_age else "")
    listed = ", ".join(dropped) if dropped else "none"
    print(f"pruned {len(dropped)} backups at {args.url} ({kept}): {listed}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    try:
        url, name = split_backup_url(args.backup)
        dest = open_destination(url)
        with tempfile.TemporaryDirectory(prefix="metaquorum-verify-") as tmp:
            r = verify_backup(dest, name, Path(tmp))
    except BackupError as e:
        return _fail("verify", e)
    m = r.manifest
    print(
        f"backup {name} ok: offsets [{m.start_offset}, {m.end_offset}), {r.records} data "
        f"records in segments, {r.files} files, checksums match"
    )
    return 0


def _restore_target(args: argparse.Namespace) -> tuple[Path, int, list[ListenerAddress]]:
    if args.config is not None:
        config = ServerConfig.load(args.config, env_overrides(os.environ))
        voter = config.standalone_voter(Uuid.ZERO)
        name = config.controller_listener_names[0]
        return (
            config.metadata_log_dir,
            config.node_id,
            [ListenerAddress(name, voter.host, voter.port)],
        )
    if args.data_dir is None or args.node_id is None or not args.endpoint:
        raise BackupError("give --config F, or all of --data-dir, --node-id and --endpoint")
    try:
        endpoints = [ListenerAddress.parse(e) for e in args.endpoint]
    except ValueError as e:
        raise BackupError(str(e)) from None
    return args.data_dir, args.node_id, endpoints


def _restore(args: argparse.Namespace) -> int:
    try:
        url, name = split_backup_url(args.backup)
        log_dir, node_id, endpoints = _restore_target(args)
        directory_id = Uuid.from_string(args.directory_id) if args.directory_id else None
        r = restore_backup(
            open_destination(url),
            name,
            log_dir,
            node_id=node_id,
            endpoints=endpoints,
            directory_id=directory_id,
            expect_cluster_id=args.cluster_id,
        )
    except (BackupError, FormatterError, ProtocolError) as e:
        return _fail("restore", e)
    except ValueError as e:
        return _fail("restore", f"bad --directory-id: {e}")
    m = r.report.manifest
    print(
        f"restored {name} into {log_dir}: cluster {m.cluster_id}, records [{m.start_offset}, "
        f"{m.end_offset}), node {node_id} (directory.id {r.directory_id}) the only voter from "
        f"offset {r.reform.voters_offset}, epoch {r.reform.epoch}"
    )
    return 0
