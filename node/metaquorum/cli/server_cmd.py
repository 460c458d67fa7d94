"""`metaquorum server start --config F`: run one KRaft controller node until SIGTERM/SIGINT.

Exit codes: 0 clean stop, 1 bad configuration or storage (one line on stderr naming the fix).
Structured logs (one JSON object per line) go to stderr; `--log-level` sets the threshold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from metaquorum.net.endpoint import ConfigError
from metaquorum.protocol.errors import ProtocolError
from metaquorum.runtime.config import load_config


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("server", help="run a KRaft controller node")
    sub = parser.add_subparsers(dest="server_command", metavar="SUBCOMMAND")
    sub.required = True
    p = sub.add_parser("start", help="start a node from a server.properties file")
    p.add_argument("--config", "-c", type=Path, required=True, help="server.properties")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.set_defaults(func=_start)


def _start(args: argparse.Namespace) -> int:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=args.log_level, handlers=[handler], force=True)
    try:
        config = load_config(args.config)
    except ConfigError as e:
        print(f"metaquorum server start: {e}", file=sys.stderr)
        return 1
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    try:
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is a node extra
        pass
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(_main(config))
    except (ProtocolError, ConfigError, OSError) as e:
        print(f"metaquorum server start: {e}", file=sys.stderr)
        return 1


async def _main(config: Any) -> int:
    from metaquorum.http.app import start_configured_http
    from metaquorum.runtime.node import NodeRuntime, serve

    runtime = NodeRuntime(config)
    http = await start_configured_http(runtime)
    try:
        return await serve(runtime)
    finally:
        if http is not None:
            await http.cleanup()


if __name__ == "__main__":
    # `python -m metaquorum.cli.server_cmd start --config F`: this subcommand alone.
    _parser = argparse.ArgumentParser(prog="metaquorum")
    register(_parser.add_subparsers(dest="command"))
    _args = _parser.parse_args(["server", *sys.argv[1:]])
    sys.exit(_args.func(_args))
