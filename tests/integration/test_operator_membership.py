"""The operator's quorum side against real node processes on loopback (issue 16).

What the planner reads and does, checked on the real node rather than the unit tests' model:
`observe.describe` maps DescribeQuorum v2 (directory ids, log end offsets, the leader's
timestamps) so that `membership.caught_up` holds for a caught-up observer and stops holding for
a killed voter within the fetch timeout; `observe.change` adds a caught-up observer (answered once
committed) and removes a voter, the leader itself included (it resigns, a new leader follows);
the planner's `safe_voter_set` agrees with what the real quorum then does. The node's own
auto-join is off, as the operator configures it. The chart's Grafana dashboard queries only
raft-metrics a real leader exports.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from metaquorum.runtime.local_quorum import LocalQuorum
from metaquorum_operator import observe
from metaquorum_operator.membership import CatchUp, caught_up, healthy_keys, safe_voter_set
from metaquorum_operator.observed import ObservedQuorum, VoterKey
from metaquorum_operator.planner import AddVoter, RemoveVoter

from tests.integration.quorum_fixture import FAST, running_quorum

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
DASHBOARD = (
    Path(__file__).resolve().parents[2] / "charts/metaquorum/dashboards/metaquorum-raft.json"
)
SETTINGS = CatchUp(max_lag_ms=int(FAST["controller.quorum.fetch.timeout.ms"]))


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[LocalQuorum]:
    # node 1 --standalone, nodes 2 and 3 --no-initial-controllers, no auto-join
    extra = {**FAST, "controller.quorum.auto.join.enable": "false"}
    with running_quorum(tmp_path, 3, extra=extra, standalone=True) as q:
        yield q


def bootstrap(q: LocalQuorum) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in q.nodes.values())


def look(q: LocalQuorum) -> ObservedQuorum | None:
    return observe.describe(bootstrap(q), timeout_s=3).quorum


def until(q: LocalQuorum, cond: object, timeout_s: float, what: str) -> ObservedQuorum:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = look(q)
        if last is not None and last.has_leader and callable(cond) and cond(last):
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; last {last}")


def key_of(q: ObservedQuorum, nid: int) -> VoterKey:
    return next(r.key for r in (*q.voters, *q.observers) if r.id == nid)


def test_the_operator_grows_and_shrinks_a_real_quorum_one_safe_change_at_a_time(
    quorum: LocalQuorum,
) -> None:
    q = quorum

    def observers_caught_up(o: ObservedQuorum) -> bool:
        ids = {r.id for r in o.observers if caught_up(r, o, SETTINGS)}
        return ids == {2, 3}

    seen = until(q, observers_caught_up, 60, "nodes 2 and 3 caught up as observers")
    assert [v.id for v in seen.voters] == [1]
    assert all(len(r.directory_id) == 22 for r in (*seen.voters, *seen.observers))
    assert seen.leader() is not None and seen.leader().last_caught_up_ms > 0  # type: ignore[union-attr]
    t0 = time.monotonic()
    for nid in (2, 3):
        key = key_of(seen, nid)
        assert safe_voter_set(seen.voter_keys() | {key}, healthy_keys(seen, SETTINGS))
        observe.change(AddVoter(key, "test"), bootstrap(q), ("127.0.0.1", q.nodes[nid].port))
        seen = until(q, lambda o, k=key: k in o.voter_keys(), 10, f"voter {nid}")
    print(f"two adds: {time.monotonic() - t0:.2f} s")
    seen = until(
        q, lambda o: len(healthy_keys(o, SETTINGS) & o.voter_keys()) == 3, 20, "3 caught up"
    )
    # a killed voter stops counting as caught up within the fetch timeout
    victim = next(v.id for v in seen.voters if v.id != seen.leader_id)
    q.kill(victim)
    seen = until(
        q,
        lambda o: victim not in {k.id for k in healthy_keys(o, SETTINGS)},
        10,
        f"voter {victim} no longer caught up",
    )
    others = seen.voter_keys() - {key_of(seen, victim)}
    leader_key = key_of(seen, seen.leader_id)
    # the planner would not remove a live voter now: {victim, other} has 1 of 2 caught up
    assert not safe_voter_set(seen.voter_keys() - {leader_key}, healthy_keys(seen, SETTINGS))
    # removing the dead one leaves 2 of 2 caught up: safe, and the real quorum commits it
    assert safe_voter_set(others, healthy_keys(seen, SETTINGS))
    observe.change(RemoveVoter(key_of(seen, victim), "test"), bootstrap(q), ("", 0))
    seen = until(q, lambda o: o.voter_keys() == others, 10, "the dead voter removed")
    # the leader removes itself: it resigns once committed and the other voter leads
    old_leader = seen.leader_id
    observe.change(RemoveVoter(key_of(seen, old_leader), "test"), bootstrap(q), ("", 0))
    seen = until(
        q, lambda o: o.leader_id not in (-1, old_leader) and len(o.voters) == 1, 20, "new leader"
    )
    assert old_leader not in {v.id for v in seen.voters}


def test_the_charts_dashboard_uses_metrics_the_leader_exports(quorum: LocalQuorum) -> None:
    q = quorum
    seen = until(q, lambda o: o.leader_id == 1, 30, "node 1 leading")
    assert seen.leader_id == 1
    with urllib.request.urlopen(f"http://127.0.0.1:{q.nodes[1].http_port}/metrics") as r:
        exported = set(re.findall(r"^(kafka_server_raft_metrics_\w+)", r.read().decode(), re.M))
    exprs = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"kafka_server_raft_metrics_\w+", e)}
    assert len(used) >= 12
    assert used <= exported, sorted(used - exported)
