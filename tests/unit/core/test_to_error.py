"""core/rpc_common.to_error: a wire error code to Kafka's `Errors` member, as `Errors(code)` gives
it (the table replaced that call on the hot path), and UNKNOWN_SERVER_ERROR for a code Kafka 4.3
does not define."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from metaquorum.core.rpc_common import to_error
from metaquorum.protocol.errors import Errors


def test_every_defined_code_maps_to_its_member() -> None:
    for e in Errors:
        assert to_error(int(e)) is e is Errors(int(e))


@given(st.integers(-(2**15), 2**15 - 1))
def test_any_int16_code_maps_as_errors_would(code: int) -> None:
    try:
        expected = Errors(code)
    except ValueError:
        expected = Errors.UNKNOWN_SERVER_ERROR
    assert to_error(code) is expected
