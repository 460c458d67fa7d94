"""`metaquorum quorum --bootstrap-controller H:P describe --status | --replication`, with the
output layout of Kafka's `kafka-metadata-quorum` (reference §6.2-§6.4).

Exit codes: 0 ok; 1 the quorum could not be described (one line on stderr: what and the fix);
2 usage error (argparse).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from metaquorum.admin.client import AdminClient, AdminError, parse_bootstrap
from metaquorum.admin.describe import format_replication, format_status


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
    sub = parser.add_subparsers(dest="quorum_command", metavar="SUBCOMMAND")
    sub.required = True
    p = sub.add_parser("describe", help="describe the metadata quorum")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--status", action="store_true", help="leader, epoch, HW, voters")
    mode.add_argument("--replication", action="store_true", help="per-replica progress")
    p.set_defaults(func=_describe)


async def _run(args: argparse.Namespace) -> str:
    client = AdminClient(parse_bootstrap(args.bootstrap_controller), timeout_s=args.timeout)
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


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="metaquorum")
    register(_parser.add_subparsers(dest="command"))
    _args = _parser.parse_args(["quorum", *sys.argv[1:]])
    sys.exit(_args.func(_args))
