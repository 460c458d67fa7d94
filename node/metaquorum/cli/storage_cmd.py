"""`metaquorum storage`: random-uuid, format and info, as Kafka's `kafka-storage.sh` (reference
§6.5; KIP-853 bootstrap of a dynamic quorum).

Exit codes: 0 ok, 1 bad input or a refused format (one line on stderr naming the fix). A config
whose controller listener security settings the node would refuse (SASL, a JKS keystore, an
unknown protocol, a listener missing from `listener.security.protocol.map`: net/tls.py) is
refused here too, before anything is written.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from metaquorum.backup.manifest import BackupError
from metaquorum.backup.recover import recover_data_dir
from metaquorum.backup.reform import ListenerAddress
from metaquorum.net.endpoint import ConfigError
from metaquorum.net.tls_settings import server_tls_settings
from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.types import Uuid
from metaquorum.runtime.config import env_overrides
from metaquorum.storage.formatter import (
    FormatterError,
    ServerConfig,
    format_storage,
    parse_initial_controllers,
)
from metaquorum.storage.meta_properties import parse_properties, read_meta_properties


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "storage", help="format a metadata log directory (as kafka-storage.sh)"
    )
    sub = parser.add_subparsers(dest="storage_command", metavar="SUBCOMMAND")
    sub.required = True

    p = sub.add_parser("random-uuid", help="print a random Uuid (for --cluster-id)")
    p.set_defaults(func=_random_uuid)

    p = sub.add_parser("format", help="write meta.properties and the bootstrap voters checkpoint")
    p.add_argument("--config", "-c", type=Path, required=True, help="server.properties file")
    p.add_argument("--cluster-id", "-t", required=True, help="from `storage random-uuid`")
    p.add_argument("--ignore-formatted", "-g", action="store_true")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--standalone", "-s", action="store_true", help="this node is the only voter")
    mode.add_argument(
        "--initial-controllers", "-I", metavar="LIST", help="id@host:port:directoryId,..."
    )
    mode.add_argument("--no-initial-controllers", "-N", action="store_true")
    p.set_defaults(func=_format)

    p = sub.add_parser(
        "recover", help="re-form a quorum that lost its majority around this survivor (unsafe)"
    )
    p.add_argument("--data-dir", type=Path, required=True, help="the survivor's metadata.log.dir")
    p.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="NAME://HOST:PORT",
        help="its controller endpoint, if its latest voter set does not name it",
    )
    p.set_defaults(func=_recover)

    p = sub.add_parser("info", help="print each log dir's meta.properties")
    p.add_argument("--config", "-c", type=Path, required=True)
    p.set_defaults(func=_info)


def _check_security(path: Path) -> None:
    """The node's start-up refusals of its listener's security settings (files not loaded:
    certificates may be mounted only where the node runs)."""
    try:
        props = parse_properties(path.read_text(encoding="utf-8"))
    except OSError:
        return  # ServerConfig.load reports it
    props.update(env_overrides(os.environ))
    names = [n.strip() for n in props.get("controller.listener.names", "").split(",") if n.strip()]
    if names:
        try:
            server_tls_settings(props, names[0])
        except ConfigError as e:
            raise FormatterError(str(e)) from None


def _random_uuid(args: argparse.Namespace) -> int:
    print(Uuid.random())
    return 0


def _format(args: argparse.Namespace) -> int:
    try:
        # The same METAQUORUM_<KEY> overrides `server start` applies, so a pod formats the
        # directory it will run on.
        config = ServerConfig.load(args.config, env_overrides(os.environ))
        _check_security(args.config)
        initial = (
            parse_initial_controllers(args.initial_controllers)
            if args.initial_controllers is not None
            else None
        )
        result = format_storage(
            config,
            args.cluster_id,
            standalone=args.standalone,
            initial_controllers=initial,
            no_initial_controllers=args.no_initial_controllers,
            ignore_formatted=args.ignore_formatted,
        )
    except (FormatterError, ProtocolError) as e:
        print(f"metaquorum storage format: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"metaquorum storage format: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    if not result.formatted:
        print("All of the log directories are already formatted.")
    for d in result.formatted:
        kind = "metadata" if d == config.metadata_log_dir else "data"
        print(f"Formatting {kind} directory {d} (directory.id {result.directory_ids[d]}).")
    if result.checkpoint is not None:
        print(f"Wrote the initial voters to {result.checkpoint}.")
    return 0


def _recover(args: argparse.Namespace) -> int:
    try:
        endpoints = [ListenerAddress.parse(e) for e in args.endpoint]
        r = recover_data_dir(args.data_dir, endpoints=endpoints)
    except (BackupError, ValueError) as e:
        print(f"metaquorum storage recover: {e}", file=sys.stderr)
        return 1
    f = r.reform
    cut = f"; cut a torn tail of {r.cut_bytes} bytes" if r.cut_bytes else ""
    print(
        f"recovered {args.data_dir}: kept offsets [{f.start_offset}, {f.end_offset}){cut}; "
        f"node {r.node_id} is the only voter from offset {f.voters_offset}, epoch {f.epoch}; "
        "start it, then add the other controllers back one at a time"
    )
    return 0


def _info(args: argparse.Namespace) -> int:
    try:
        # The same METAQUORUM_<KEY> overrides `server start` applies, so a pod formats the
        # directory it will run on.
        config = ServerConfig.load(args.config, env_overrides(os.environ))
        _check_security(args.config)
        for d in config.all_dirs:
            meta = read_meta_properties(d)
            if meta is None:
                print(f"{d}: not formatted")
            else:
                print(f"{d}: {meta.to_properties()}")
    except (FormatterError, ProtocolError) as e:
        print(f"metaquorum storage info: {e}", file=sys.stderr)
        return 1
    return 0
