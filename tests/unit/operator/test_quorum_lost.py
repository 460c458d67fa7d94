"""Lost majority (issue 31): the check from the pods' own views, the planner stopping with
QuorumLost (a hypothesis property: with a majority lost, whatever else the world looks like,
no action but QuorumLost is planned — paused or not), the conditions, and the /status survey."""

from __future__ import annotations

import dataclasses
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from metaquorum_operator import planner, survey
from metaquorum_operator.membership import PendingChange, Progress
from metaquorum_operator.model import Controls
from metaquorum_operator.observed import (
    Observed,
    ObservedObject,
    ObservedPod,
    ObservedQuorum,
    ObservedStatefulSet,
    VoterKey,
)
from metaquorum_operator.quorum_lost import NodeView, formed_by_survey, lost_majority
from metaquorum_operator.status import compute_status

from tests.unit.operator.test_planner import desired
from tests.unit.operator.world import NAMES


def _pod(i: int, ready: bool = False, terminating: bool = False) -> ObservedPod:
    return ObservedPod(NAMES.pod(i), i, ready, terminating=terminating)


def _survivor(i: int, voters: tuple[int, ...] = (0, 1, 2), end: int = 500) -> NodeView:
    return NodeView(i, True, log_end_offset=end, log_end_epoch=4, voters=voters)


def _empty(i: int) -> NodeView:
    return NodeView(i, True)


def test_two_of_three_came_back_empty() -> None:
    pods = [_pod(0), _pod(1), _pod(2)]
    lost = lost_majority(pods, [_survivor(0), _empty(1), _empty(2)])
    assert lost is not None
    assert (lost.voters, lost.empty, lost.unreachable, lost.survivors) == (
        (0, 1, 2),
        (1, 2),
        (),
        (0,),
    )
    assert "came back empty: 1, 2" in lost.reason and "survivors: 0" in lost.reason


def test_an_even_voter_set_is_lost_with_half_of_it() -> None:
    """On the real kubelet (e2e recover test): the disk-loss rule removed voter 0's old directory,
    leaving voters (1, 2), then voter 2's disk went too: one of two left cannot lead, yet
    `2 * lost <= len(voters)` said the quorum was intact and QuorumLost never showed."""
    pods = [_pod(i) for i in range(3)]
    two = (1, 2)
    lost = lost_majority(pods, [_empty(0), _survivor(1, two), _empty(2)])
    assert lost is not None and lost.voters == two and lost.empty == (2,)
    assert lost.survivors == (1,)
    four = (0, 1, 2, 3)
    pods4 = [_pod(i) for i in range(4)]
    views4 = [_survivor(0, four), _survivor(1, four), _empty(2), _empty(3)]
    lost4 = lost_majority(pods4, views4)
    assert lost4 is not None and lost4.empty == (2, 3)
    assert lost_majority(pods4, [*views4[:3], _survivor(3, four)]) is None  # 3 of 4 lead


DIRS = ((0, "dir-0"), (1, "dir-1"), (2, "dir-2"))


def _keyed(i: int, directory: str, end: int = 500, epoch: int = 4) -> NodeView:
    """A node on directory `directory` whose log holds voters 0-2 on dir-0..dir-2."""
    return NodeView(
        i,
        True,
        log_end_offset=end,
        log_end_epoch=epoch,
        voters=(0, 1, 2),
        directory_id=directory,
        voter_directories=DIRS,
    )


def test_a_replacement_that_copied_the_log_as_an_observer_still_came_back_empty() -> None:
    """On the real kubelet (e2e recover test): voters 0 and 2 lost their volumes; survivor 1 won
    an election with 2's vote before 2's pod went, replacement 0 (a new directory) fetched the
    log from it as an observer, then 1 resigned. Judged by its log, 0 was no longer empty, so
    the quorum sat leaderless with QuorumIntact for good."""
    pods = [_pod(i) for i in range(3)]
    views = [_keyed(0, "new-0", end=507, epoch=5), _keyed(1, "dir-1", 507, 5), _keyed(2, "new-2")]
    lost = lost_majority(pods, views)
    assert lost is not None
    assert (lost.empty, lost.unreachable, lost.survivors) == ((0, 2), (), (1,))
    assert "came back empty: 0, 2" in lost.reason
    # the same logs on the voters' own directories: nothing is lost
    same = [_keyed(0, "dir-0", 507, 5), _keyed(1, "dir-1", 507, 5), _keyed(2, "dir-2")]
    assert lost_majority(pods, same) is None
    # one replaced voter of three is not a majority
    assert lost_majority(pods, [views[0], *same[1:]]) is None
    # a node that reports no directory ids (older software) is judged by its log alone
    bare = [dataclasses.replace(v, directory_id=None, voter_directories=()) for v in views]
    assert lost_majority(pods, bare) is None


