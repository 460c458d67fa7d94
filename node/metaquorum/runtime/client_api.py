"""Client append and read on `__cluster_metadata` partition 0 (the issue's client path).

Role:
- Produce (acks=-1, the generated `ProduceRequestData`, v3-13): the leader decodes the batches,
  hands their record values to the core as one `ClientAppend`, and answers once they commit
  (BaseOffset = first offset of the append); a non-leader answers NOT_LEADER_OR_FOLLOWER with
  the current leader and epoch (tagged CurrentLeader) and its endpoint (NodeEndpoints), which
  the wire writes from v10 on; acks other than -1 get INVALID_REQUIRED_ACKS; no commit within
  TimeoutMs gets REQUEST_TIMED_OUT (the append may still commit later).
- Fetch as a consumer (ReplicaId < 0): served by this layer from the leader's stored batches,
  only whole batches below the high watermark (committed data only); an empty read long-polls
  until the HW moves or MaxWaitMs passes. A non-leader, or a leader without its read lease (no
  majority fetched within 0.75 x fetch.timeout.ms: it may have been deposed), answers
  NOT_LEADER_OR_FOLLOWER with the current leader and epoch at once. Every other answer waits
  for the read index (core/read_index.py): a majority confirms this leader after the read
  arrived (about one follower fetch round trip; the voters' parked fetches are answered at once
  to start it), and it carries the HW as of the read's arrival; unconfirmed within
  fetch.timeout.ms it is NOT_LEADER_OR_FOLLOWER. A leader that knows no HW yet (new in its
  epoch, before an entry of the epoch commits) long-polls until it does; at MaxWaitMs it answers
  no records and HighWatermark -1 (unknown), never 0.
Invariants: nothing above the HW is ever returned to a consumer; no consumer answer carries a
HW that a majority did not confirm after the read arrived; a Produce is answered with success
only after `AppendCommitted` (the records are on a majority's disks).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable

from metaquorum.core.events import ConfirmReads
from metaquorum.core.states import LeaderState
from metaquorum.net.wire import encode_response
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    FetchRequestData,
    FetchResponseData,
    ProduceRequestData,
    ProduceResponseData,
)
from metaquorum.protocol.records import iter_batches
from metaquorum.runtime.client_errors import NotLeaderError
from metaquorum.runtime.driver import Driver
from metaquorum.runtime.produce import (
    PRODUCE_API_KEY,
    PartitionResponse,
    SuccessTemplates,
    batch_values,
    node_endpoints,
    partition_response,
    targets_metadata_partition,
    topic_response,
)

MAX_READ_BYTES = 1024 * 1024
UNKNOWN_HW = -1  # a consumer answer's HighWatermark when the leader knows none yet
CONFIRM_POLL_S = 0.0005  # how often a read checks the read index while voters fetch again


class ClientApi:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self._hw_event = asyncio.Event()
        driver.hw_listeners.append(self._on_hw)
        self.templates = SuccessTemplates()

    def _on_hw(self, _hw: int) -> None:
        self._hw_event.set()
        self._hw_event = asyncio.Event()

    # --- Produce -----------------------------------------------------------------------------
    def produce_nowait(
        self, request: ProduceRequestData, version: int, correlation_id: int
    ) -> asyncio.Future[bytes]:
        """The encoded answer to a Produce, without a coroutine or task for the common
        one-partition request: it is built in the append's callback, a success from a
        template (`SuccessTemplates`). Anything else, and every refusal, goes through
        `produce` and the generic encoder unchanged."""
        topics = request.topic_data
        values: list[bytes] | tuple[Errors, str] | None = None
        if len(topics) == 1 and len(topics[0].partition_data) == 1:
            topic, part = topics[0], topics[0].partition_data[0]
            if (
                targets_metadata_partition(topic, part.index, self.driver.node.topic)
                and request.acks == -1
            ):
                values = batch_values(part.records)
        if not isinstance(values, list) or not isinstance(self.driver.node.state, LeaderState):
            return asyncio.ensure_future(
                self._encoded(self.produce(request), version, correlation_id)
            )
        out: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        n = len(values)

        def reply(result: int | BaseException) -> None:
            if out.done():
                return  # the connection went away
            if not isinstance(result, BaseException):
                base = result - n + 1
                start = self.driver.node.log.start_offset
                out.set_result(self.templates.encode(topic, version, correlation_id, base, start))
                return
            refusal = self._refusal(part.index, result)
            if refusal is None:
                out.set_exception(result)
                return
            responses = [topic_response(topic, [refusal])]
            message = ProduceResponseData(
                responses=responses,
                node_endpoints=node_endpoints(responses, self.driver.voter_endpoints),
            )
            out.set_result(encode_response(PRODUCE_API_KEY, version, correlation_id, message))

        timeout_s = max(0.001, request.timeout_ms / 1000)
        self.driver.append_with_callback(tuple(values), timeout_s, reply)
        return out

    @staticmethod
    async def _encoded(
        answer: Awaitable[ProduceResponseData], version: int, correlation_id: int
    ) -> bytes:
        return encode_response(PRODUCE_API_KEY, version, correlation_id, await answer)

    async def produce(self, request: ProduceRequestData) -> ProduceResponseData:
        """The answer in its newest form; the wire writes what the negotiated version has."""
        out: list[ProduceResponseData.TopicProduceResponse] = []
        for topic in request.topic_data:
            answers = [await self._produce_one(topic, p, request) for p in topic.partition_data]
            out.append(topic_response(topic, answers))
        return ProduceResponseData(
            responses=out, node_endpoints=node_endpoints(out, self.driver.voter_endpoints)
        )

    async def _produce_one(
        self,
        topic: ProduceRequestData.TopicProduceData,
        part: ProduceRequestData.PartitionProduceData,
        request: ProduceRequestData,
    ) -> PartitionResponse:
        index = part.index
        if not targets_metadata_partition(topic, index, self.driver.node.topic):
            return partition_response(index, Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if request.acks != -1:
            return partition_response(
                index, Errors.INVALID_REQUIRED_ACKS, "only acks=-1 is supported"
            )
        values = batch_values(part.records)
        if isinstance(values, tuple):
            return partition_response(index, *values)
        if not isinstance(self.driver.node.state, LeaderState):
            return self._not_leader(index)
        timeout_s = max(0.001, request.timeout_ms / 1000)
        try:
            last = await self.driver.append_nowait(tuple(values), timeout_s)
        except (NotLeaderError, TimeoutError) as e:
            refusal = self._refusal(index, e)
            assert refusal is not None
            return refusal
        return partition_response(
            index,
            base_offset=last - len(values) + 1,
            log_start_offset=self.driver.node.log.start_offset,
        )

    def _refusal(self, index: int, error: BaseException) -> PartitionResponse | None:
        """The answer to an append that failed with `error`, or None if it is not a refusal
        Kafka answers (a bug: the caller fails the request)."""
        if isinstance(error, NotLeaderError):
            return self._not_leader(index)
        if isinstance(error, TimeoutError):
            return partition_response(index, Errors.REQUEST_TIMED_OUT)
        return None

    def _not_leader(self, index: int) -> PartitionResponse:
        node = self.driver.node
        return partition_response(
            index, Errors.NOT_LEADER_OR_FOLLOWER, leader=(node.leader_id, node.epoch)
        )

    # --- consumer Fetch ----------------------------------------------------------------------
    async def consumer_fetch(self, request: FetchRequestData) -> FetchResponseData:
        node = self.driver.node
        topic = request.topics[0] if len(request.topics) == 1 else None
        part = topic.partitions[0] if topic is not None and len(topic.partitions) == 1 else None
        if (
            topic is None
            or part is None
            or part.partition != 0
            or (topic.topic_id != node.topic.id and topic.topic != node.topic.name)
        ):
            return FetchResponseData(error_code=int(Errors.INVALID_REQUEST))
        deadline = asyncio.get_running_loop().time() + max(0, request.max_wait_ms) / 1000
        while True:
            # The read lease (core/read_lease.py): a leader that cannot be sure no successor
            # exists answers as a non-leader at once.
            progress = node.progress
            if progress is None or not node.holds_read_lease(self.driver.clock.now_ms()):
                return self._response(Errors.NOT_LEADER_OR_FOLLOWER, b"")
            # The read index (core/read_index.py): what is answered is as of now, confirmed.
            epoch, seq = node.epoch, progress.responses_sent
            hw = node.high_watermark
            if not node.log.start_offset <= part.fetch_offset <= node.log.end_offset:
                return self._response(Errors.OFFSET_OUT_OF_RANGE, b"")
            remaining = deadline - asyncio.get_running_loop().time()
            if hw is None:
                # A leader new in its epoch knows no HW until an entry of the epoch commits
                # (KIP-595): no answer may claim one. Read as 0, a read from the end of the log
                # was answered "nothing committed at or above 0" (a stale read: nemesis-short,
                # porcupine Illegal, the new leader's first commit slower than MaxWaitMs).
                if remaining <= 0:
                    return self._response(Errors.NONE, b"", UNKNOWN_HW)
            else:
                records = b""
                if part.fetch_offset < hw:
                    records = await self._read_committed(part.fetch_offset, hw, request.max_bytes)
                if records or remaining <= 0:
                    if not await self._confirmed(epoch, seq):
                        return self._response(Errors.NOT_LEADER_OR_FOLLOWER, b"")
                    return self._response(Errors.NONE, records, hw)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._hw_event.wait(), remaining)

    async def _confirmed(self, epoch: int, seq: int) -> bool:
        """Wait until a majority confirmed this leader in `epoch` after response `seq`."""
        node = self.driver.node
        if node.reads_confirmed_after(epoch, seq):
            return True
        loop = asyncio.get_running_loop()
        give_up = loop.time() + node.config.fetch_timeout_ms / 1000
        self.driver.post(ConfirmReads())
        while loop.time() < give_up:
            await asyncio.sleep(CONFIRM_POLL_S)
            if node.reads_confirmed_after(epoch, seq):
                return True
            if node.epoch != epoch or node.progress is None:
                return False
        return False

    async def _read_committed(self, offset: int, hw: int, max_bytes: int) -> bytes:
        log = self.driver.io.storage.log
        limit = max(1, min(max_bytes, MAX_READ_BYTES)) if max_bytes > 0 else MAX_READ_BYTES

        def read() -> bytes:
            data = log.read(offset, limit).records
            end = 0
            for batch in iter_batches(data):
                if batch.last_offset >= hw:
                    break
                end = batch.position + batch.size_in_bytes
            return data[:end]

        return await self.driver.io.call(read)

    def _response(self, error: Errors, records: bytes, hw: int | None = None) -> FetchResponseData:
        node = self.driver.node
        if hw is None:
            hw = node.high_watermark
        p = FetchResponseData.PartitionData(
            partition_index=0,
            error_code=int(error),
            high_watermark=-1 if hw is None else hw,
            last_stable_offset=-1 if hw is None else hw,
            log_start_offset=node.log.start_offset,
            records=records,
            current_leader=FetchResponseData.LeaderIdAndEpoch(
                leader_id=node.leader_id, leader_epoch=node.epoch
            ),
        )
        topic = FetchResponseData.FetchableTopicResponse(
            topic=node.topic.name, topic_id=node.topic.id, partitions=[p]
        )
        return dataclasses.replace(FetchResponseData(), responses=[topic])
