"""Observing the quorum: DescribeQuorum's answer -> ObservedQuorum, bootstrap names, failures.

Oracles: the team's protocol codec (a DescribeQuorumResponse encoded at v2 and decoded, then
the admin client's own check `quorum_info_of`) and Python's base64/uuid for Kafka's Uuid text.
"""

from __future__ import annotations

import base64
import socket
import time
import uuid

from metaquorum.admin.client import quorum_info_of
from metaquorum.protocol.messages import DescribeQuorumResponseData
from metaquorum.protocol.types import Uuid
from metaquorum_operator import observe
from metaquorum_operator.model import Names, new_cluster_id
from metaquorum_operator.observed import VoterKey


def kafka_uuid_text(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def response(leader: int, epoch: int, hw: int, dirs: dict[int, str]) -> DescribeQuorumResponseData:
    R = DescribeQuorumResponseData

    def rs(i: int) -> R.ReplicaState:
        return R.ReplicaState(
            replica_id=i,
            replica_directory_id=Uuid.from_string(dirs[i]) if dirs.get(i) else Uuid.ZERO,
            log_end_offset=hw - i,
            last_fetch_timestamp=1000 + i,
            last_caught_up_timestamp=900 + i,
        )

    part = R.PartitionData(
        partition_index=0,
        leader_id=leader,
        leader_epoch=epoch,
        high_watermark=hw,
        current_voters=[rs(0), rs(1), rs(2)],
        observers=[rs(7)],
    )
    msg = R(topics=[R.TopicData(topic_name="__cluster_metadata", partitions=[part])])
    return R.decode(msg.encode(2), 2)


def test_describe_quorum_answer_maps_to_observed_quorum() -> None:
    dirs = {i: kafka_uuid_text(uuid.uuid4()) for i in (0, 1, 7)}  # replica 2: no directory id
    info = quorum_info_of(response(leader=1, epoch=5, hw=123, dirs=dirs))
    q = observe.observed_quorum_of("cid-1", info)
    assert (q.cluster_id, q.leader_id, q.leader_epoch, q.high_watermark) == ("cid-1", 1, 5, 123)
    assert [v.key for v in q.voters] == [
        VoterKey(0, dirs[0]),
        VoterKey(1, dirs[1]),
        VoterKey(2, ""),
    ]
    assert [o.key for o in q.observers] == [VoterKey(7, dirs[7])]
    seven = q.observers[0]
    assert (seven.log_end_offset, seven.last_fetch_ms, seven.last_caught_up_ms) == (116, 1007, 907)


def test_bootstrap_is_every_pod_by_its_stable_name() -> None:
    names = Names("quorum", "prod")
    assert observe.bootstrap_servers(names, 9093, 2) == (
        "quorum-0.quorum-headless.prod.svc.cluster.local:9093,"
        "quorum-1.quorum-headless.prod.svc.cluster.local:9093"
    )


def test_describe_fails_fast_and_softly_when_nobody_answers() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    obs = observe.describe(f"127.0.0.1:{port}", timeout_s=0.5)
    assert time.monotonic() - t0 < 2.0
    assert obs.quorum is None and obs.error


def test_describe_refuses_a_bad_bootstrap_with_a_message() -> None:
    obs = observe.describe("not a host port", timeout_s=0.5)
    assert obs.quorum is None and "bootstrap" in obs.error


def test_cluster_id_is_kafkas_uuid_text_and_never_an_option() -> None:
    for _ in range(50):
        cid = new_cluster_id()
        u = Uuid.from_string(cid)
        assert str(u) == cid and len(cid) == 22
        assert uuid.UUID(bytes=u.bytes).version == 4
    draws = iter([b"\xf8" + bytes(15), bytes(range(16))])  # the first encodes as "-..."
    first = base64.urlsafe_b64encode(bytes([0xF8]) + bytes(15)).decode()
    assert first.startswith("-")
    assert not new_cluster_id(lambda n: next(draws)).startswith("-")


def test_resign_posts_the_epoch_and_maps_the_answers() -> None:
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import pytest
    from metaquorum.admin.client import AdminError

    answers = {"1": (202, {"resigned": 1}), "2": (409, {"error": "not the leader of epoch 2"})}
    answers["3"] = (403, {"error": "POST /resign is off: set metaquorum.http.resign.enable=true"})
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            paths.append(self.path)
            code, body = answers[self.path.rsplit("=", 1)[1]]
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    try:
        assert observe.resign("127.0.0.1", port, 1) == "resigned"
        assert observe.resign("127.0.0.1", port, 2) == "not leader"
        with pytest.raises(AdminError, match=r"HTTP 403 .*metaquorum\.http\.resign\.enable=true"):
            observe.resign("127.0.0.1", port, 3)
        assert paths == ["/resign?epoch=1", "/resign?epoch=2", "/resign?epoch=3"]
    finally:
        srv.shutdown()
    with pytest.raises(AdminError, match=r"POST http://127\.0\.0\.1:\d+/resign\?epoch=1: "):
        observe.resign("127.0.0.1", port, 1, timeout_s=1)  # nobody listens any more
