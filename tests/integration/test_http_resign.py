"""POST /resign?epoch=N on real nodes: the leader of epoch N resigns (EndQuorumEpoch) and another
voter leads in a higher epoch, the old leader keeps running as a follower; a wrong or stale
epoch is refused with 409 and changes nothing; off (403) unless metaquorum.http.resign.enable.
The operator's rolling restart uses it to move leadership before deleting the leader's pod."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.integration.quorum_fixture import FAST, running_quorum

pytestmark = pytest.mark.integration


def post(port: int, query: str) -> tuple[int, dict[str, object]]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/resign{query}", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_leader_resigns_on_request_and_another_voter_leads(tmp_path: Path) -> None:
    extra = {**FAST, "metaquorum.http.resign.enable": "true"}
    with running_quorum(tmp_path, 3, extra=extra) as q:
        leader, epoch = q.wait_for_leader(30)
        port = q.nodes[leader].http_port
        follower = next(n for n in q.voter_ids if n != leader)
        assert post(q.nodes[follower].http_port, f"?epoch={epoch}")[0] == 409  # not a leader
        assert post(port, f"?epoch={epoch + 1}")[0] == 409  # not that epoch
        assert post(port, "")[0] == 400
        assert q.leader() == (leader, epoch)  # nothing changed
        code, body = post(port, f"?epoch={epoch}")
        assert (code, body) == (202, {"resigned": epoch})
        new, new_epoch = q.wait_for_leader(20, exclude={leader}, min_epoch=epoch + 1)
        assert new != leader and new_epoch > epoch
        st = q.nodes[leader].status()
        assert st is not None and st["state"] == "follower" and st["leader_id"] == new
        assert post(port, f"?epoch={epoch}")[0] == 409  # a retry never unseats the new leader


def test_resign_is_off_unless_enabled(tmp_path: Path) -> None:
    with running_quorum(tmp_path, 1, extra=FAST) as q:
        leader, epoch = q.wait_for_leader(30)
        code, body = post(q.nodes[leader].http_port, f"?epoch={epoch}")
        assert code == 403 and "metaquorum.http.resign.enable=true" in str(body["error"])
        assert q.leader() == (leader, epoch)
