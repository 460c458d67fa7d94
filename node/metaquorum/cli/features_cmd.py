"""`metaquorum features --bootstrap-controller H:P describe | upgrade | downgrade`, as Kafka's
`kafka-features.sh` (org.apache.kafka.tools.FeatureCommand) with the same output lines.

`upgrade --feature kraft.version=1` upgrades a static (`controller.quorum.voters`) quorum to
kraft.version 1 (KIP-853), after which add-controller / remove-controller work on it.
Exit codes: 0 ok; 1 a feature could not be changed or the quorum not reached (the per-feature
lines on stdout, one line on stderr); 2 usage error (argparse).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from metaquorum.admin.client import AdminClient, AdminError, parse_bootstrap
from metaquorum.admin.features import (
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    describe_features,
    format_describe,
    format_update,
    update_features,
)
from metaquorum.net.endpoint import ConfigError

# Hints on stderr for Kafka's messages (stdout keeps FeatureCommand's lines unchanged).
FIXES = {
    "not all of the voters support it": (
        "every voter reports its directory id and kraft.version range to a new leader within "
        "seconds of seeing it; retry shortly, and check that every voter is running"
    ),
    "does not support this feature": "this node finalizes kraft.version only",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "features", help="describe or change feature flags (as kafka-features.sh)"
    )
    parser.add_argument(
        "--bootstrap-controller", required=True, metavar="HOST:PORT[,...]",
        help="controller endpoints to bootstrap from",
    )  # fmt: skip
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    sub = parser.add_subparsers(dest="features_command", metavar="SUBCOMMAND")
    sub.required = True
    d = sub.add_parser("describe", help="the supported and finalized features")
    d.set_defaults(func=_describe)
    for op, text in (("upgrade", "upgrade feature flags"), ("downgrade", "downgrade them")):
        p = sub.add_parser(op, help=text)
        p.add_argument(
            "--feature", action="append", required=True, metavar="NAME=LEVEL",
            help="e.g. kraft.version=1 (repeatable)",
        )  # fmt: skip
        p.add_argument("--dry-run", action="store_true", help="validate only")
        if op == "downgrade":
            p.add_argument("--unsafe", action="store_true", help="an unsafe downgrade")
        p.set_defaults(func=_update, op=op)


def _client(args: argparse.Namespace) -> AdminClient:
    return AdminClient(parse_bootstrap(args.bootstrap_controller), timeout_s=args.timeout)


def _describe(args: argparse.Namespace) -> int:
    async def run() -> str:
        client = _client(args)
        try:
            return format_describe(await describe_features(client))
        finally:
            await client.close()

    try:
        out = asyncio.run(run())
    except (AdminError, ConfigError) as e:
        print(f"metaquorum features describe: {e} (check --bootstrap-controller)", file=sys.stderr)
        return 1
    sys.stdout.write(out)
    return 0


def parse_updates(features: list[str]) -> dict[str, int]:
    """FeatureCommand.parseNameAndLevel for each NAME=LEVEL; ValueError with Kafka's text."""
    updates: dict[str, int] = {}
    for text in features:
        name, sep, level = text.partition("=")
        if not sep:
            raise ValueError(f"Can't parse feature=level string {text}: equals sign not found.")
        try:
            value = int(level.strip())
        except ValueError:
            value = -(2**16)
        if not -(2**15) <= value < 2**15:
            raise ValueError(
                f"Can't parse feature=level string {text}: unable to parse {level.strip()} "
                "as a short."
            )
        if name.strip() in updates:
            raise ValueError(f"Feature {name.strip()} was specified more than once.")
        updates[name.strip()] = value
    return updates


def _update(args: argparse.Namespace) -> int:
    try:
        updates = parse_updates(args.feature)
    except ValueError as e:
        print(f"metaquorum features {args.op}: {e}", file=sys.stderr)
        return 1
    kind = UPGRADE
    if args.op == "downgrade":
        kind = UNSAFE_DOWNGRADE if args.unsafe else SAFE_DOWNGRADE

    async def run() -> dict[str, str | None]:
        client = _client(args)
        try:
            return await update_features(client, updates, kind, args.dry_run)
        finally:
            await client.close()

    try:
        outcome = asyncio.run(run())
    except (AdminError, ConfigError) as e:
        print(
            f"metaquorum features {args.op}: {e} (check --bootstrap-controller and that the "
            "quorum is running)",
            file=sys.stderr,
        )
        return 1
    out, failures = format_update(args.op, updates, outcome, args.dry_run)
    sys.stdout.write(out)
    if failures:
        print(f"{failures} out of {len(updates)} operation(s) failed.", file=sys.stderr)
        for error in {e for e in outcome.values() if e is not None}:
            for needle, fix in FIXES.items():
                if needle in error:
                    print(f"metaquorum features {args.op}: {fix}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="metaquorum")
    register(_parser.add_subparsers(dest="command"))
    _args = _parser.parse_args(["features", *sys.argv[1:]])
    sys.exit(_args.func(_args))
