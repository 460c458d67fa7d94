"""core/rng.py draws what the running interpreter's own `random.Random` draws (the oracle is
the stdlib, not our code): the same numbers from the same seed and the same state left behind,
so a simulation seed gives the same trace whichever the simulator calls."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum.core.rng import randbelow, randint, randrange

BOUNDS = st.integers(min_value=-(2**70), max_value=2**70)


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**64),
    draws=st.lists(
        st.tuples(st.sampled_from(["below", "range", "int", "random"]), BOUNDS, BOUNDS),
        min_size=1,
        max_size=40,
    ),
)
def test_the_same_draws_and_state_as_random_random(
    seed: int, draws: list[tuple[str, int, int]]
) -> None:
    ours, theirs = random.Random(seed), random.Random(seed)
    for kind, x, y in draws:
        lo, hi = min(x, y), max(x, y)
        if kind == "below":
            n = abs(x) + 1
            assert randbelow(ours, n) == theirs.randrange(n)
        elif kind == "range":
            if lo == hi:
                hi += 1
            assert randrange(ours, lo, hi) == theirs.randrange(lo, hi)
        elif kind == "int":
            assert randint(ours, lo, hi) == theirs.randint(lo, hi)
        else:  # interleaved with what the simulator also draws directly
            assert ours.random() == theirs.random()
    assert ours.getstate() == theirs.getstate()


def test_small_bounds_redraw_as_the_stdlib_does() -> None:
    """Bounds just above a power of two redraw most often; n = 1 still draws one bit."""
    for n in (1, 2, 3, 5, 9, 17, 1000, 1025, 2**31 + 1):
        ours, theirs = random.Random(n), random.Random(n)
        assert [randbelow(ours, n) for _ in range(500)] == [theirs.randrange(n) for _ in range(500)]
        assert ours.getstate() == theirs.getstate()


def test_an_empty_range_is_refused_as_the_stdlib_refuses_it() -> None:
    rng = random.Random(1)
    for call in (
        lambda: randbelow(rng, 0),
        lambda: randrange(rng, 5, 5),
        lambda: randint(rng, 3, 2),
    ):
        with pytest.raises(ValueError):
            call()
    with pytest.raises(ValueError):
        rng.randint(3, 2)
