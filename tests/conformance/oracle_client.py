"""Python side of the Kafka oracle (tests/conformance/oracle/Oracle.java).

Role: compile the oracle once (tests/conformance/oracle/build.sh caches the classes by a hash of
the source and the Kafka version), start ONE JVM for a whole test session, and exchange one JSON
object per line with it. Invariants: replies come back in request order; a request that takes
longer than its timeout kills the JVM (no half-read stream is ever reused); a reply with
``ok: false`` is Kafka rejecting the input, reported as :class:`OracleError` by the typed helpers
and returned as-is by :meth:`KafkaOracle.batch`. Binary payloads travel as hex (message bytes)
or standard base64 (record keys, values, header values).
"""

from __future__ import annotations

import base64
import json
import queue
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ORACLE_DIR = Path(__file__).resolve().parent / "oracle"

Json = dict[str, Any]

#: (message name, version) -> values checked both ways against Kafka in this session; the
#: conformance conftest prints a summary of it at the end of the run.
MESSAGE_COVERAGE: Counter[tuple[str, int]] = Counter()
#: verdicts of both decoders on damaged message bytes ("ours ok, kafka ok", ...), summarised too.
DAMAGE_VERDICTS: Counter[str] = Counter()


class OracleError(RuntimeError):
    """Kafka refused a request (the reply had ok = false)."""

    def __init__(self, reply: Json) -> None:
        super().__init__(f"{reply.get('exception')}: {reply.get('error')}")
        self.reply = reply


class OracleDied(RuntimeError):
    """The oracle JVM exited, timed out or wrote something that is not a JSON line."""


def build_oracle(kafka_lib: Path, *, timeout: float = 300.0) -> Path:
    """Compile the oracle if its cached classes are missing; return the classes directory."""
    out = subprocess.run(
        [str(ORACLE_DIR / "build.sh"), str(kafka_lib)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"oracle build failed ({out.returncode}):\n{out.stderr}")
    return Path(out.stdout.strip().splitlines()[-1])


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class KafkaOracle:
    """One long-lived oracle JVM answering JSON lines."""

    def __init__(self, classes: Path, kafka_lib: Path, *, timeout: float = 120.0) -> None:
        self.timeout = timeout
        # Lives as long as the JVM; closed in close().
        self._stderr = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115
        cmd = [
            "java",
            "-Xshare:auto",
            "-XX:+UseSerialGC",
            "-Xmx512m",
            "-cp",
            f"{classes}:{kafka_lib}/*",
            "Oracle",
        ]
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._lock = threading.Lock()
        self._reader = threading.Thread(
            target=self._read_loop, name="kafka-oracle-reader", daemon=True
        )
        self._reader.start()
        self.requests_sent = 0

    @property
    def process(self) -> subprocess.Popen[bytes]:
        return self._proc

    def _read_loop(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _stderr_tail(self) -> str:
        if self._stderr.closed:
            return ""
        self._stderr.seek(0)
        return self._stderr.read()[-4000:].decode("utf-8", "replace")

    def _die(self, why: str) -> OracleDied:
        tail = self._stderr_tail()
        self.close()
        return OracleDied(f"{why}; oracle stderr:\n{tail}")

    def request(self, req: Json, *, timeout: float | None = None) -> Json:
        """Send one request object; return its reply object (ok or not)."""
        with self._lock:
            if self._proc.poll() is not None or self._proc.stdin is None:
                raise self._die(f"oracle is not running (exit {self._proc.returncode})")
            line = json.dumps(req, separators=(",", ":")) + "\n"
            try:
                self._proc.stdin.write(line.encode("utf-8"))
                self._proc.stdin.flush()
            except OSError as e:
                raise self._die(f"cannot write to the oracle: {e}") from e
            self.requests_sent += 1
            try:
                raw = self._lines.get(timeout=self.timeout if timeout is None else timeout)
            except queue.Empty:
                raise self._die(
                    f"no reply within {timeout or self.timeout}s to {req.get('op')}"
                ) from None
            if raw is None:
                raise self._die("oracle closed its stdout")
            try:
                reply: Json = json.loads(raw)
            except ValueError as e:
                raise self._die(f"oracle wrote a non-JSON line: {raw[:200]!r}") from e
            return reply

    def call(self, op: str, **fields: Any) -> Json:
        """One request; raise OracleError when Kafka refused it."""
        reply = self.request({"op": op, **fields})
        if not reply.get("ok"):
            raise OracleError(reply)
        return reply

    def batch(self, requests: Sequence[Json], *, chunk: int = 400) -> list[Json]:
        """Many requests, ``chunk`` per line; replies in order; failures returned, not raised."""
        replies: list[Json] = []
        for start in range(0, len(requests), chunk):
            part = list(requests[start : start + chunk])
            reply = self.call("batch", requests=part)
            got = reply["replies"]
            if len(got) != len(part):
                raise OracleDied(f"batch of {len(part)} got {len(got)} replies")
            replies.extend(got)
        return replies

    # Typed helpers -------------------------------------------------------------------------

    def ping(self) -> str:
        return str(self.call("ping")["kafkaVersion"])

    def encode(self, message: str, version: int, data: Json) -> bytes:
        """Kafka's bytes for ``<message>Data`` read from its JSON form at ``version``."""
        return bytes.fromhex(
            self.call("encode", message=message, version=version, json=data)["hex"]
        )

    def decode(self, message: str, version: int, data: bytes) -> tuple[Json, bytes]:
        """Kafka's JSON form of ``data`` and Kafka's own re-encoding of what it read."""
        reply = self.call("decode", message=message, version=version, hex=data.hex())
        return reply["json"], bytes.fromhex(reply["hex"])

    def versions(self, message: str) -> Json:
        return self.call("versions", message=message)

    def records_read(self, data: bytes) -> Json:
        return self.call("records_read", hex=data.hex())

    def records_build(
        self,
        *,
        base_offset: int,
        epoch: int,
        timestamp: int,
        records: Iterable[tuple[bytes | None, bytes | None]] = (),
        control: Iterable[tuple[str, Json]] | None = None,
        mode: str = "memory",
        helper: bool = False,
    ) -> bytes:
        """A batch built by Kafka: data records (key, value) or control records (type, json).

        ``mode="raft"`` builds data batches with KRaft's own BatchBuilder (keys are always null);
        ``mode="memory"`` uses MemoryRecordsBuilder. Control types: LeaderChange, SnapshotHeader,
        SnapshotFooter, KRaftVersion, KRaftVoters (appended into one control batch, as KRaft does;
        with ``helper=True`` the one control record goes through ``MemoryRecords.with*Message``).
        """
        req: Json = {
            "baseOffset": base_offset,
            "epoch": epoch,
            "timestamp": timestamp,
            "mode": mode,
        }
        if control is not None:
            req["control"] = [{"type": t, "json": j} for t, j in control]
            req["helper"] = helper
        else:
            req["records"] = [{"key": b64(k), "value": b64(v)} for k, v in records]
        return bytes.fromhex(self.call("records_build", **req)["hex"])

    def close(self) -> None:
        """Stop the JVM (closing stdin ends its loop), waiting briefly before killing it."""
        proc = self._proc
        if proc.poll() is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(timeout=10)
        self._reader.join(timeout=5)
        if not self._stderr.closed:
            self._stderr.close()

    def __enter__(self) -> KafkaOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
