"""A consumer's Fetch on a leader that knows no high watermark yet (new in its epoch, before an
entry of the epoch commits, KIP-595): it long-polls, and at MaxWaitMs answers HighWatermark -1,
never 0. Read as 0, nemesis-short's checker saw a read from the end of the log answered
"complete, nothing committed at or above 0" while records below the end were committed:
porcupine Illegal (CI, seeds 101 and 202 on a busy machine)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import FetchRequestData
from metaquorum.protocol.types import METADATA_RAFT_TOPIC
from metaquorum.runtime.client_api import ClientApi


def _api(hw: int | None) -> tuple[ClientApi, Any]:
    node = SimpleNamespace(
        progress=SimpleNamespace(responses_sent=3),
        holds_read_lease=lambda now_ms: True,
        reads_confirmed_after=lambda epoch, seq: True,
        high_watermark=hw,
        log=SimpleNamespace(start_offset=0, end_offset=10),
        epoch=5,
        leader_id=1,
        topic=METADATA_RAFT_TOPIC,
        config=SimpleNamespace(fetch_timeout_ms=1000),
    )
    driver: Any = SimpleNamespace(
        hw_listeners=[], node=node, clock=SimpleNamespace(now_ms=lambda: 0)
    )
    return ClientApi(driver), node


def _read(offset: int, max_wait_ms: int) -> FetchRequestData:
    return FetchRequestData(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        topics=[
            FetchRequestData.FetchTopic(
                topic=METADATA_RAFT_TOPIC.name,
                partitions=[FetchRequestData.FetchPartition(partition=0, fetch_offset=offset)],
            )
        ],
    )


def test_a_leader_without_a_high_watermark_answers_it_unknown_not_zero() -> None:
    api, _ = _api(None)
    answer = asyncio.run(api.consumer_fetch(_read(10, 30)))
    (p,) = answer.responses[0].partitions
    assert (p.error_code, p.high_watermark, p.records) == (int(Errors.NONE), -1, b"")


def test_the_read_waits_for_the_high_watermark_to_become_known() -> None:
    api, node = _api(None)

    async def go() -> Any:
        read = asyncio.ensure_future(api.consumer_fetch(_read(10, 300)))
        await asyncio.sleep(0.05)
        assert not read.done()  # no answer while the HW is unknown
        node.high_watermark = 10
        api._on_hw(10)
        return await read

    (p,) = asyncio.run(go()).responses[0].partitions
    assert (p.error_code, p.high_watermark, p.records) == (int(Errors.NONE), 10, b"")
