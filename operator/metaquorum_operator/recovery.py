"""Recovery from a lost majority, acted on (issue 31): the `metaquorum.dev/recover-from`
annotation naming the survivor makes the operator run `metaquorum storage recover` on that
pod's volume and let the quorum re-form around it.

Role: pure planning of the recovery (planner rule 0b calls `start` and `step`), the ConfigMap
value that carries a request to the pod, and the shell the format init container runs for it
(RECOVER_SCRIPT, inside node_config.FORMAT_SCRIPT). How it goes (docs/operator.md, "Lost majority"):

1. the quorum is lost (quorum_lost.py) and the annotation names the survivor check_survivor
   accepts (recover_from.py: a surviving voter holding at least as much as every other);
2. `start`: action Recover writes `recover-from: "<ordinal> <token>"` into the quorum's
   ConfigMap (the token is the survivor pod's uid at that moment), then deletes that pod, whose
   uid is the token (a precondition: no other incarnation is deleted);
3. its replacement's format init container finds the request for its node id and a volume whose
   marker file (`<data dir>/recovered-from`) does not hold the token: it runs
   `metaquorum storage recover --data-dir <metadata.log.dir>` (the survivor's whole log kept, a
   voter set of it alone in a higher epoch, kraft.version 1; node/metaquorum/backup/recover.py),
   then writes the token to the marker, so a restart of the pod never recovers twice;
4. `step` waits while that happens: the node restarts, leads alone; once a leader answers, the
   planner's usual rules run again, the ConfigMap is rendered without the request (so a later
   empty volume of that pod is never "recovered"), and the pods that came back empty, observers
   already, are added as voters one at a time as usual;
5. if the replacement came up without recovering (its ConfigMap volume was older than the
   write) — it answers /status with a voter set other than itself alone — `step` asks again
   with the new pod's uid; a refused recovery (the init container's one line) is `Refused`
   (RecoveryFailed), nothing else is done.

Invariants: nothing happens without the annotation naming an accepted survivor; only the
named survivor's pod is deleted, and only the incarnation whose uid is the token; while a
request is in the ConfigMap and no leader answers, the planner does nothing else (no object is
re-rendered, which would drop the request); an empty volume is never recovered (the script runs
only on a formatted volume, after the cluster/node checks); pure: no IO.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from metaquorum_operator.actions import Action, Recover, Refused, Wait
from metaquorum_operator.model import RECOVER_FROM_ANNOTATION, Names
from metaquorum_operator.observed import Observed, ObservedPod
from metaquorum_operator.quorum_lost import NodeView

RECOVER_KEY = "recover-from"  # the ConfigMap's key carrying a Request
MARKER = "recovered-from"  # in the PVC's root, beside the metadata log dir

# Runs in the format init container on a formatted volume (node_config.FORMAT_SCRIPT), with $cfg
# the mounted ConfigMap and refuse() its one-line refusal.
RECOVER_SCRIPT = f"""rec=$(cat "$cfg/{RECOVER_KEY}" 2>/dev/null || true)
if [ -n "$rec" ] && [ "${{rec%% *}}" = "$METAQUORUM_NODE_ID" ]; then
  mark="$METAQUORUM_METADATA_LOG_DIR/../{MARKER}"
  if [ "$(cat "$mark" 2>/dev/null || true)" != "${{rec#* }}" ]; then
    out=$(metaquorum storage recover --data-dir "$METAQUORUM_METADATA_LOG_DIR" 2>&1) \\
      || refuse "storage recover: $(printf '%s\\n' "$out" | tail -n 1)"
    echo "$out"
    printf '%s\\n' "${{rec#* }}" > "$mark"
  fi
fi
"""


@dataclass(frozen=True, slots=True)
class Request:
    """A recovery asked through the ConfigMap: re-form around `ordinal`; `token` is the uid of
    the pod incarnation to be replaced."""

    ordinal: int
    token: str

    def value(self) -> str:
        return f"{self.ordinal} {self.token}"


def parse(raw: str) -> Request | None:
    ordinal, _, token = raw.strip().partition(" ")
    if not ordinal.isdigit() or not token.strip():
        return None
    return Request(int(ordinal), token.strip())


# renders the whole ConfigMap carrying a request (the planner's Desired.manifests)
Render = Callable[[str], Mapping[str, Any]]


def _recover(pod: str, request: Request, render: Render, reason: str) -> Recover:
    return Recover(pod, request.ordinal, request.token, dict(render(request.value())), reason)


def _pod(observed: Observed, ordinal: int) -> ObservedPod | None:
    return next((p for p in observed.pods if p.ordinal == ordinal), None)


def start(names: Names, observed: Observed, ordinal: int, line: str, render: Render) -> Action:
    """The survivor `ordinal` is accepted (`line`, check_survivor's): ask for its recovery."""
    pod = _pod(observed, ordinal)
    if pod is None or pod.terminating or not pod.uid:
        return Wait(f"{line}; waiting for pod {names.pod(ordinal)} to exist")
    return _recover(
        names.pod(ordinal),
        Request(ordinal, pod.uid),
        render,
        f"recovering the lost quorum from {names.pod(ordinal)} ({RECOVER_FROM_ANNOTATION}): "
        "restarting it to run `metaquorum storage recover` on its volume; what only the lost "
        "voters held is lost",
    )


def step(
    names: Names, observed: Observed, request: Request, nodes: Sequence[NodeView], render: Render
) -> Action:
    """A request is in the ConfigMap and no leader answers: what to do next."""
    name = names.pod(request.ordinal)
    pod = _pod(observed, request.ordinal)
    if pod is not None and pod.uid == request.token and not pod.terminating:
        return _recover(name, request, render, f"recovering from {name}: restarting it")
    if pod is not None and pod.volume_refused:
        return Refused(f"recovering from {name}: {pod.volume_refused}", code="RecoveryFailed")
    view = next((v for v in nodes if v.ordinal == request.ordinal), None)
    if pod is None or pod.terminating or view is None or not view.reachable:
        return Wait(f"recovering from {name}: waiting for it to restart on its recovered volume")
    if view.voters == (request.ordinal,):
        return Wait(f"recovering from {name}: re-formed alone, waiting for it to lead")
    # it restarted without recovering (the request reached its volume too late): ask again
    return _recover(
        name,
        Request(request.ordinal, pod.uid),
        render,
        f"recovering from {name}: it restarted without recovering (voters "
        f"{', '.join(map(str, view.voters)) or 'none'}); restarting it again",
    )
