"""`metaquorum snapshot create --http H:P` against the node's real HTTP app (`http.app`) with a
stand-in driver: the id printed on success, one line and exit 1 otherwise."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import web
from metaquorum.cli.main import main
from metaquorum.http.app import build_app


class FakeDriver:
    def __init__(self) -> None:
        self.answers: list[tuple[int, int] | None] = []
        self.calls = 0

    async def snapshot_now(self) -> tuple[int, int] | None:
        self.calls += 1
        return self.answers.pop(0)


@pytest.fixture
def node_http() -> Iterator[tuple[int, FakeDriver]]:
    driver = FakeDriver()
    runtime: Any = SimpleNamespace(driver=driver)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: dict[str, Any] = {}

    async def start() -> None:
        runner = web.AppRunner(build_app(runtime, snapshot_enabled=True), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        holder["runner"] = runner
        holder["port"] = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        started.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    started.wait(10)
    try:
        yield holder["port"], driver
    finally:
        asyncio.run_coroutine_threadsafe(holder["runner"].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_create_prints_the_snapshot_id(
    node_http: tuple[int, FakeDriver], capsys: pytest.CaptureFixture[str]
) -> None:
    port, driver = node_http
    driver.answers.append((1234, 7))
    assert main(["snapshot", "create", "--http", f"127.0.0.1:{port}"]) == 0
    out = capsys.readouterr().out.split()
    # Kafka's snapshot file stem: %020d-%010d (end offset, epoch).
    assert out[0] == "00000000000000001234-0000000007"
    assert out[1:] == ["end", "offset", "1234", "epoch", "7"]
    assert driver.calls == 1


def test_nothing_new_committed_is_one_line_and_exit_1(
    node_http: tuple[int, FakeDriver], capsys: pytest.CaptureFixture[str]
) -> None:
    port, driver = node_http
    driver.answers.append(None)
    assert main(["snapshot", "create", "--http", f"127.0.0.1:{port}"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing new committed" in err and "append" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("http", "fix"),
    [
        ("nohostport", "is not host:port"),
        ("127.0.0.1:0", "is not host:port"),
        ("127.0.0.1:FREE", "check --http"),
    ],
)
def test_bad_or_unreachable_listener(
    http: str, fix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    http = http.replace("FREE", str(_free_port()))
    assert main(["snapshot", "create", "--http", http, "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("metaquorum snapshot create: ") and fix in err


async def test_snapshot_endpoint_is_off_unless_configured() -> None:
    from metaquorum.cli.snapshot_cmd import SnapshotError, create_snapshot

    driver = FakeDriver()
    runner = web.AppRunner(build_app(SimpleNamespace(driver=driver)), access_log=None)  # type: ignore[arg-type]
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        with pytest.raises(SnapshotError, match=r"metaquorum\.http\.snapshot\.enable=true"):
            await create_snapshot("127.0.0.1", port, 5)
        assert driver.calls == 0  # refused before the driver is asked
    finally:
        await runner.cleanup()


async def test_snapshot_over_https_with_the_listener_certificate(tmp_path: Path) -> None:
    """`metaquorum.http.ssl.enable`: the HTTP listener serves HTTPS with the controller
    listener's certificate and no client certificate; `snapshot create --command-config`."""
    from metaquorum.cli.snapshot_cmd import SnapshotError, create_snapshot
    from metaquorum.http.app import start_http
    from metaquorum.net.tls import TlsContexts, command_config_tls
    from metaquorum.runtime.config import config_from_properties

    from tests.support.pki import Pki, client_props, ssl_props

    pki = Pki.create(tmp_path / "pki")
    config = config_from_properties(
        {
            "node.id": "1",
            "process.roles": "controller",
            "controller.listener.names": "CONTROLLER",
            "listeners": "CONTROLLER://127.0.0.1:9093",
            "controller.quorum.voters": "1@127.0.0.1:9093",
            "metadata.log.dir": str(tmp_path / "d"),
            "metaquorum.http.ssl.enable": "true",
            **ssl_props(pki.issue("node"), pki.ca),
        }
    )
    assert config.http_tls is not None and config.http_tls.client_auth == "none"
    driver = FakeDriver()
    driver.answers.append((10, 2))
    port = _free_port()
    runner = await start_http(
        SimpleNamespace(driver=driver),  # type: ignore[arg-type]
        "127.0.0.1",
        port,
        snapshot_enabled=True,
        tls=TlsContexts(config.http_tls).server(),
    )
    try:
        with pytest.raises(SnapshotError):  # plain HTTP to an HTTPS listener
            await create_snapshot("127.0.0.1", port, 5)
        f = tmp_path / "client.properties"
        f.write_text(client_props(pki.ca))  # a CA, no client certificate
        provider = command_config_tls(f)
        assert provider is not None
        got = await create_snapshot("127.0.0.1", port, 5, provider())
        assert (got.offset, got.epoch) == (10, 2)
    finally:
        await runner.cleanup()


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port
