"""The voter set and its history by offset (KIP-595 static voters; room for KIP-853).

Role: which replica ids vote, as of which log offset. Today the set comes from the static
`controller.quorum.voters` or the bootstrap checkpoint and never changes; `VoterSetHistory`
already answers "the voter set at offset o" and "the latest set" so that VotersRecord-driven
changes (a later issue) only add entries.
Invariants: history offsets strictly increase; every set is non-empty; `at(o)` is the entry
with the greatest offset <= o (the bootstrap set, at offset -1, covers everything before).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from metaquorum.core.vote_tally import majority_size


@dataclass(frozen=True, slots=True)
class VoterSet:
    voter_ids: frozenset[int]

    def __post_init__(self) -> None:
        if not self.voter_ids:
            raise ValueError("a voter set needs at least one voter")

    @classmethod
    def of(cls, ids: Iterable[int]) -> VoterSet:
        return cls(frozenset(ids))

    @classmethod
    def parse_quorum_voters(cls, value: str) -> VoterSet:
        """Ids of `controller.quorum.voters` = `{id}@{host}:{port},...`."""
        ids: set[int] = set()
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            node, sep, _ = item.partition("@")
            if not sep or not node.isdigit():
                raise ValueError(f"bad controller.quorum.voters entry {item!r}: want id@host:port")
            ids.add(int(node))
        return cls(frozenset(ids))

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.voter_ids

    def __len__(self) -> int:
        return len(self.voter_ids)

    @property
    def majority(self) -> int:
        return majority_size(len(self.voter_ids))

    def sorted_ids(self) -> list[int]:
        return sorted(self.voter_ids)


class VoterSetHistory:
    __slots__ = ("_offsets", "_sets")

    def __init__(self, bootstrap: VoterSet):
        self._offsets: list[int] = [-1]
        self._sets: list[VoterSet] = [bootstrap]

    def add_at(self, offset: int, voters: VoterSet) -> None:
        if offset <= self._offsets[-1]:
            raise ValueError(f"voter set at {offset} is not after {self._offsets[-1]}")
        self._offsets.append(offset)
        self._sets.append(voters)

    def at(self, offset: int) -> VoterSet:
        return self._sets[max(0, bisect_right(self._offsets, offset) - 1)]

    def latest(self) -> VoterSet:
        return self._sets[-1]

    def truncate_from(self, offset: int) -> None:
        """Forget sets written at or after `offset` (log truncation); the bootstrap stays."""
        while len(self._offsets) > 1 and self._offsets[-1] >= offset:
            self._offsets.pop()
            self._sets.pop()