def test_unreachable_and_missing_pods_count_too() -> None:
    pods = [_pod(0), _pod(2)]  # pod 1 does not exist
    lost = lost_majority(pods, [_survivor(0), NodeView(2, False)])
    assert lost is not None and lost.unreachable == (1, 2)
    assert (
        lost_majority(
            [_pod(0), _pod(1, terminating=True), _pod(2)], [_survivor(0), _survivor(1), _empty(2)]
        )
        is not None
    )


def test_no_claim_with_a_majority_or_without_a_survivor() -> None:
    pods = [_pod(0), _pod(1), _pod(2)]
    assert lost_majority(pods, [_survivor(0), _survivor(1), _empty(2)]) is None
    assert lost_majority(pods, [_empty(0), _empty(1), _empty(2)]) is None  # nothing known
    assert lost_majority(pods, [NodeView(i, False) for i in range(3)]) is None
    assert not formed_by_survey([_empty(0)]) and formed_by_survey([_survivor(0)])


def test_the_most_advanced_survivor_names_the_voters() -> None:
    # node 0 is behind and still knows {0, 1, 2}; node 3 saw the newer set {1, 2, 3}
    pods = [_pod(i) for i in range(4)]
    views = [_survivor(0, end=100), _empty(1), _empty(2), _survivor(3, (1, 2, 3), end=900)]
    lost = lost_majority(pods, views)
    assert lost is not None and lost.voters == (1, 2, 3) and lost.witness == 3
    assert lost.survivors == (3,)


def test_a_snapshot_only_log_is_not_empty() -> None:
    v = NodeView(1, True, log_end_offset=0, has_snapshot=True, voters=(0, 1, 2))
    assert not v.empty


SPEC_OBJECTS = ("ConfigMap", "HeadlessService", "ClientService", "PodDisruptionBudget")


