"""Exit codes and one-line messages a shell script can rely on (`metaquorum server start`,
`metaquorum quorum`, `metaquorum log`)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "metaquorum.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def test_server_start_bad_config_is_one_line_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "server.properties"
    cfg.write_text("process.roles=controller\n")
    r = _run("server", "start", "--config", str(cfg))
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "node.id" in r.stderr


def test_server_start_unformatted_dir_names_storage_format(tmp_path: Path) -> None:
    port = _closed_port()
    cfg = tmp_path / "server.properties"
    cfg.write_text(
        "node.id=1\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.quorum.voters=1@127.0.0.1:{port}\nmetadata.log.dir={tmp_path / 'data'}\n"
    )
    r = _run("server", "start", "--config", str(cfg))
    assert r.returncode == 1
    assert "metaquorum storage format" in r.stderr and r.stderr.count("\n") == 1


def test_quorum_describe_unreachable_exits_1_with_one_line() -> None:
    addr = f"127.0.0.1:{_closed_port()}"
    r = _run("quorum", "--bootstrap-controller", addr, "--timeout", "0.5", "describe", "--status")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "--bootstrap-controller" in r.stderr


def test_usage_errors_exit_2() -> None:
    assert _run("quorum", "--bootstrap-controller", "h:1", "describe").returncode == 2
    assert _run("log", "--bootstrap-controller", "h:1", "tail", "--from", "x").returncode == 2
    r = _run("log", "--bootstrap-controller", "nohostport", "append", "v")
    assert r.returncode == 1 and "host:port" in r.stderr


def test_version_names_the_package_version() -> None:
    """`metaquorum --version` (what `make images`' archives are checked with): the installed
    distribution's version, exit 0."""
    from importlib.metadata import version

    r = _run("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"metaquorum {version('metaquorum')}\n"
