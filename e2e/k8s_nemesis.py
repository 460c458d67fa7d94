"""The Kubernetes nemesis's schedules: seeded faults applied to the cluster under the quorum.

Role: `schedule(seed)` draws one schedule: 2 faults, each held for a while, then healed; the
first fault's kind is `KINDS[seed % len(KINDS)]`, so any `len(KINDS)` consecutive seeds inject
every kind at least once. Kinds (applied by k8s_faults.py on the real-kubelet target):
- `isolate`: the target pod cut from the two others, both ways (iptables in the pods' own
  network namespaces): a 1/2 split, the target in the minority;
- `bridge`: the two others cut from each other, the target still sees both (a 2/1 split in
  which no side is a clean majority without the target);
- `one-way`: the target's packets to the others dropped, theirs to it delivered;
- `freeze`: the target's container frozen (containerd pauses its task: the cgroup freezer),
  then thawed;
- `kill`: kill -9 of the target's container (the kubelet restarts it in place);
- `apiserver`: kube-apiserver stopped for `hold` seconds while the target's container is
  killed (the kubelet restarts it without the API; the operator sees nothing, must not act on
  stale data and resumes cleanly when the API is back);
- `agents`: the kubelet and containerd stopped for `hold` seconds and started again under the
  running pods (containerd's shims keep the containers running);
- `reboot`: a power cut of the node: the kubelet stopped, every container and sandbox killed
  at once, containerd stopped; `hold` seconds later containerd and the kubelet start again
  and recreate every pod's sandbox (new pod IPs);
- `pvc-lost`: the target's PVC and pod deleted while another voter is frozen for `hold`
  seconds (no majority meanwhile); the operator replaces the voter (a new directory id).
The operator's own work under a fault (`LONG_KINDS`, `make e2e-nemesis-k8s` only: each takes a
minute or more):
- `operator-cut`: the operator's pod cut from every quorum pod (iptables in its own network
  namespace, both ways), a roll asked for (a spec change: the node's CPU request) and the
  target's container killed, all during `hold`; the operator sees the pods through the API but
  cannot ask the quorum, so it must not delete a pod until the cut heals, then roll one at a time;
- `scale`: the target frozen, and once the leader sees it lagging, spec.replicas 3 -> 5 asked for;
  thawed after `hold`; once five voters settled, a follower killed and 5 -> 3 asked for at once;
- `roll`: the target frozen, and once the leader sees it lagging, a roll asked for (a spec
  change); thawed after `hold`: the operator must not delete another pod meanwhile.
Targets are named by role (`leader`, or the `pick`-th follower in id order), resolved against
the live quorum when the fault starts, so a seed means the same schedule on every run.

Invariants: pure and deterministic (the same seed gives the same schedule); at most one fault
at a time, each healed before the next, so the nemesis never takes a majority down.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

KINDS = (
    "isolate", "freeze", "one-way", "kill", "bridge", "apiserver", "agents", "reboot", "pvc-lost",
)  # fmt: skip
# with the operator's own work: make e2e-nemesis-k8s (E2E_K8S_NEMESIS_LONG=1) only
LONG_KINDS = (*KINDS, "operator-cut", "scale", "roll")
OPERATOR_WORK = frozenset({"operator-cut", "scale", "roll"})
# at most one of these a schedule
SLOW = frozenset({"apiserver", "reboot", "pvc-lost"}) | OPERATOR_WORK
NETWORK = frozenset({"isolate", "bridge", "one-way"})


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str  # one of KINDS
    role: str  # "leader" or "follower"
    pick: int  # which follower (modulo their number, in id order)
    hold: float  # seconds the fault lasts (apiserver: how long the API is down)

    def __str__(self) -> str:
        who = "leader" if self.role == "leader" else f"follower#{self.pick}"
        return f"{self.kind}({who},{self.hold:g}s)"


def draw(rng: random.Random, kind: str, apiserver_s: tuple[float, float]) -> Fault:
    role = "leader" if rng.random() < 0.5 else "follower"
    pick = rng.randrange(2)
    if kind == "apiserver":
        hold: float = round(rng.uniform(*apiserver_s))
    elif kind in OPERATOR_WORK:  # long enough for the leader to see the fault and the operator
        hold = round(rng.uniform(8.0, 14.0), 1)  # to be asked while it holds
    else:
        hold = round(rng.uniform(2.0, 6.0), 1)
    return Fault(kind, role, pick if role == "follower" else 0, hold)


def schedule(
    seed: int,
    faults: int = 2,
    apiserver_s: tuple[float, float] = (30.0, 40.0),
    kinds_from: tuple[str, ...] = KINDS,
) -> list[Fault]:
    """`faults` faults; the first of kind kinds_from[seed % len(kinds_from)], the others drawn
    (at most one of the slow kinds a schedule)."""
    rng = random.Random(seed)
    kinds = [kinds_from[seed % len(kinds_from)]]
    while len(kinds) < faults:
        k = rng.choice(kinds_from)
        if k in SLOW and SLOW & set(kinds):
            continue
        kinds.append(k)
    return [draw(rng, k, apiserver_s) for k in kinds]
