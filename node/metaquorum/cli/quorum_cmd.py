"""`metaquorum quorum --bootstrap-controller H:P describe --status | --replication`, with the
output layout of Kafka's `kafka-metadata-quorum` (reference §6.2-§6.4), and (KIP-853)
`add-controller --config F` (the node that config describes: its id, controller listener and
the directory id of its formatted `metadata.log.dir`) and `remove-controller --controller-id N
--controller-directory-id U`, printed as Kafka's tool prints them.

`--command-config F` (Kafka's flag): the client's `security.protocol=SSL` and `ssl.*` settings
(net/tls.py), e.g. a client certificate for a quorum with `ssl.client.auth=required`.

Exit codes: 0 ok; 1 the quorum could not be described or changed (one line on stderr: what and
the fix); 2 usage error (argparse).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from metaquorum.admin.client import AdminClient, AdminError, parse_bootstrap
from metaquorum.admin.describe import format_replication, format_status
from metaquorum.admin.reconfig import Listener, add_controller, remove_controller
from metaquorum.net.endpoint import ConfigError
from metaquorum.net.tls import command_config_tls
from metaquorum.protocol.types import Uuid
from metaquorum.runtime.config import load_config
from metaquorum.storage.meta_properties import read_meta_properties


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "quorum", help="describe a KRaft quorum (as kafka-metadata-quorum.sh)"
    )
    parser.add_argument(
        "--bootstrap-controller",
        required=True,
        metavar="HOST:PORT[,...]",
        help="controller endpoints to bootstrap from",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="F",
        help="client properties: security.protocol=SSL and ssl.* (as Kafka's tool)",
    )
    sub = parser.add_subparsers(dest="quorum_command", metavar="SUBCOMMAND")
    sub.required = True
    p = sub.add_parser("describe", help="describe the metadata quorum")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--status", action="store_true", help="leader, epoch, HW, voters")
    mode.add_argument("--replication", action="store_true", help="per-replica progress")
    p.set_defaults(func=_describe)
    a = sub.add_parser("add-controller", help="add the controller a config describes (KIP-853)")
    a.add_argument("--config", required=True, type=Path, metavar="F", help="its server.properties")
    a.set_defaults(func=_add_controller)
    r = sub.add_parser("remove-controller", help="remove a controller (KIP-853)")
    r.add_argument("--controller-id", required=True, type=int, metavar="N")
    r.add_argument("--controller-directory-id", required=True, metavar="UUID")
    r.set_defaults(func=_remove_controller)


def _client(args: argparse.Namespace) -> AdminClient:
    """The admin client of `--bootstrap-controller` and `--command-config` (AdminError when
    the command config cannot be read or is refused)."""
    try:
        tls = command_config_tls(args.command_config) if args.command_config else None
    except ConfigError as e:
        raise AdminError(str(e)) from None
    return AdminClient(parse_bootstrap(args.bootstrap_controller), timeout_s=args.timeout, tls=tls)


async def _run(args: argparse.Namespace) -> str:
    client = _client(args)
    try:
        if args.status:
            cluster = await client.describe_cluster()
            return format_status(cluster.cluster_id, await client.describe_quorum())
        return format_replication(await client.describe_quorum())
    finally:
        await client.close()


def _describe(args: argparse.Namespace) -> int:
    try:
        out = asyncio.run(_run(args))
    except AdminError as e:
        print(
            f"metaquorum quorum describe: {e} (check --bootstrap-controller and that the "
            "quorum is running)",
            file=sys.stderr,
        )
        return 1
    sys.stdout.write(out)
    return 0


def _change(args: argparse.Namespace, what: str, change: Any) -> int:
    async def run() -> None:
        client = _client(args)
        try:
            await change(client)
        finally:
            await client.close()

    try:
        asyncio.run(run())
    except AdminError as e:
        print(f"metaquorum quorum {what}: {e}", file=sys.stderr)
        return 1
    return 0


def _add_controller(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config, environ={})
    except ConfigError as e:
        print(f"metaquorum quorum add-controller: {e}", file=sys.stderr)
        return 1
    meta = read_meta_properties(config.metadata_log_dir)
    if meta is None or meta.directory_id is None:
        print(
            f"metaquorum quorum add-controller: {config.metadata_log_dir} is not formatted "
            "(no directory.id): run `metaquorum storage format` for that node first",
            file=sys.stderr,
        )
        return 1
    directory_id = meta.directory_id
    listeners = [
        Listener(name, config.listeners[name].host, config.listeners[name].port)
        for name in config.controller_listener_names
        if name in config.listeners
    ]
    code = _change(
        args,
        "add-controller",
        lambda client: add_controller(client, config.node_id, directory_id, listeners),
    )
    if code == 0:
        endpoints = ", ".join(f"{x.name}://{x.host}:{x.port}" for x in listeners)
        print(
            f"Added controller {config.node_id} with directory id {directory_id} and "
            f"endpoints: {endpoints}"
        )
    return code


def _remove_controller(args: argparse.Namespace) -> int:
    try:
        directory_id = Uuid.from_string(args.controller_directory_id)
    except ValueError:
        print(
            "metaquorum quorum remove-controller: --controller-directory-id "
            f"{args.controller_directory_id!r} is not a Uuid (see `describe --status`)",
            file=sys.stderr,
        )
        return 1
    code = _change(
        args,
        "remove-controller",
        lambda client: remove_controller(client, args.controller_id, directory_id),
    )
    if code == 0:
        print(f"Removed KRaft controller {args.controller_id} with directory id {directory_id}")
    return code


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="metaquorum")
    register(_parser.add_subparsers(dest="command"))
    _args = _parser.parse_args(["quorum", *sys.argv[1:]])
    sys.exit(_args.func(_args))
