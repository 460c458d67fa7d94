"""Errors a client of the node's own API sees (Produce/append through `client_api.py` and
`Driver.append`), beside the admin client's (`metaquorum.admin.client.AdminError`).

Invariant: an append that fails with `NotLeaderError` was never acknowledged; the client may
retry it at `leader_id` (or anywhere, when -1).
"""

from __future__ import annotations


class NotLeaderError(Exception):
    """This node cannot take the append: it is not (or no longer) the leader, it is stopping,
    or its storage failed. `leader_id` is the leader it knows of, -1 when none."""

    def __init__(self, reason: str, leader_id: int) -> None:
        super().__init__(f"{reason} (leader {leader_id})")
        self.reason = reason
        self.leader_id = leader_id
