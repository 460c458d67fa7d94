"""A node formatted with `--standalone` runs from its bootstrap checkpoint (no
`controller.quorum.voters`): it leads its one-voter quorum at once, and DescribeQuorum answers
every version, with v2's node list taken from the checkpoint's VotersRecord (issue 13)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from metaquorum.net.connection import KafkaConnection
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.messages import DescribeQuorumRequestData, DescribeQuorumResponseData
from metaquorum.protocol.types import Uuid
from metaquorum.runtime.config import config_from_properties
from metaquorum.runtime.node import NodeRuntime

from tests.support.standalone_node import format_standalone


async def wait_for_async(cond: Callable[[], bool], timeout_s: float, what: str) -> None:
    for _ in range(int(timeout_s * 100)):
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def _request() -> DescribeQuorumRequestData:
    p = DescribeQuorumRequestData.PartitionData(partition_index=0)
    t = DescribeQuorumRequestData.TopicData(topic_name="__cluster_metadata", partitions=[p])
    return DescribeQuorumRequestData(topics=[t])


async def test_standalone_node_leads_from_its_checkpoint_and_describes_every_version(
    tmp_path: Path,
) -> None:
    props, port, directory_id = format_standalone(tmp_path)
    assert directory_id != Uuid.ZERO
    runtime = NodeRuntime(config_from_properties(props), fsync=False)
    await runtime.start()
    conn = KafkaConnection("127.0.0.1", port, client_id="test")
    try:
        await wait_for_async(lambda: runtime.driver.node.leader_id == 1, 10, "node 1 to lead")
        node = runtime.driver.node.voters.node(1)
        assert node is not None and node.key.directory_id == str(directory_id)
        for version in (0, 1, 2):
            answer = await conn.request(int(ApiKeys.DESCRIBE_QUORUM), version, _request(), 5)
            assert isinstance(answer, DescribeQuorumResponseData)
            part = answer.topics[0].partitions[0]
            assert (part.error_code, part.leader_id) == (0, 1)
            voter = part.current_voters[0]
            if version < 2:
                assert answer.nodes == [] and voter.replica_directory_id == Uuid.ZERO
            else:
                assert voter.replica_directory_id == directory_id
                assert [
                    (n.node_id, [(x.name, x.host, x.port) for x in n.listeners])
                    for n in answer.nodes
                ] == [(1, [("CONTROLLER", "127.0.0.1", port)])]
    finally:
        await conn.close()
        await runtime.server.stop()
        await runtime.driver.stop()
