"""Backups on real processes (marker `integration`): a 3-node quorum under a client that keeps
appending, a backup taken meanwhile to a real S3 server on loopback (SeaweedFS,
tests/integration/s3_server.py), verified, restored into a new data dir, and a node started on
it holds every acknowledged record below the backup's end offset and none after it; Kafka's
DumpLogSegments reads the backed-up and the restored files; a flipped byte in the manifest, the
snapshot or a segment is refused by verify and by restore; bad destinations and credentials get
one line. And `storage recover` on a survivor of a quorum that lost two of three voters."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from metaquorum.admin.log_client import LogClient
from metaquorum.backup.manifest import MANIFEST, Manifest
from metaquorum.net.endpoint import Endpoint
from metaquorum.runtime.local_quorum import LocalQuorum

from tests.integration.quorum_fixture import wait_for
from tests.integration.s3_server import ADMIN, BUCKET, ROOT, STRANGER, S3Server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

EXTRA = {
    "metadata.log.max.record.bytes.between.snapshots": "3000",
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.fetch.timeout.ms": "1000",
}


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = S3Server(tmp_path_factory.mktemp("s3"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "metaquorum.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )


def _digest(data: dict[bytes, bytes]) -> str:
    h = hashlib.sha256()
    for k, v in sorted(data.items()):
        h.update(len(k).to_bytes(4, "big") + k + len(v).to_bytes(4, "big") + v)
    return h.hexdigest()[:16]


class Appender(threading.Thread):
    """Appends `k<i>=v<i>` one record at a time; `acked[i]` = its offset once committed."""

    def __init__(self, q: LocalQuorum) -> None:
        super().__init__(daemon=True)
        self.q = q
        self.acked: dict[int, int] = {}
        self.error: Exception | None = None
        self.stopping = threading.Event()

    def run(self) -> None:
        async def go() -> None:
            c = LogClient([Endpoint("127.0.0.1", n.port) for n in self.q.nodes.values()])
            try:
                i = 0
                while not self.stopping.is_set():
                    self.acked[i] = await c.append([b"k%d=v%d" % (i, i)])
                    i += 1
            finally:
                await c.close()

        try:
            asyncio.run(go())
        except Exception as e:
            self.error = e


def _kafka_dump_all_valid(files: list[Path]) -> int:
    from tests.conformance.conftest import run_kafka_class

    if shutil.which("java") is None:
        pytest.fail("java is not installed: the backup test runs Kafka's DumpLogSegments")
    lib = (
        subprocess.run(
            [str(ROOT / "scripts" / "kafka-jars.sh")], check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    args = ["--deep-iteration", "--files", ",".join(map(str, files))]
    out = run_kafka_class(f"{lib}/*", "org.apache.kafka.tools.DumpLogSegments", args).stdout
    batches = [x for x in out.splitlines() if x.startswith("baseOffset:")]
    assert batches and all(x.endswith("isvalid: true") for x in batches), out[-2000:]
    assert "invalid bytes" not in out
    return len(batches)


@dataclass
class Store:
    """Where the test's backups go, and raw access to their bytes (to read and damage them)."""

    url: str
    env: dict[str, str]
    get: Callable[[str], bytes]
    put: Callable[[str, bytes], None]


def s3_store(s3: S3Server, prefix: str) -> Store:
    c = s3.client()

    def get(key: str) -> bytes:
        return c.get_object(Bucket=BUCKET, Key=f"{prefix}/{key}")["Body"].read()  # type: ignore[attr-defined,no-any-return]

    def put(key: str, data: bytes) -> None:
        c.put_object(Bucket=BUCKET, Key=f"{prefix}/{key}", Body=data)  # type: ignore[attr-defined]

    return Store(f"s3://{BUCKET}/{prefix}", s3.env(), get, put)


def test_backup_while_appending_verify_restore_and_corruption(tmp_path: Path, s3: S3Server) -> None:
    roundtrip(tmp_path, s3_store(s3, "q1"))


def _leader_log_start(q: LocalQuorum) -> int:
    lead = q.leader()
    status = q.nodes[lead[0]].status() if lead is not None else None
    return int((status or {}).get("log_start_offset") or 0)


