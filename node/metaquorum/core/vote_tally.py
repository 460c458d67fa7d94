"""Vote tally of one election or pre-election (Kafka's `EpochElection`; KIP-595 §Vote).

Role: which voters granted, which rejected, and whether the election is won or lost.
Invariants: a voter is in at most one of `granted`/`rejected`; the local voter has granted
(self-vote) from the start; won iff |granted| >= majority, lost iff a majority can no longer
be reached. Immutable: `record` returns a new tally.
"""

from __future__ import annotations

from metaquorum.core.value import value


def majority_size(n_voters: int) -> int:
    return n_voters // 2 + 1


@value
class VoteTally:
    voters: frozenset[int]
    granted: frozenset[int]
    rejected: frozenset[int] = frozenset()

    @classmethod
    def start(cls, voters: frozenset[int], local_id: int) -> VoteTally:
        granted = frozenset({local_id}) if local_id in voters else frozenset()
        return cls(voters, granted)

    def record(self, voter_id: int, granted: bool) -> VoteTally:
        """Record one answer; answers from non-voters and repeated answers are ignored."""
        if voter_id not in self.voters or voter_id in self.granted or voter_id in self.rejected:
            return self
        if granted:
            return VoteTally(self.voters, self.granted | {voter_id}, self.rejected)
        return VoteTally(self.voters, self.granted, self.rejected | {voter_id})

    def forget(self, voter_id: int) -> VoteTally:
        """Drop a voter's rejection so that it is asked again."""
        return VoteTally(self.voters, self.granted, self.rejected - {voter_id})

    @property
    def is_granted(self) -> bool:
        return len(self.granted) >= majority_size(len(self.voters))

    @property
    def is_rejected(self) -> bool:
        return len(self.rejected) > len(self.voters) - majority_size(len(self.voters))

    def unrecorded(self) -> frozenset[int]:
        return self.voters - self.granted - self.rejected
