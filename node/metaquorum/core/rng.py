"""The randomness the core may use: an injected source, never the `random` module itself.

The driver (runtime or simulator) passes a seeded `random.Random`; the core only sees this
Protocol, so the import-linter contract "core draws no randomness of its own" holds and a
simulation seed reproduces every election timeout and backoff.
"""

from __future__ import annotations

from typing import Protocol


class RandomSource(Protocol):
    """The subset of `random.Random` the core calls."""

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int: ...
