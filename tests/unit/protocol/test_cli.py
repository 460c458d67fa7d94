"""`metaquorum protocol decode|encode [--batch]|list`: output forms and exit codes."""

from __future__ import annotations

import io
import json

import pytest
from metaquorum.cli.main import main

from tests.unit.protocol.test_golden import VOTE_V0_BYTES

VOTE_V0_JSON = {
    "clusterId": "c",
    "topics": [
        {
            "topicName": "t",
            "partitions": [
                {
                    "partitionIndex": 0,
                    "replicaEpoch": 5,
                    "replicaId": 1,
                    "lastOffsetEpoch": 4,
                    "lastOffset": 100,
                }
            ],
        }
    ],
}


def test_decode_prints_kafka_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocol", "decode", "VoteRequest", "0", VOTE_V0_BYTES.hex()]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == VOTE_V0_JSON
    # compact, key order as Kafka's JsonConverter writes it
    assert out.startswith('{"clusterId":"c","topics":[{"topicName":"t","partitions":')


def test_encode_prints_hex(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocol", "encode", "VoteRequest", "0", json.dumps(VOTE_V0_JSON)]) == 0
    assert capsys.readouterr().out.strip() == VOTE_V0_BYTES.hex()


def test_class_name_and_spaced_hex_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    spaced = " ".join(VOTE_V0_BYTES.hex()[i : i + 8] for i in range(0, 2 * len(VOTE_V0_BYTES), 8))
    assert main(["protocol", "decode", "VoteRequestData", "0", spaced]) == 0
    assert json.loads(capsys.readouterr().out) == VOTE_V0_JSON


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["decode", "NoSuchMessage", "0", "00"], "unknown message"),
        (["decode", "VoteRequest", "x", "00"], "integer"),
        (["decode", "VoteRequest", "9", "00"], "versions 0-2"),
        (["decode", "VoteRequest", "0", "zz"], "hexadecimal"),
        (["decode", "VoteRequest", "0", "0102"], "cannot decode"),
        (["encode", "VoteRequest", "0", "{"], "JSON is not valid"),
        (["encode", "VoteRequest", "0", '{"topics": []}'], "clusterId"),
        (
            [
                "encode",
                "VoteRequest",
                "1",
                '{"clusterId": null, "voterId": 99999999999, "topics": []}',
            ],
            "range",
        ),
        (["decode", "VoteRequest"], "give MESSAGE VERSION HEX"),
    ],
)
def test_bad_input_exit_1_one_line(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["protocol", *argv]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]


def test_batch_goes_on_after_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        f"VoteRequest 0 {VOTE_V0_BYTES.hex()}",
        "FetchRequest 3 00",
        "",
        "ResponseHeader 1 0000000700",
        "garbage",
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["protocol", "decode", "--batch"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4
    assert json.loads(out[0]) == VOTE_V0_JSON
    assert out[1].startswith("error: line 2:") and "4-18" in out[1]
    assert json.loads(out[2]) == {"correlationId": 7}
    assert out[3].startswith("error: line 5:")


def test_batch_encode_all_ok(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        "sys.stdin",
        io.StringIO(
            'ResponseHeader 0 {"correlationId": 7}\nSnapshotFooterRecord 0 {"version": 0}\n'
        ),
    )
    assert main(["protocol", "encode", "--batch"]) == 0
    assert capsys.readouterr().out.splitlines() == ["00000007", "000000"]


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["protocol", "list"]) == 0
    out = capsys.readouterr().out
    assert "FetchRequest" in out and "v4-18" in out and "VotersRecord" in out


