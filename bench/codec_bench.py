"""Message codec benchmark: encode/decode ops/s and MB/s of KRaft RPC messages.

Cases: a Vote request (v2), a Fetch request (v18, one partition, as a follower sends it) and a
Fetch response (v18) carrying 1 MiB of records (v2 batches of 1 KiB values).

    .venv/bin/python bench/codec_bench.py [--seconds S] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from metaquorum.protocol.messages import FetchRequestData, FetchResponseData, VoteRequestData
from metaquorum.protocol.records import build_batch
from metaquorum.protocol.types import Uuid

DIR = Uuid(0x1234, 0x5678)


def vote_request() -> VoteRequestData:
    part = VoteRequestData.PartitionData(
        partition_index=0, replica_epoch=7, replica_id=1, replica_directory_id=DIR,
        voter_directory_id=DIR, last_offset_epoch=6, last_offset=123_456, pre_vote=False,
    )  # fmt: skip
    topic = VoteRequestData.TopicData(topic_name="__cluster_metadata", partitions=[part])
    return VoteRequestData(cluster_id="MkU3OEVBNTcwNTJENDM2Qk", voter_id=2, topics=[topic])


def fetch_request() -> FetchRequestData:
    part = FetchRequestData.FetchPartition(
        partition=0, current_leader_epoch=7, fetch_offset=123_456, last_fetched_epoch=7,
        replica_directory_id=DIR, high_watermark=123_400,
    )  # fmt: skip
    return FetchRequestData(
        cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
        replica_state=FetchRequestData.ReplicaState(replica_id=3, replica_epoch=-1),
        max_wait_ms=500,
        min_bytes=0,
        topics=[FetchRequestData.FetchTopic(topic_id=Uuid.ONE, partitions=[part])],
    )


def fetch_response(records: bytes) -> FetchResponseData:
    part = FetchResponseData.PartitionData(
        partition_index=0, high_watermark=123_400, log_start_offset=0, records=records,
        current_leader=FetchResponseData.LeaderIdAndEpoch(leader_id=1, leader_epoch=7),
    )  # fmt: skip
    topic = FetchResponseData.FetchableTopicResponse(topic_id=Uuid.ONE, partitions=[part])
    return FetchResponseData(responses=[topic])


def one_mib_of_batches() -> bytes:
    out = bytearray()
    offset = 0
    while len(out) < 1 << 20:
        values = [bytes([offset % 251]) * 1024 for _ in range(64)]
        out += build_batch(offset, 7, values, timestamp_ms=1_700_000_000_000)
        offset += 64
    return bytes(out)


def rate(fn: Callable[[], object], seconds: float) -> float:
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    cases: list[tuple[str, Any, int]] = [
        ("vote_request_v2", vote_request(), 2),
        ("fetch_request_v18", fetch_request(), 18),
        ("fetch_response_v18_1MiB", fetch_response(one_mib_of_batches()), 18),
    ]
    results: dict[str, dict[str, float]] = {}
    for name, msg, version in cases:
        data = msg.encode(version)
        assert type(msg).decode(data, version) == msg
        enc = rate(partial(msg.encode, version), args.seconds)
        dec = rate(partial(type(msg).decode, data, version), args.seconds)
        results[name] = {
            "bytes": len(data),
            "encode_ops_s": round(enc, 1),
            "encode_MB_s": round(enc * len(data) / 1e6, 2),
            "decode_ops_s": round(dec, 1),
            "decode_MB_s": round(dec * len(data) / 1e6, 2),
        }
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        for name, r in results.items():
            print(
                f"{name:<26} {int(r['bytes']):>9} B  encode {r['encode_ops_s']:>10.1f} ops/s "
                f"{r['encode_MB_s']:>9.2f} MB/s  decode {r['decode_ops_s']:>10.1f} ops/s "
                f"{r['decode_MB_s']:>9.2f} MB/s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
