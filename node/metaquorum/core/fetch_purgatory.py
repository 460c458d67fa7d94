"""Parked Fetch long-polls on the leader (Kafka's `FuturePurgatory` for fetches; KIP-1166).

Role: hold a follower's Fetch that found nothing to return until (a) the log grows past its
fetch offset, (b) the high watermark moves past the HW the follower reported (KIP-1166; a follower
that reported none, i.e. an older Fetch version, only waits for data), or
(c) its `MaxWaitMs` expires. Invariants: each parked fetch completes exactly once; completion
order is the order of parking; a newer fetch from the same replica replaces the older one
(the older is answered at once so the follower is never left without a response).
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class ParkedFetch(Generic[T]):
    """One parked Fetch (immutable by convention). A plain class, not a dataclass, so the core
    stays compilable by mypyc, which cannot compile a generic dataclass (docs/performance.md)."""

    __slots__ = (
        "correlation_id",
        "expire_ms",
        "fetch_offset",
        "follower_high_watermark",
        "replica_id",
        "request",
    )

    def __init__(  # noqa: PLR0917 (the positional order of the dataclass it replaced)
        self,
        replica_id: int,
        correlation_id: int,
        fetch_offset: int,
        follower_high_watermark: int | None,
        expire_ms: int,
        request: T,
    ) -> None:
        self.replica_id = replica_id
        self.correlation_id = correlation_id
        self.fetch_offset = fetch_offset
        self.follower_high_watermark = follower_high_watermark
        self.expire_ms = expire_ms
        self.request = request

    def __repr__(self) -> str:
        return (
            f"ParkedFetch(replica_id={self.replica_id}, correlation_id={self.correlation_id}, "
            f"fetch_offset={self.fetch_offset}, expire_ms={self.expire_ms})"
        )


class FetchPurgatory(Generic[T]):
    __slots__ = ("_parked",)

    def __init__(self) -> None:
        self._parked: dict[int, ParkedFetch[T]] = {}

    def __len__(self) -> int:
        return len(self._parked)

    def park(self, fetch: ParkedFetch[T]) -> ParkedFetch[T] | None:
        """Park `fetch`; returns the replaced older fetch of the same replica, if any."""
        old = self._parked.pop(fetch.replica_id, None)
        self._parked[fetch.replica_id] = fetch
        return old

    def complete(
        self, end_offset: int, high_watermark: int | None, now_ms: int
    ) -> list[ParkedFetch[T]]:
        """Remove and return every fetch that now has an answer or has expired."""
        done: list[ParkedFetch[T]] = []
        for rid, f in list(self._parked.items()):
            follower_hw = f.follower_high_watermark
            hw_moved = (
                high_watermark is not None
                and follower_hw is not None
                and follower_hw < high_watermark
            )
            if end_offset > f.fetch_offset or hw_moved or now_ms >= f.expire_ms:
                done.append(f)
                del self._parked[rid]
        return done

    def drain(self) -> list[ParkedFetch[T]]:
        done = list(self._parked.values())
        self._parked.clear()
        return done

    def next_expiry_ms(self) -> int | None:
        return min((f.expire_ms for f in self._parked.values()), default=None)
