"""Entry point of the `metaquorum` command.

Each subcommand family lives in its own module exposing `register(subparsers)`, which adds its
parser and sets `func` (a callable taking the parsed args and returning the exit code). Exit codes:
0 ok, 1 bad input (one line on stderr naming the fix), 2 usage error (argparse).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import cast

from metaquorum import __version__

# Modules that provide subcommands, in the order `--help` lists them.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "metaquorum.cli.protocol_cmd",
    "metaquorum.cli.storage_cmd",
    "metaquorum.cli.dump_log_cmd",
    "metaquorum.cli.server_cmd",
    "metaquorum.cli.quorum_cmd",
    "metaquorum.cli.features_cmd",
    "metaquorum.cli.log_cmd",
    "metaquorum.cli.perf_test_cmd",
    "metaquorum.cli.snapshot_cmd",
    "metaquorum.cli.backup_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="metaquorum",
        description="KRaft (Kafka 4.3 compatible) quorum node, tools and codecs.",
    )
    parser.add_argument(
        "--version", action="version", version=f"metaquorum {__version__}", help="print it"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in SUBCOMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = cast(Callable[[argparse.Namespace], int], args.func)
    try:
        return func(args)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
