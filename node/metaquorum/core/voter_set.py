"""The voter set: who votes, under which directory id, at which endpoints (KIP-595, KIP-853).

Role: Kafka's `VoterSet` / `VoterSet.VoterNode`. A voter is a `ReplicaKey` (id and, from
kraft.version 1 on, its directory id), its endpoints by listener name, and the kraft.version
range it supports. The set comes from the static `controller.quorum.voters` (no directory ids;
endpoints on the controller listener), from the bootstrap checkpoint's VotersRecord
(`format --standalone / --initial-controllers`), or, in a dynamic quorum, from the newest
VotersRecord in the log (`VoterSetHistory`, fed by the log-change hook).
Invariants: every set is non-empty; `voter_ids` equals the ids of `nodes` when nodes are known
(a set built from bare ids has no endpoints); `is_voter(key)` matches Kafka's
`VoterSet.isVoter`: same id, and the same directory id unless the voter has none.
History offsets strictly increase; `at(o)` is the entry with the greatest offset <= o (the
bootstrap set, at offset -1, covers everything before).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import field

from metaquorum.core.ids import ReplicaKey
from metaquorum.core.value import value
from metaquorum.core.vote_tally import majority_size
from metaquorum.protocol.messages.control import VotersRecord
from metaquorum.protocol.types import Uuid


@value
class ListenerEndpoint:
    """One named listener of a voter (Kafka's `Endpoints` entry)."""

    name: str
    host: str
    port: int


@value
class VoterNode:
    """Kafka's `VoterSet.VoterNode`: key, endpoints, supported kraft.version range."""

    key: ReplicaKey
    endpoints: tuple[ListenerEndpoint, ...] = ()
    kraft_version_min: int = 0
    kraft_version_max: int = 0

    def endpoint(self, listener: str) -> ListenerEndpoint | None:
        return next((e for e in self.endpoints if e.name == listener), None)


@value
class VoterSet:
    voter_ids: frozenset[int]
    nodes: tuple[VoterNode, ...] = field(default=(), compare=True)

    def __post_init__(self) -> None:
        # Empty only for a replica that knows no voters yet (Kafka's `VoterSet.empty()`: formatted
        # --no-initial-controllers, it learns them from the leader's log as an observer).
        if self.nodes and frozenset(n.key.id for n in self.nodes) != self.voter_ids:
            raise ValueError("a voter set's nodes must be exactly its voter ids")

    @classmethod
    def empty(cls) -> VoterSet:
        return cls(frozenset())

    @classmethod
    def of(cls, ids: Iterable[int]) -> VoterSet:
        return cls(frozenset(ids))

    @classmethod
    def from_nodes(cls, nodes: Iterable[VoterNode]) -> VoterSet:
        ordered = tuple(sorted(nodes, key=lambda n: n.key.id))
        if len({n.key.id for n in ordered}) != len(ordered):
            raise ValueError("a voter set names each voter id once")
        return cls(frozenset(n.key.id for n in ordered), ordered)

    @classmethod
    def from_endpoints(cls, listener: str, voters: Mapping[int, tuple[str, int]]) -> VoterSet:
        """A static quorum (`controller.quorum.voters`): no directory ids, kraft.version 0."""
        return cls.from_nodes(
            VoterNode(ReplicaKey(nid), (ListenerEndpoint(listener, host, port),))
            for nid, (host, port) in voters.items()
        )

    @classmethod
    def from_voters_record(cls, record: VotersRecord) -> VoterSet:
        """Kafka's `VoterSet.fromVotersRecord` (a zero directory id means none)."""
        return cls.from_nodes(
            VoterNode(
                ReplicaKey(
                    v.voter_id,
                    None if v.voter_directory_id == Uuid.ZERO else str(v.voter_directory_id),
                ),
                tuple(ListenerEndpoint(e.name, e.host, e.port) for e in v.endpoints),
                v.kraft_version_feature.min_supported_version,
                v.kraft_version_feature.max_supported_version,
            )
            for v in record.voters
        )

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.voter_ids

    def __len__(self) -> int:
        return len(self.voter_ids)

    @property
    def majority(self) -> int:
        return majority_size(len(self.voter_ids))

    def sorted_ids(self) -> list[int]:
        return sorted(self.voter_ids)

    def voter_keys(self) -> list[ReplicaKey]:
        """Every voter's key (ids only for a set of bare ids), by ascending id."""
        if self.nodes:
            return [n.key for n in self.nodes]
        return [ReplicaKey(i) for i in sorted(self.voter_ids)]

    def node(self, voter_id: int) -> VoterNode | None:
        for n in self.nodes:  # a loop, not next(genexpr): this runs several times per event
            if n.key.id == voter_id:
                return n
        return None

    def key_of(self, voter_id: int) -> ReplicaKey:
        """A voter's key as this set names it (no directory id in a static set, or for an id
        that is not a voter)."""
        node = self.node(voter_id)
        return node.key if node is not None else ReplicaKey(voter_id)

    def is_voter(self, key: ReplicaKey) -> bool:
        """Kafka's `VoterSet.isVoter`: the id votes and, when the voter has a directory id,
        the replica's directory id is that one (else it is an observer with a voter's id)."""
        if key.id not in self.voter_ids:
            return False
        node = self.node(key.id)
        return node is None or _is_voter_key(node, key)

    def voter_node_needs_update(self, updated: VoterNode) -> bool:
        """Kafka's `voterNodeNeedsUpdate`: `updated` is this set's voter (by key) and differs
        (endpoints or supported kraft.version range)."""
        node = self.node(updated.key.id)
        return node is not None and _is_voter_key(node, updated.key) and node != updated

    def update_voter(self, updated: VoterNode) -> VoterSet | None:
        """Kafka's `updateVoter`: the set with that voter replaced, or None if not a voter."""
        node = self.node(updated.key.id)
        if node is None or not _is_voter_key(node, updated.key):
            return None
        return VoterSet.from_nodes([updated if n is node else n for n in self.nodes])

    def update_voter_ignoring_directory_id(self, updated: VoterNode) -> VoterSet | None:
        """Kafka's `updateVoterIgnoringDirectoryId` (kraft.version 0: the set has no directory
        ids yet): the set with that id's entry replaced, or None if the id does not vote."""
        if updated.key.id not in self.voter_ids:
            return None
        nodes = self.nodes or tuple(VoterNode(k) for k in self.voter_keys())
        return VoterSet.from_nodes([updated if n.key.id == updated.key.id else n for n in nodes])

    def supports_version(self, version: int) -> bool:
        """Every voter's supported kraft.version range covers `version`."""
        nodes = self.nodes or tuple(VoterNode(k) for k in self.voter_keys())
        return all(n.kraft_version_min <= version <= n.kraft_version_max for n in nodes)

    def add_voter(self, voter: VoterNode) -> VoterSet | None:
        """Kafka's `addVoter`: the set with `voter`, or None if its id already votes."""
        if voter.key.id in self.voter_ids:
            return None
        return VoterSet.from_nodes([*self.nodes, voter])

    def remove_voter(self, key: ReplicaKey) -> VoterSet | None:
        """Kafka's `removeVoter`: the set without `key`, or None if `key` is not a voter or
        is the last one."""
        node = self.node(key.id)
        if node is None or node.key != key or len(self.nodes) == 1:
            return None
        return VoterSet.from_nodes(n for n in self.nodes if n is not node)

    def to_voters_record(self) -> VotersRecord:
        """Kafka's `toVotersRecord` (version 0), voters by ascending id."""
        return VotersRecord(
            version=0,
            voters=[
                VotersRecord.Voter(
                    voter_id=n.key.id,
                    voter_directory_id=(
                        Uuid.ZERO
                        if n.key.directory_id is None
                        else Uuid.from_string(n.key.directory_id)
                    ),
                    endpoints=[
                        VotersRecord.Endpoint(name=e.name, host=e.host, port=e.port)
                        for e in n.endpoints
                    ],
                    kraft_version_feature=VotersRecord.KRaftVersionFeature(
                        min_supported_version=n.kraft_version_min,
                        max_supported_version=n.kraft_version_max,
                    ),
                )
                for n in self.nodes
            ],
        )

    def endpoints(self, listener: str) -> dict[int, ListenerEndpoint]:
        """Each voter's endpoint on `listener` (voters without one are left out)."""
        out: dict[int, ListenerEndpoint] = {}
        for n in self.nodes:
            ep = n.endpoint(listener)
            if ep is not None:
                out[n.key.id] = ep
        return out


def _is_voter_key(node: VoterNode, key: ReplicaKey) -> bool:
    """Kafka's `VoterNode.isVoter`: same id, and the same directory id unless it has none."""
    return node.key.id == key.id and node.key.directory_id in (None, key.directory_id)


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

    def offset_at(self, offset: int) -> int:
        """The offset of the set in effect at `offset` (-1: the start-up set)."""
        return self._offsets[max(0, bisect_right(self._offsets, offset) - 1)]

    def latest_offset(self) -> int:
        return self._offsets[-1]

    def changes_from(self, offset: int) -> int:
        """How many sets written at or after `offset` change the membership (their ids differ
        from the set before them; a restated set, e.g. new endpoints, is not a change)."""
        first = max(1, bisect_left(self._offsets, offset))
        sets = self._sets
        return sum(1 for i in range(first, len(sets)) if sets[i].voter_ids != sets[i - 1].voter_ids)

    def reset(self, offset: int, voters: VoterSet) -> None:
        """Start over from one set at `offset` (a snapshot installed or loaded)."""
        self._offsets = [offset]
        self._sets = [voters]

    def truncate_from(self, offset: int) -> None:
        """Forget sets written at or after `offset` (log truncation); the first one stays."""
        while len(self._offsets) > 1 and self._offsets[-1] >= offset:
            self._offsets.pop()
            self._sets.pop()
