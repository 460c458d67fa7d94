"""Ask each pod's node about itself when no leader answers: GET /status on its HTTP listener.

Role: the input of the lost-majority check (quorum_lost.py). DescribeQuorum needs a leader; a
quorum that lost its majority has none, so the operator asks every existing pod's node
directly (`metaquorum.http.listener`, plain HTTP like the kubelet's probes): its log end offset
and epoch, whether it holds a snapshot, its own directory id, and the voter set it knows with
each voter's directory id (`voter_keys`; older nodes send none). `view_of` maps one answer
purely; `survey` does the requests, in parallel, each bounded by `timeout_s`.

Invariants: never raises; a pod that does not answer (or answers nonsense) is unreachable;
only pods that exist and are not terminating are asked.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from metaquorum_operator.model import Names
from metaquorum_operator.observed import ObservedPod
from metaquorum_operator.quorum_lost import NodeView

SURVEY_TIMEOUT_S = 1.5


def view_of(ordinal: int, doc: Mapping[str, Any] | None) -> NodeView:
    """One node's /status answer as a NodeView (unreachable when None or malformed)."""
    if doc is None:
        return NodeView(ordinal, reachable=False)
    try:
        return NodeView(
            ordinal,
            reachable=True,
            log_end_offset=int(doc["log_end_offset"]),
            log_end_epoch=int(doc.get("log_end_epoch") or 0),
            has_snapshot=doc.get("snapshot_id") is not None,
            voters=tuple(int(v) for v in doc.get("voters") or ()),
            leader_id=int(doc.get("leader_id", -1)),
            epoch=int(doc.get("epoch") or 0),
            directory_id=_str_or_none(doc.get("directory_id")),
            voter_directories=tuple(
                (int(k["id"]), str(k["directory_id"]))
                for k in doc.get("voter_keys") or ()
                if k.get("directory_id")
            ),
        )
    except (AttributeError, KeyError, TypeError, ValueError):
        return NodeView(ordinal, reachable=False)


def _str_or_none(value: Any) -> str | None:
    return str(value) if value else None


def _get(url: str, timeout_s: float) -> Mapping[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            doc = json.loads(r.read())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def survey(
    names: Names,
    http_port: int,
    pods: Sequence[ObservedPod],
    timeout_s: float = SURVEY_TIMEOUT_S,
) -> tuple[NodeView, ...]:
    live = [p for p in pods if not p.terminating]
    if not live:
        return ()

    def one(p: ObservedPod) -> NodeView:
        url = f"http://{names.pod_fqdn(p.ordinal)}:{http_port}/status"
        return view_of(p.ordinal, _get(url, timeout_s))

    with ThreadPoolExecutor(max_workers=min(9, len(live))) as pool:
        return tuple(pool.map(one, live))
