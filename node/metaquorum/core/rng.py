"""The randomness the core may use: an injected source, never the `random` module itself.

Role: the driver (runtime or simulator) passes a seeded `random.Random`; the core only sees
`RandomSource`, so the import-linter contract "core draws no randomness of its own" holds and a
simulation seed reproduces every election timeout and backoff. `randbelow`, `randrange` and
`randint` draw exactly what `random.Random`'s methods of those names draw from the same state
(CPython's `_randbelow_with_getrandbits`: the bit length of the bound, redrawn while the draw
is out of range), as compiled code: the stdlib's are three interpreted frames per draw, ~10% of
a simulated event once the simulator was compiled (docs/performance.md, round 10).

Invariants: the same source state gives the same numbers and leaves the same state as
`random.Random.randrange` / `randint` (tests/unit/core/test_rng.py checks that against the
running interpreter's own `random`); an empty range raises ValueError as they do.
"""

from __future__ import annotations

from typing import Protocol


class RandomSource(Protocol):
    """The subset of `random.Random` the core calls."""

    def getrandbits(self, k: int, /) -> int: ...


def randbelow(rng: RandomSource, n: int) -> int:
    """A number in [0, n): `random.Random._randbelow_with_getrandbits`'s draws."""
    if n <= 0:
        raise ValueError(f"empty range for randrange() (bound {n})")
    k = n.bit_length()
    r: int = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


def randrange(rng: RandomSource, start: int, stop: int) -> int:
    """`rng.randrange(start, stop)` (step 1), drawn the same way."""
    return start + randbelow(rng, stop - start)


def randint(rng: RandomSource, a: int, b: int) -> int:
    """`rng.randint(a, b)`: a number in [a, b], drawn the same way."""
    return a + randbelow(rng, b - a + 1)
