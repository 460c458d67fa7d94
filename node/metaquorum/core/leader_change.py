"""The value of a LEADER_CHANGE log entry (KIP-595 §LeaderChangeMessage, Kafka's
`LeaderChangeMessage`: LeaderId, Voters = the current voter ids, GrantingVoters = the voters
that granted the election).

Role: the core never sees bytes of the wire or the disk, but its log entries carry a value; a
LeaderChange entry's value is this small text form, built by the leader when it opens its
epoch, and mapped to/from Kafka's control record by the runtime (`records_bridge`).
Invariants: `decode(encode(v)) == v`; ids are sorted; the legacy form (only the granting ids,
comma separated, as logs written before this module hold in memory) decodes with
`leader_id = -1` and no voters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def _ids(text: str) -> tuple[int, ...]:
    return tuple(sorted(int(v) for v in text.split(",") if v.strip().lstrip("-").isdigit()))


@dataclass(frozen=True, slots=True)
class LeaderChangeValue:
    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]

    @classmethod
    def of(
        cls, leader_id: int, voters: Iterable[int], granting_voters: Iterable[int]
    ) -> LeaderChangeValue:
        return cls(leader_id, tuple(sorted(voters)), tuple(sorted(granting_voters)))

    def encode(self) -> bytes:
        def csv(ids: tuple[int, ...]) -> str:
            return ",".join(str(v) for v in ids)

        return (
            f"leader={self.leader_id};voters={csv(self.voters)};"
            f"granting={csv(self.granting_voters)}"
        ).encode()

    @classmethod
    def decode(cls, value: bytes) -> LeaderChangeValue:
        text = value.decode("utf-8", "replace")
        if "=" not in text:  # legacy: the granting ids only
            return cls(-1, (), _ids(text))
        fields = dict(part.partition("=")[::2] for part in text.split(";"))
        leader = fields.get("leader", "-1").strip()
        return cls(
            int(leader) if leader.lstrip("-").isdigit() else -1,
            _ids(fields.get("voters", "")),
            _ids(fields.get("granting", "")),
        )
