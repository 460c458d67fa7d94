"""The operator nemesis's schedules: seeded random sequences of operations on one quorum.

Role: `sequences(seed, n)` draws `n` short sequences (2-3 steps each) of what a cluster does to
an operator-run quorum: `scale` (spec.replicas one up or down, kept within 3..5), `kill` (kill -9
of the leader's or a follower's node process), `lose` (a member's PVC and pod deleted: it comes
back empty, under a new directory id) and `operator` (the operator's pod deleted `delay`
seconds into the sequence's next step — or at once when it is the last — its Deployment starts
another, which resumes from the status and the live quorum). Victims are
named by role (`leader`, or the `pick`-th follower in id order), resolved against the live
quorum when the step runs, so a seed means the same schedule on every run.

Invariants: pure and deterministic (the same seed gives the same sequences); the replica count
a schedule asks for stays within 3..5, so one fault at a time never costs the majority.
`E2E_NEMESIS_SEED=S` re-runs a seed's schedule (test_operator_nemesis.py prints it);
`E2E_NEMESIS_PLAN` runs a schedule written out the way a failure prints it (`parse_plan`:
sequences separated by `;`, steps by spaces, e.g. `scale->4 kill(leader); lose(follower#1)`), so
a failing sequence and the ones before it can be repeated on their own (from the sample's 3
replicas, so a replay is near, not identical to, the state the original run had reached).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

KINDS = ("scale", "kill", "lose", "operator")
WEIGHTS = (3, 4, 2, 2)
MIN_REPLICAS, MAX_REPLICAS = 3, 5


@dataclass(frozen=True, slots=True)
class Step:
    kind: str  # one of KINDS
    replicas: int = 0  # scale: the new spec.replicas
    role: str = ""  # kill/lose: "leader" or "follower"
    pick: int = 0  # kill/lose of a follower: which one (modulo their number, in id order)
    delay: float = 0.0  # operator: seconds into the next step of the sequence (if any)

    def __str__(self) -> str:
        if self.kind == "scale":
            return f"scale->{self.replicas}"
        if self.kind in ("kill", "lose"):
            who = "leader" if self.role == "leader" else f"follower#{self.pick}"
            return f"{self.kind}({who})"
        return f"operator-restart@{self.delay}s"


def sequences(seed: int, n: int, replicas: int = MIN_REPLICAS) -> list[list[Step]]:
    """`n` sequences of 2-3 steps, starting from `replicas` and carrying the count on."""
    rng = random.Random(seed)
    out: list[list[Step]] = []
    for _ in range(n):
        seq: list[Step] = []
        for _ in range(rng.choice((2, 3))):
            kind = rng.choices(KINDS, WEIGHTS)[0]
            if kind == "scale":
                moves = [
                    r for r in (replicas - 1, replicas + 1) if MIN_REPLICAS <= r <= MAX_REPLICAS
                ]
                replicas = rng.choice(moves)
                seq.append(Step("scale", replicas=replicas))
            elif kind in ("kill", "lose"):
                role = "leader" if rng.random() < 0.4 else "follower"
                pick = rng.randrange(4)  # drawn for a leader too: seeds keep their schedules
                seq.append(Step(kind, role=role, pick=pick if role == "follower" else 0))
            else:
                seq.append(Step("operator", delay=round(rng.uniform(0.0, 4.0), 1)))
        out.append(seq)
    return out


_STEP = re.compile(
    r"scale->(?P<replicas>\d+)|(?P<kind>kill|lose)\((?:(?P<leader>leader)|follower#(?P<pick>\d+))\)"
    r"|operator-restart@(?P<delay>\d+(?:\.\d+)?)s"
)


def parse_step(text: str) -> Step:
    """The inverse of str(Step); ValueError naming the accepted forms otherwise."""
    m = _STEP.fullmatch(text)
    if m is None:
        raise ValueError(
            f"not a nemesis step: {text!r} (scale->N, kill(leader), kill(follower#K), "
            "lose(leader), lose(follower#K), operator-restart@Ss)"
        )
    if m["replicas"] is not None:
        replicas = int(m["replicas"])
        if not MIN_REPLICAS <= replicas <= MAX_REPLICAS:
            raise ValueError(f"{text}: replicas must be within {MIN_REPLICAS}..{MAX_REPLICAS}")
        return Step("scale", replicas=replicas)
    if m["kind"] is not None:
        if m["leader"]:
            return Step(m["kind"], role="leader")
        return Step(m["kind"], role="follower", pick=int(m["pick"]))
    return Step("operator", delay=float(m["delay"]))


def parse_plan(text: str) -> list[list[Step]]:
    """Sequences separated by `;`, steps by whitespace (as the test prints them)."""
    plan = [[parse_step(t) for t in seq.split()] for seq in text.split(";")]
    if not all(plan):
        raise ValueError(f"an empty sequence in the plan {text!r}")
    return plan