def test_empty_body_decodes_and_encodes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ApiVersionsRequest v0-v2 has no field: zero bytes, so there is no HEX to give (issue 12)."""
    assert main(["protocol", "decode", "ApiVersionsRequest", "0"]) == 0
    assert capsys.readouterr().out == "{}\n"
    assert main(["protocol", "decode", "ApiVersionsRequest", "2", ""]) == 0
    assert capsys.readouterr().out == "{}\n"
    assert main(["protocol", "encode", "ApiVersionsRequest", "1", "{}"]) == 0
    assert capsys.readouterr().out == "\n"  # zero bytes: an empty line
    monkeypatch.setattr(
        "sys.stdin",
        io.StringIO("ApiVersionsRequest 0\nApiVersionsRequest 1   \nApiVersionsRequest 3\n"),
    )
    assert main(["protocol", "decode", "--batch"]) == 1  # v3 has fields: 0 bytes is truncated
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["{}", "{}"] and out[2].startswith("error: line 3: cannot decode")
    monkeypatch.setattr(
        "sys.stdin", io.StringIO('ApiVersionsRequest 0 {}\nSnapshotFooterRecord 0 {"version": 0}\n')
    )
    assert main(["protocol", "encode", "--batch"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines == ["", "000000", ""]  # one line per input line, the first one empty


# Kafka-made vectors (issue 34): the JSON text is Kafka 4.3.1's `<Name>DataJsonConverter.write`
# and the hex Kafka's own bytes for it (through the conformance oracle, `encode` then `decode`),
# not our output. Each holds a null in a nullable array of structs, which Kafka's schemas allow
# (FetchResponse Responses.Partitions.AbortedTransactions v4+, QuorumStateData CurrentVoters v0).
KAFKA_NULL_STRUCT_ARRAYS = [
    (
        "QuorumStateData",
        0,
        '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":null}',
        "010000000100000002ffffffff00000000000000000000",
    ),
    (
        "FetchResponse",
        4,
        '{"throttleTimeMs":0,"responses":[{"topic":"__cluster_metadata","partitions":['
        '{"partitionIndex":0,"errorCode":0,"highWatermark":5,"lastStableOffset":5,'
        '"abortedTransactions":null,"records":null},'
        '{"partitionIndex":1,"errorCode":0,"highWatermark":5,"lastStableOffset":5,'
        '"abortedTransactions":[{"producerId":7,"firstOffset":3}],"records":null}]}]}',
        "000000000000000100125f5f636c75737465725f6d657461646174610000000200000000000000000000"
        "000000050000000000000005ffffffffffffffff000000010000000000000000000500000000000000"
        "050000000100000000000000070000000000000003ffffffff",
    ),
    (
        "FetchResponse",
        17,
        '{"throttleTimeMs":0,"errorCode":0,"sessionId":0,"responses":['
        '{"topicId":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":[{"partitionIndex":0,"errorCode":0,'
        '"highWatermark":5,"lastStableOffset":5,"logStartOffset":0,"abortedTransactions":null,'
        '"preferredReadReplica":-1,"records":null}]}]}',
        "000000000000000000000200000000000000000000000000000001020000000000000000000000000005"
        "0000000000000005000000000000000000ffffffff00000000",
    ),
]


@pytest.mark.parametrize(
    ("message", "version", "kafka_json", "kafka_hex"),
    KAFKA_NULL_STRUCT_ARRAYS,
    ids=[f"{m}-v{v}" for m, v, _, _ in KAFKA_NULL_STRUCT_ARRAYS],
)
def test_null_array_of_structs_both_ways(
    capsys: pytest.CaptureFixture[str], message: str, version: int, kafka_json: str, kafka_hex: str
) -> None:
    assert main(["protocol", "encode", message, str(version), kafka_json]) == 0
    assert capsys.readouterr().out.strip() == kafka_hex
    assert main(["protocol", "decode", message, str(version), kafka_hex]) == 0
    assert capsys.readouterr().out.strip() == kafka_json


def test_null_refused_where_kafka_does_not_allow_it(capsys: pytest.CaptureFixture[str]) -> None:
    """A non-nullable array of structs (FetchResponse Responses, Partitions) still refuses null."""
    for obj in (
        {"throttleTimeMs": 0, "responses": None},
        {"throttleTimeMs": 0, "responses": [{"topic": "t", "partitions": None}]},
    ):
        assert main(["protocol", "encode", "FetchResponse", "4", json.dumps(obj)]) == 1
        assert "null is not allowed here (version 4)" in capsys.readouterr().err