def roundtrip(tmp_path: Path, store: Store) -> None:
    q = LocalQuorum(tmp_path / "q", 3, extra=EXTRA, dynamic=True)
    q.write_configs()
    q.format()
    q.start_all()
    app = Appender(q)
    try:
        q.wait_for_leader(30)
        app.start()
        wait_for(lambda: len(app.acked) >= 150 or app.error is not None, 60, "150 appends")
        # the round trip covers a snapshot + segments: a backup takes the leader's snapshot only
        # once its log starts past 0 (on a loaded machine 150 appends can come before that)
        wait_for(lambda: _leader_log_start(q) > 0 or app.error is not None, 120, "a snapshot")
        # a backup taken just as the leader snapshots at its high watermark holds the snapshot
        # alone ([n, n)): take another a moment later, so segments are covered too
        for _ in range(3):
            started = time.monotonic()
            r = cli(
                "backup",
                "create",
                "--bootstrap-controller",
                ",".join(n.address for n in q.nodes.values()),
                "--to",
                store.url,
                env=store.env,
            )
            took = time.monotonic() - started
            assert r.returncode == 0, r.stderr
            assert len(r.stdout.splitlines()) == 1 and ADMIN[1] not in r.stdout + r.stderr
            name = r.stdout.split()[1].rstrip(":")
            manifest = Manifest.parse(store.get(f"{name}/{MANIFEST}"), name)  # type: ignore[attr-defined]
            if manifest.start_offset < manifest.end_offset:
                break
            time.sleep(1)
        during = len(app.acked)
        wait_for(lambda: len(app.acked) >= during + 60 or app.error is not None, 60, "more appends")
    finally:
        app.stopping.set()
        app.join(30)
        q.stop_all()
    assert app.error is None, app.error
    assert manifest.start_offset < manifest.end_offset, "three backups held no segments"
    end = manifest.end_offset
    before = {i for i, off in app.acked.items() if off < end}
    after = {i for i, off in app.acked.items() if off >= end}
    print(
        f"backup {name}: [{manifest.start_offset}, {end}) in {took:.1f}s; "
        f"{len(before)} acked records before, {len(after)} after"
    )
    assert manifest.cluster_id == q.cluster_id and manifest.snapshot is not None
    assert len(before) >= 150 and len(after) >= 50  # taken while the client appended

    r = cli("backup", "verify", f"{store.url}/{name}", env=store.env)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
    r = cli("backup", "list", store.url, env=store.env)
    assert r.returncode == 0 and r.stdout.split()[0] == name, r.stderr

    # restore into a new data dir; a one-node quorum starts on it
    q2 = LocalQuorum(tmp_path / "r", 1, standalone=True)
    q2.write_configs()
    r = cli(
        "backup",
        "restore",
        f"{store.url}/{name}",
        "--config",
        str(q2.nodes[1].config_path),
        "--cluster-id",
        q.cluster_id,
        env=store.env,
    )
    assert r.returncode == 0, r.stderr
    q2.start(1)
    try:
        q2.wait_for_leader(30)
        expected = {b"k%d" % i: b"v%d" % i for i in before}
        node = q2.nodes[1]
        wait_for(
            lambda: (
                ((node.status() or {}).get("state_machine") or {}).get("applied_offset", 0) > end
            ),
            30,
            "restored node applies the backup",
        )
        sm = (node.status() or {})["state_machine"]
        assert sm["keys"] == len(expected) and sm["digest"] == _digest(expected)

        async def tail() -> list[int]:
            c = LogClient([Endpoint("127.0.0.1", node.port)])
            try:
                out: list[int] = []
                offset, hw = manifest.start_offset, manifest.start_offset + 1
                while offset < hw:
                    recs, offset, hw = await c.read(offset)
                    out += [x.offset for x in recs]
                return out
            finally:
                await c.close()

        offsets = asyncio.run(tail())
        assert offsets and max(offsets) < end  # nothing after the backup's end offset
    finally:
        q2.stop_all()

    # Kafka's DumpLogSegments reads the backed-up files and the restored ones
    got = tmp_path / "got"
    got.mkdir()
    for f in manifest.files:
        (got / f.name).write_bytes(store.get(f"{name}/{f.name}"))
    part = q2.nodes[1].directory / "__cluster_metadata-0"
    files = (
        [got / f.name for f in manifest.files]
        + sorted(part.glob("*.log"))
        + sorted(part.glob("*.checkpoint"))
    )
    assert _kafka_dump_all_valid(files) > 2 * len(manifest.segments)

    # a flipped byte in each kind of file: verify and restore refuse, nothing is written
    for kind, file in (
        ("manifest", MANIFEST),
        ("snapshot", manifest.snapshot.name),
        ("segment", manifest.segments[-1].name),
    ):  # type: ignore[union-attr]
        key = f"{name}/{file}"
        good = store.get(key)
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0x10
        store.put(key, bytes(bad))
        try:
            r = cli("backup", "verify", f"{store.url}/{name}", env=store.env)
            assert (
                r.returncode == 1 and "damaged" in r.stderr and len(r.stderr.splitlines()) == 1
            ), (kind, r.stderr)
            target = tmp_path / f"restore-{kind}"
            r = cli(
                "backup",
                "restore",
                f"{store.url}/{name}",
                "--data-dir",
                str(target),
                "--node-id",
                "1",
                "--endpoint",
                "CONTROLLER://127.0.0.1:19093",
                env=store.env,
            )
            assert r.returncode == 1 and "damaged" in r.stderr, (kind, r.stderr)
            assert not target.exists()
        finally:
            store.put(key, good)