@st.composite
def lost_worlds(draw: Any) -> tuple[Any, Observed, ObservedQuorum | None, Progress, list[NodeView]]:
    n = draw(st.integers(1, 5))
    voters = tuple(range(n))
    lost_count = draw(st.integers(n // 2 + 1, n))
    lost = draw(st.permutations(voters))[:lost_count]
    survivors = [v for v in voters if v not in lost]
    views: list[NodeView] = []
    pods: list[ObservedPod] = []
    for i in range(draw(st.integers(n, 6))):
        kind = "survivor" if i in survivors else draw(st.sampled_from(["empty", "down", "gone"]))
        if i >= n:
            kind = draw(st.sampled_from(["empty", "down", "gone", "observer"]))
        if kind == "gone":
            continue
        pods.append(
            ObservedPod(
                NAMES.pod(i),
                i,
                draw(st.booleans()),
                revision=draw(st.sampled_from(["a", "b"])),
                volume_refused=draw(st.sampled_from([None, None, "other cluster"])),
                manual_roll=draw(st.booleans()),
            )
        )
        if kind in ("survivor", "observer"):
            views.append(
                NodeView(
                    i,
                    True,
                    log_end_offset=draw(st.integers(1, 999)),
                    log_end_epoch=draw(st.integers(1, 9)),
                    voters=voters,
                )
            )
        elif kind == "empty":
            views.append(NodeView(i, True))
        else:
            views.append(NodeView(i, False))
    if not any(v.voters for v in views):
        # nothing knows the voters: a majority lost cannot be claimed; keep one survivor
        views.append(NodeView(n, True, log_end_offset=5, log_end_epoch=1, voters=voters))
        pods.append(ObservedPod(NAMES.pod(n), n, True))
        survivors.append(n)
    objects = {
        k: draw(st.sampled_from([None, ObservedObject("stale", ("uid-1",))])) for k in SPEC_OBJECTS
    }
    sts = draw(
        st.sampled_from(
            [None, ObservedStatefulSet(ObservedObject("stale", ("uid-1",)), replicas=len(pods))]
        )
    )
    observed = Observed(objects, sts, pods, formed=draw(st.booleans()))
    quorum = draw(st.sampled_from([None, ObservedQuorum("c", -1, 7, 0)]))
    pending = draw(st.sampled_from([None, PendingChange("add", VoterKey(n, "d"), issued_ms=0)]))
    progress = Progress(pending=pending, now_ms=draw(st.integers(0, 10**6)))
    want = desired(draw(st.integers(1, 5)), image=draw(st.sampled_from(["i:1", "i:2"])))
    want = dataclasses.replace(
        want, controls=Controls(paused=draw(st.booleans()), manual_roll=draw(st.booleans()))
    )
    # the check must hold: the voters as the best survivor knows them, a majority lost
    assert lost_majority(pods, views) is not None, (pods, views)
    return want, observed, quorum, progress, views


@settings(max_examples=300, deadline=None)
@given(lost_worlds())
def test_with_a_majority_lost_nothing_but_quorum_lost_is_planned(world: Any) -> None:
    want, observed, quorum, progress, views = world
    action = planner.plan(want, observed, quorum, progress, views)
    held = action.held if isinstance(action, planner.Paused) else action
    assert isinstance(held, planner.QuorumLost), action
    assert set(held.lost) <= set(held.voters) and 2 * len(held.lost) > len(held.voters)
    # and the status says so: QuorumLost True, Degraded True, nothing progressing
    s = compute_status(
        want.spec,
        NAMES,
        generation=1,
        observed=observed,
        quorum=quorum,
        action=action,
        now="t",
        previous={},
    )
    conds = {c["type"]: c for c in s["conditions"]}
    assert (conds["QuorumLost"]["status"], conds["QuorumLost"]["reason"]) == (
        "True",
        "MajorityLost",
    )
    assert conds["Progressing"]["status"] == "False"
    if not want.controls.paused:
        assert (conds["Degraded"]["status"], conds["Degraded"]["reason"]) == ("True", "QuorumLost")


def test_with_a_leader_the_survey_is_not_consulted() -> None:
    quorum = ObservedQuorum("c", 0, 7, 10)
    views = [_survivor(0), _empty(1), _empty(2)]
    action = planner.plan(desired(3), Observed(), quorum, Progress(), views)
    assert not isinstance(action, planner.QuorumLost)


def test_a_survivor_keeps_a_formed_quorum_formed() -> None:
    # the ConfigMap is gone (formed unknown), pods 1 and 2 not lost: it must come back "join"
    views = [_survivor(0), _survivor(1), NodeView(2, False)]
    pods = [_pod(0), _pod(1), _pod(2)]
    action = planner.plan(desired(3), Observed(pods=pods), None, Progress(), views)
    assert isinstance(action, planner.Apply) and action.key == "ConfigMap"
    assert action.manifest["data"]["bootstrap"] == "join"
    fresh = planner.plan(desired(3), Observed(pods=pods), None, Progress(), ())
    assert isinstance(fresh, planner.Apply) and fresh.manifest["data"]["bootstrap"] == "standalone"


def test_view_of_maps_the_nodes_status() -> None:
    doc = {
        "log_end_offset": 42,
        "log_end_epoch": 3,
        "snapshot_id": None,
        "voters": [0, 1, 2],
        "leader_id": -1,
        "epoch": 5,
    }
    v = survey.view_of(1, doc)
    assert (v.reachable, v.log_end_offset, v.voters, v.empty) == (True, 42, (0, 1, 2), False)
    assert survey.view_of(1, None) == NodeView(1, False)
    assert not survey.view_of(1, {"voters": "x"}).reachable
    assert survey.view_of(2, {**doc, "log_end_offset": 0, "voters": []}).empty
    assert (v.directory_id, v.voter_directories) == (None, ())  # older nodes send neither
    keyed = {
        **doc,
        "directory_id": "new-1",
        "voter_keys": [
            {"id": 0, "directory_id": "dir-0"},
            {"id": 1, "directory_id": "dir-1"},
            {"id": 2, "directory_id": None},  # a static voter
        ],
    }
    k = survey.view_of(1, keyed)
    assert (k.directory_id, k.voter_directories) == ("new-1", ((0, "dir-0"), (1, "dir-1")))
    assert k.replaced(k) and not survey.view_of(1, {**keyed, "directory_id": "dir-1"}).replaced(k)
    assert not survey.view_of(1, {**doc, "voter_keys": ["x"]}).reachable


def test_survey_get_over_real_http() -> None:
    class H(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"log_end_offset": 7, "voters": [0]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return

    server = HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        assert survey._get(f"http://127.0.0.1:{port}/status", 1.0) == {
            "log_end_offset": 7,
            "voters": [0],
        }
    finally:
        server.shutdown()
        server.server_close()
    assert survey._get(f"http://127.0.0.1:{port}/status", 0.5) is None  # nothing listens now
