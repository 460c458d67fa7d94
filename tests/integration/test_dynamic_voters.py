"""KIP-853 on real nodes (issue 14's core on the running node): a quorum formatted with
`--initial-controllers` grows by AddRaftVoter (the leader asks the new voter's ApiVersions over
a connection to an endpoint it learned from the request, the observer has caught up, the
VotersRecord commits) and shrinks by RemoveRaftVoter, over real TCP with fsync'd logs; every
node's DescribeQuorum / peer connections follow the voter set from the log."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from metaquorum.net.connection import KafkaConnection
from metaquorum.protocol.api_keys import ApiKeys
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    AddRaftVoterResponseData,
    DescribeQuorumRequestData,
    DescribeQuorumResponseData,
    RemoveRaftVoterRequestData,
    RemoveRaftVoterResponseData,
)
from metaquorum.protocol.types import Uuid
from metaquorum.storage.meta_properties import read_meta_properties

from tests.integration.quorum_fixture import running_quorum, wait_for, wait_for_hw_everywhere

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def _ask(port: int, api: ApiKeys, version: int, message: Any) -> Any:
    conn = KafkaConnection("127.0.0.1", port, client_id="test-admin")
    try:
        return await conn.request(int(api), version, message, 30)
    finally:
        await conn.close()


def _describe() -> DescribeQuorumRequestData:
    p = DescribeQuorumRequestData.PartitionData(partition_index=0)
    t = DescribeQuorumRequestData.TopicData(topic_name="__cluster_metadata", partitions=[p])
    return DescribeQuorumRequestData(topics=[t])


def test_add_then_remove_a_voter_on_running_nodes(tmp_path: Path) -> None:
    with running_quorum(tmp_path, voters=3, observers=1, dynamic=True) as q:
        leader, _ = q.wait_for_leader(30)
        wait_for_hw_everywhere(q, 3, 20)
        meta = read_meta_properties(q.nodes[4].directory)
        assert meta is not None and meta.directory_id is not None
        four = q.nodes[4]
        add = AddRaftVoterRequestData(
            cluster_id=q.cluster_id,
            voter_id=4,
            voter_directory_id=meta.directory_id,
            listeners=[
                AddRaftVoterRequestData.Listener(
                    name="CONTROLLER", host="127.0.0.1", port=four.port
                )
            ],
            ack_when_committed=True,
        )
        answer = asyncio.run(_ask(q.nodes[leader].port, ApiKeys.ADD_RAFT_VOTER, 1, add))
        assert isinstance(answer, AddRaftVoterResponseData)
        assert answer.error_code == 0, answer.error_message

        described = asyncio.run(_ask(q.nodes[leader].port, ApiKeys.DESCRIBE_QUORUM, 2, _describe()))
        assert isinstance(described, DescribeQuorumResponseData)
        part = described.topics[0].partitions[0]
        assert sorted(v.replica_id for v in part.current_voters) == [1, 2, 3, 4]
        assert {n.node_id for n in described.nodes} == {1, 2, 3, 4}
        assert str(
            next(v for v in part.current_voters if v.replica_id == 4).replica_directory_id
        ) == str(meta.directory_id)

        victim = next(i for i in (1, 2, 3) if i != leader)
        remove = RemoveRaftVoterRequestData(
            cluster_id=q.cluster_id,
            voter_id=victim,
            voter_directory_id=Uuid.from_string(str(q.directory_ids[victim])),
        )
        answer = asyncio.run(_ask(q.nodes[leader].port, ApiKeys.REMOVE_RAFT_VOTER, 0, remove))
        assert isinstance(answer, RemoveRaftVoterResponseData)
        assert answer.error_code == 0, answer.error_message
        described = asyncio.run(_ask(q.nodes[leader].port, ApiKeys.DESCRIBE_QUORUM, 2, _describe()))
        part = described.topics[0].partitions[0]
        assert sorted(v.replica_id for v in part.current_voters) == sorted({1, 2, 3, 4} - {victim})
        # Every node derives the same voter set from the log: node 4 votes now.
        wait_for(
            lambda: all(
                s is not None and sorted(s["voters"]) == sorted({1, 2, 3, 4} - {victim})
                for s in q.statuses().values()
            ),
            20,
            "every node to see the new voter set",
        )


def test_our_cli_adds_and_removes_controllers(tmp_path: Path) -> None:
    """`metaquorum quorum add-controller --config F / remove-controller` (as Kafka's tool):
    success lines as Kafka prints them, and one line with the fix for a Kafka error."""
    from tests.integration.quorum_fixture import our_cli

    with running_quorum(tmp_path, voters=3, observers=1, dynamic=True) as q:
        leader, _ = q.wait_for_leader(30)
        wait_for_hw_everywhere(q, 3, 20)
        boot = ",".join(q.nodes[i].address for i in (1, 2, 3))
        meta = read_meta_properties(q.nodes[4].directory)
        assert meta is not None
        r = our_cli(
            "quorum", "--bootstrap-controller", boot, "add-controller",
            "--config", str(q.nodes[4].config_path),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"Added controller 4 with directory id {meta.directory_id}")
        r = our_cli(
            "quorum", "--bootstrap-controller", boot, "add-controller",
            "--config", str(q.nodes[4].config_path),
        )  # fmt: skip
        assert r.returncode == 1 and r.stderr.count("\n") == 1
        assert "DUPLICATE_VOTER" in r.stderr and "remove it first" in r.stderr
        victim = next(i for i in (1, 2, 3) if i != leader)
        r = our_cli(
            "quorum", "--bootstrap-controller", boot, "remove-controller",
            "--controller-id", str(victim),
            "--controller-directory-id", str(q.directory_ids[victim]),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert f"Removed KRaft controller {victim}" in r.stdout
        r = our_cli("quorum", "--bootstrap-controller", boot, "describe", "--status")
        assert r.returncode == 0
        assert sorted(
            int(x) for x in re.findall(r'\{"id": (\d+)', r.stdout.split("CurrentObservers")[0])
        ) == sorted({1, 2, 3, 4} - {victim})


def test_a_voter_keeps_its_advertised_endpoint_in_the_voter_set(tmp_path: Path) -> None:
    """Bound to 127.0.0.1, advertising localhost (as a pod binds its IP and advertises its
    stable DNS name): the formatted VotersRecord entry survives the node's leadership. Before,
    the leader's start-of-epoch records rewrote it to the bound address."""
    from metaquorum.runtime.local_quorum import LocalQuorum

    from tests.integration.quorum_fixture import our_cli

    q = LocalQuorum(tmp_path, 1, standalone=True)
    q.write_configs()
    node = q.nodes[1]
    with node.config_path.open("a", encoding="utf-8") as f:
        f.write(f"advertised.listeners=CONTROLLER://localhost:{node.port}\n")
    q.format()
    q.start_all()
    try:
        q.wait_for_leader(30)
        wait_for_hw_everywhere(q, 2, 20)  # past the leader's start-of-epoch records
        r = our_cli("quorum", "--bootstrap-controller", node.address, "describe", "--status")
        assert r.returncode == 0, r.stderr
        voters = r.stdout.split("CurrentVoters:")[1].split("CurrentObservers")[0]
        assert f'"CONTROLLER://localhost:{node.port}"' in voters, voters
        assert "127.0.0.1" not in voters, voters
    finally:
        q.stop_all()
