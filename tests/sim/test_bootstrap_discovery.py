"""The kraft.version 1 mixes configure every replica with `controller.quorum.bootstrap.servers`
(sim/membership.py): replicas without a leader ask bootstrap addresses by Kafka's pseudo-ids
(core/discovery.py) and the simulator routes those requests to the node at the endpoint and
the answers back from the pseudo-id. This checks that the path is taken, under every fault of
the mix, with no invariant broken."""

from __future__ import annotations

from dataclasses import replace

import pytest
from metaquorum.core.effects import SendRequest
from metaquorum.core.request_manager import RequestManager
from metaquorum.sim import api
from metaquorum.sim.membership import Membership
from metaquorum.sim.params import scenario_params

pytestmark = pytest.mark.simulation


def test_membership_seeds_discover_leaders_through_bootstrap_addresses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    routed = {"pseudo": 0, "answered": 0}
    original = Membership.route

    def counting(self: Membership, nid: int, request: SendRequest) -> int:
        if request.destination < -1:
            routed["pseudo"] += 1
        return original(self, nid, request)

    original_response = RequestManager.on_response

    def answered(
        self: RequestManager, destination: int, cid: int, success: bool, now_ms: int
    ) -> bool:
        taken = original_response(self, destination, cid, success, now_ms)
        if taken and success and destination < -1:
            routed["answered"] += 1  # an answer the core took as coming from a pseudo-id
        return taken

    monkeypatch.setattr(Membership, "route", counting)
    monkeypatch.setattr(RequestManager, "on_response", answered)
    base = scenario_params("membership")
    for seed in range(10):
        result = api.run_seed(replace(base, seed=seed), "membership")
        assert result.violations == [], (seed, result.violations[:1])
    assert routed["pseudo"] > 100 and routed["answered"] > 50, routed
