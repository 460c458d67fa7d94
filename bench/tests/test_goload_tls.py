"""bench/goload over TLS (bench/goload/tls.go, bench/tls.py) against a real 3-voter quorum on
mutual TLS: with the CA and the client certificate its Produce writes are committed with no
error; without a client certificate, or with a CA that did not sign the nodes' certificate,
the handshake is refused and nothing is written (so a TLS run cannot silently fall back)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.peers.ours import OursCluster, produce_frame
from bench.tls import BenchTls
from bench.workloads import goload
from tests.support.pki import Pki

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(240),
    pytest.mark.skipif(shutil.which("go") is None, reason="needs go to build bench/goload"),
]


def test_goload_writes_over_mutual_tls_and_is_refused_without_trust(tmp_path: Path) -> None:
    tls = BenchTls.create(tmp_path / "pki")
    c = OursCluster(tmp_path / "q", tls=tls)
    tpl = tmp_path / "produce.bin"
    tpl.write_bytes(produce_frame(100))
    try:
        c.start()
        eps, pids = c.endpoints_leader_first(), list(c.pids().values())

        def run(args: list[str]) -> dict[str, object]:
            return goload(
                "produce", eps, clients=2, seconds=1.5, warmup=0.5, pids=pids,
                template=tpl, extra_args=args,
            )  # fmt: skip

        ok = run(tls.goload_args())
        assert int(ok["ops"]) > 0 and ok["errors"] == 0, ok  # type: ignore[call-overload]
        stranger = Pki.create(tmp_path / "other", "other-ca")
        for args in (["-tls-ca", str(tls.ca)], ["-tls-ca", str(stranger.ca), "-tls-cert",
                     str(tls.keystore)], []):  # fmt: skip
            refused = run(args)
            assert refused["ops"] == 0 and int(refused["errors"]) > 0, (args, refused)  # type: ignore[call-overload]
        # the harness's own DescribeQuorum over TLS sees the writes committed
        leader, epoch = c.leader()
        import asyncio

        hw = asyncio.run(c.high_watermark(leader, epoch))
        assert hw is not None and hw >= int(ok["ops"])  # type: ignore[call-overload]
    finally:
        c.stop()
