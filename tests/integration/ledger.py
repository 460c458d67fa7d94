"""A ledger of appends made while a quorum is changed under it (issue 15's Must show).

Role: writers on a thread of their own append through the Kafka wire (Produce acks=-1, one
attempt per value: every attempt has a value of its own, so a retry can never be mistaken for
a duplicate), recording each attempt as acknowledged (value -> offset) or unknown (no answer,
an error: it may or may not be in the log). `check` reads the whole committed log back and
asserts Jepsen's bank-ledger rules:
- none lost: every acknowledged value is in the log, at the offset it was acknowledged with;
- none duplicated: no value is in the log twice, and nothing is there that was never sent;
- order kept: each writer's acknowledged values appear in the order they were acknowledged.
Unknown attempts may be in the log or not (each at most once).
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from metaquorum.admin.client import AdminError
from metaquorum.admin.log_client import LogClient
from metaquorum.net.endpoint import Endpoint


@dataclass
class LedgerResult:
    acked: int
    unknown: int
    unknown_in_log: int
    log_records: int
    max_gap_s: float  # longest time no append was acknowledged (unavailability seen)


@dataclass
class Ledger:
    endpoints: Callable[[], list[Endpoint]]
    writers: int = 2
    acked: dict[bytes, int] = field(default_factory=dict)
    order: dict[int, list[bytes]] = field(default_factory=dict)
    unknown: set[bytes] = field(default_factory=set)
    ack_times: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    errors: list[str] = field(default_factory=list)
    tls: Callable[[], ssl.SSLContext] | None = None  # a quorum on SSL: the client context
    # values `w<w>-<n>=v`: the node's key-value state machine maps each to a key, so a snapshot
    # (which keeps the map, not the records) still holds them (the backup/restore e2e test)
    kv: bool = False

    def start(self) -> Ledger:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)

    def wait_acked(self, more: int, timeout_s: float = 30.0) -> None:
        """Until `more` further appends were acknowledged (the quorum commits again)."""
        target = len(self.acked) + more
        deadline = time.monotonic() + timeout_s
        while len(self.acked) < target:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"only {len(self.acked)} of {target} appends acknowledged after "
                    f"{timeout_s}s; last errors: {self.errors[-3:]}"
                )
            time.sleep(0.05)

    async def _run(self) -> None:
        await asyncio.gather(*(self._writer(w) for w in range(self.writers)))

    async def _writer(self, w: int) -> None:
        self.order[w] = []
        client = LogClient(self.endpoints(), timeout_s=0.0, request_timeout_s=5, tls=self.tls)
        attempt = 0
        try:
            while not self._stop.is_set():
                value = f"w{w}-{attempt}{'=v' if self.kv else ''}".encode()
                attempt += 1
                try:
                    offset = await client.append([value], timeout_ms=5000)
                except (AdminError, OSError, TimeoutError) as e:
                    self.unknown.add(value)
                    self.errors.append(f"{value!r}: {e}")
                    await client.close()
                    client = LogClient(
                        self.endpoints(), timeout_s=0.0, request_timeout_s=5, tls=self.tls
                    )
                    await asyncio.sleep(0.05)
                    continue
                self.acked[value] = offset
                self.order[w].append(value)
                self.ack_times.append(time.monotonic())
                await asyncio.sleep(0.005)
        finally:
            await client.close()

    def check(self) -> LedgerResult:
        """Read the committed log from 0 and assert the rules in the module docstring."""
        return asyncio.run(self._check())

    async def _check(self) -> LedgerResult:
        client = LogClient(self.endpoints(), timeout_s=30, tls=self.tls)
        try:
            _, _, hw = await client.read(0, max_wait_ms=0)
            seen: dict[bytes, list[int]] = {}
            offset = 0
            while offset < hw:
                records, offset, _ = await client.read(offset, max_wait_ms=100)
                for r in records:
                    seen.setdefault(r.value, []).append(r.offset)
        finally:
            await client.close()
        lost = [v for v, o in self.acked.items() if seen.get(v) != [o]]
        assert not lost, (
            f"{len(lost)} acknowledged appends lost or moved, e.g. "
            f"{[(v, self.acked[v], seen.get(v)) for v in lost[:3]]}"
        )
        twice = [v for v, offsets in seen.items() if len(offsets) > 1]
        assert not twice, f"values in the log twice: {twice[:3]}"
        sent = set(self.acked) | self.unknown
        foreign = [v for v in seen if v not in sent]
        assert not foreign, f"values in the log never sent: {foreign[:3]}"
        for w, values in self.order.items():
            offsets = [self.acked[v] for v in values]
            assert offsets == sorted(offsets), f"writer {w}'s order not kept"
        gaps = [b - a for a, b in zip(self.ack_times, self.ack_times[1:], strict=False)]
        return LedgerResult(
            acked=len(self.acked),
            unknown=len(self.unknown),
            unknown_in_log=sum(1 for v in self.unknown if v in seen),
            log_records=sum(len(o) for o in seen.values()),
            max_gap_s=max(gaps, default=0.0),
        )
