"""Kafka's ids on the wire: `Uuid`, and the KRaft topic a replica replicates.

Role: `Uuid` mirrors `org.apache.kafka.common.Uuid`: two signed int64 halves (16 bytes, big
endian, as the UUID wire type writes them: types.write_uuid / ByteReader.read_uuid), text form
URL-safe base64 without padding (22 chars), ZERO and ONE (= METADATA_TOPIC_ID) reserved, random
ones version 4 as Kafka's `Uuid.randomUuid`. `RaftTopic` is the topic partition a KRaft replica
replicates: `__cluster_metadata` / Uuid(0, 1), or Kafka's TestRaftServer topic for interop.
types.py re-exports every name here (the codecs import them from there).

Invariants: a Uuid from text or bytes is exactly 16 bytes or a ProtocolError (never another
exception); `Uuid.random` never returns ZERO, ONE or one whose text starts with '-'; no IO but
the OS's CSPRNG when no `rng` is given (the sans-IO core passes its own).
"""

from __future__ import annotations

import base64
import binascii
import secrets
import struct
from dataclasses import dataclass
from typing import ClassVar, Protocol

from metaquorum.protocol.errors import ProtocolError

UUID = struct.Struct(">qq")
# types.Buffer (not imported: types imports this module); a name, as `bytes` is a property below
_Buffer = bytes | bytearray | memoryview


class RandomSource(Protocol):
    """Anything with `getrandbits`, e.g. `random.Random(seed)` (no `random` import here: the
    sans-IO core imports this module and must not depend on `random`)."""

    def getrandbits(self, k: int, /) -> int: ...


@dataclass(frozen=True, slots=True, order=True)
class Uuid:
    """A 128-bit id as Kafka has it: most then least significant 64 bits, each signed."""

    most_significant_bits: int
    least_significant_bits: int

    ZERO: ClassVar[Uuid]
    ONE: ClassVar[Uuid]
    METADATA_TOPIC_ID: ClassVar[Uuid]

    @property
    def bytes(self) -> bytes:
        return UUID.pack(self.most_significant_bits, self.least_significant_bits)

    @classmethod
    def from_bytes(cls, data: _Buffer) -> Uuid:
        if len(data) != 16:
            raise ProtocolError(f"a Uuid is 16 bytes, got {len(data)}")
        msb, lsb = UUID.unpack(data)
        return cls(msb, lsb)

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self.bytes).rstrip(b"=").decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid({self})"

    @classmethod
    def from_string(cls, text: str) -> Uuid:
        """Parse Kafka's text form (`Uuid.fromString`); raises ProtocolError if it is not one."""
        if len(text) > 24:
            raise ProtocolError(f"{text[:24]!r}... is too long to be a base64 Uuid (22 chars)")
        try:
            stripped = text.rstrip("=")
            raw = base64.b64decode(
                stripped + "=" * (-len(stripped) % 4), altchars=b"-_", validate=True
            )
        except (binascii.Error, ValueError) as exc:
            raise ProtocolError(f"{text!r} is not a URL-safe base64 Uuid: {exc}") from None
        if len(raw) != 16:
            raise ProtocolError(
                f"{text!r} decodes to {len(raw)} bytes; a Uuid is 16 (22 base64 chars)"
            )
        return cls.from_bytes(raw)

    @classmethod
    def random(cls, rng: RandomSource | None = None) -> Uuid:
        """A random (version 4) Uuid that is never ZERO, ONE or starts with '-' (as Kafka's).

        `rng` (e.g. `random.Random(seed)`) makes it deterministic; default: the OS's CSPRNG.
        """
        while True:
            value = rng.getrandbits(128) if rng is not None else secrets.randbits(128)
            value &= ~(0xF << 76)
            value |= 0x4 << 76  # version 4
            value &= ~(0x3 << 62)
            value |= 0x2 << 62  # IETF variant
            u = cls.from_bytes(value.to_bytes(16, "big"))
            if u not in (cls.ZERO, cls.ONE) and not str(u).startswith("-"):
                return u


Uuid.ZERO = Uuid(0, 0)
Uuid.ONE = Uuid(0, 1)
Uuid.METADATA_TOPIC_ID = Uuid.ONE
METADATA_TOPIC_NAME = "__cluster_metadata"  # KRaft's one topic (partition 0)
METADATA_TOPIC_ID = Uuid.ONE


@dataclass(frozen=True, slots=True)
class RaftTopic:
    """The topic partition a KRaft replica replicates (Kafka passes `TopicPartition` and topic
    id to `KafkaRaftClient`): `__cluster_metadata` / Uuid(0, 1) for a controller; another one
    only to form a quorum with Kafka's `TestRaftServer` (`__raft_performance_test` /
    Uuid(0, 2)). Partition 0 always."""

    name: str = METADATA_TOPIC_NAME
    id: Uuid = Uuid.ONE

    @property
    def partition_dir(self) -> str:
        return f"{self.name}-0"


METADATA_RAFT_TOPIC = RaftTopic()
TEST_RAFT_TOPIC = RaftTopic("__raft_performance_test", Uuid(0, 2))
RAFT_TOPIC_KEY = "metaquorum.raft.topic"  # not a Kafka config: TestRaftServer interop only


def raft_topic_named(name: str) -> RaftTopic:
    """`metaquorum.raft.topic`: one of the two topics a KRaft replica can share with Kafka's."""
    for topic in (METADATA_RAFT_TOPIC, TEST_RAFT_TOPIC):
        if name.strip() == topic.name:
            return topic
    raise ValueError(
        f"{RAFT_TOPIC_KEY}={name!r} is not supported: use {METADATA_RAFT_TOPIC.name} (the "
        f"default) or {TEST_RAFT_TOPIC.name} (a quorum with Kafka's TestRaftServer)"
    )