def test_bad_destinations_get_one_line(tmp_path: Path, s3: S3Server) -> None:
    def one_line(r: subprocess.CompletedProcess[str], needle: str) -> None:
        assert r.returncode == 1, r.stdout
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], r.stderr
        assert ADMIN[1] not in r.stderr and STRANGER[1] not in r.stderr

    one_line(cli("backup", "list", "s3://no-such-bucket/x", env=s3.env()), "does not exist")
    wrong = (ADMIN[0], "not-the-secret-at-all-000000")
    one_line(cli("backup", "list", f"s3://{BUCKET}", env=s3.env(wrong)), "refused the credentials")
    one_line(cli("backup", "list", f"s3://{BUCKET}", env=s3.env(STRANGER)), "access denied")
    unreachable = {**s3.env(), "AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
    one_line(cli("backup", "list", f"s3://{BUCKET}", env=unreachable), "cannot reach")
    no_creds = {
        k: v
        for k, v in s3.env().items()
        if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")
    }
    no_creds["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "none")
    no_creds["AWS_CONFIG_FILE"] = str(tmp_path / "none")
    one_line(cli("backup", "list", f"s3://{BUCKET}", env=no_creds), "no S3 credentials")
    one_line(cli("backup", "verify", f"s3://{BUCKET}/q9/nope", env=s3.env()), "no manifest")
    # create refuses a bad destination before reading anything from the quorum
    one_line(
        cli(
            "backup",
            "create",
            "--bootstrap-controller",
            "127.0.0.1:1",
            "--to",
            "s3://no-such-bucket/x",
            env=s3.env(),
        ),
        "does not exist",
    )
    # an interrupted backup (data, no manifest) is not listed
    s3.client().put_object(Bucket=BUCKET, Key="q9/half/00000000000000000000.log", Body=b"x")  # type: ignore[attr-defined]
    r = cli("backup", "list", f"s3://{BUCKET}/q9", env=s3.env())
    assert r.returncode == 0 and r.stdout == "", r.stdout


def test_storage_recover_a_survivor_of_a_lost_majority(tmp_path: Path) -> None:
    """A static quorum (controller.quorum.voters, kraft.version 0: no VotersRecord names the
    survivor's endpoint): recover asks for --endpoint, then re-forms it as a dynamic quorum."""
    q = LocalQuorum(tmp_path / "q", 3, extra=EXTRA)
    q.write_configs()
    q.format()
    q.start_all()
    acked: dict[int, int] = {}
    try:
        q.wait_for_leader(30)

        async def go() -> None:
            c = LogClient([Endpoint("127.0.0.1", n.port) for n in q.nodes.values()])
            try:
                for i in range(120):
                    acked[i] = await c.append([b"k%d=v%d" % (i, i)])
            finally:
                await c.close()

        asyncio.run(go())
        leader, _ = q.wait_for_leader(10)
        survivor = next(n for n in q.voter_ids if n != leader)  # a follower: the worse case
        for n in q.voter_ids:
            if n != survivor:
                q.kill(n)
                shutil.rmtree(q.nodes[n].directory)  # their disks are gone
        q.stop(survivor)
    finally:
        q.stop_all()
    data = q.nodes[survivor].directory
    r = cli("storage", "recover", "--data-dir", str(data))
    assert r.returncode == 1 and "--endpoint" in r.stderr, r.stderr
    endpoint = f"CONTROLLER://127.0.0.1:{q.nodes[survivor].port}"
    r = cli("storage", "recover", "--data-dir", str(data), "--endpoint", endpoint)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 1, r.stderr
    started = time.monotonic()
    q.start(survivor)
    try:
        wait_for(
            lambda: (q.nodes[survivor].status() or {}).get("leader_id") == survivor,
            30,
            "the survivor leads alone",
        )
        expected = {b"k%d" % i: b"v%d" % i for i in acked}
        node = q.nodes[survivor]
        wait_for(
            lambda: (
                ((node.status() or {}).get("state_machine") or {}).get("digest")
                == _digest(expected)
            ),
            30,
            "every acknowledged record",
        )
        print(
            f"survivor {survivor} leads alone with all {len(acked)} acked records "
            f"{time.monotonic() - started:.1f}s after start"
        )

        async def one_more() -> int:
            c = LogClient([Endpoint("127.0.0.1", node.port)])
            try:
                return await c.append([b"after=recovery"])
            finally:
                await c.close()

        assert asyncio.run(one_more()) > max(acked.values())  # it commits alone
    finally:
        q.stop_all()
