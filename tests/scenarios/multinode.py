"""Multi-node scenario scripts: several KRaft replicas in one transcript (issue 34).

Role: executable documentation of whole-quorum flows (KIP-595 elections, KIP-996 pre-vote,
KIP-853 voter changes) in the style of etcd-io/raft's `rafttest` InteractionEnv, with KRaft's
vocabulary. The script plays the network, the disks, the clock and the admin client: every
message a replica sends waits in one queue until a command delivers or drops it, every
`FlushLog` waits until a command completes it (`Flushed`), and the clock moves only when a
command moves it. The output of each command is the exact effects each replica produced, in
the order produced, so a transcript shows every durability barrier and every message.

Scripts live in `tests/scenarios/multinode/*.txt`, in the single-node runner's format (comment
lines, a command, `----`, its output, a blank line); `tests/scenarios/test_multinode.py` replays
them. Regenerate with `python -m tests.scenarios.runner --rewrite` (which rewrites both kinds)
or `python -m tests.scenarios.multinode --rewrite [file ...]`, or `METAQUORUM_REWRITE=1 pytest
tests/scenarios`; then read the diff against Kafka's rules.

The replicas and the commands: `tests/scenarios/multinode.md`.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from metaquorum.core.config import QuorumConfig
from metaquorum.core.effects import (
    AppendEntries,
    Effect,
    FlushLog,
    InstallSnapshot,
    PersistElectionState,
    SendRequest,
    SendResponse,
    Step,
    TruncateLog,
    WriteSnapshot,
)
from metaquorum.core.events import (
    ClientAppend,
    Event,
    Flushed,
    Poll,
    RequestReceived,
    ResponseReceived,
)
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.log import LogEntry, RaftLog
from metaquorum.core.node import RaftNode
from metaquorum.core.states import ElectionState
from metaquorum.core.voter_set import VoterSet
from metaquorum.protocol.messages import (
    ApiVersionsRequestData,
)

from tests.scenarios import reconfig_commands as reconfig
from tests.scenarios.multinode_format import (
    ADMIN,
    Message,
    api_versions_answer,
    bootstrap_set,
    election_text,
    ids_text,
    matches,
    parse_args,
    parse_ids,
    render_body,
)
from tests.scenarios.runner import render_effect

MAX_ROUNDS = 200  # stabilize gives up (and says so) after this many rounds
MAX_POLLS_AT_ONE_INSTANT = 20  # a replica asking to be polled again and again now is a bug


@dataclass
class Replica:
    """One replica: its core and what its driver keeps (the disk as the effects left it)."""

    nid: int
    node: RaftNode
    deadline: int
    written: int = 0  # the disk's end offset, from AppendEntries / TruncateLog / snapshots
    flushed: int = 0  # the last offset reported as Flushed
    flush_due: int | None = None  # the offset of the outstanding FlushLog
    quorum_state: ElectionState | None = None  # the last PersistElectionState
    last_state: str = field(default="")


class Env:
    """The interaction environment: replicas, the message queue, the clock, the partition."""

    def __init__(self) -> None:
        self.now = 0
        self.replicas: dict[int, Replica] = {}
        self.queue: list[Message] = []
        self.groups: list[set[int]] = []
        self.admin_cid = 1000
        self.append_id = 0
        # (requester, correlation id) -> the pseudo-id a request went to (bootstrap servers)
        self.pseudo: dict[tuple[int, int], int] = {}

    # --- commands ------------------------------------------------------------------------
    def run(self, command: str) -> str:
        words = command.split()
        name, a = words[0], parse_args(words[1:])
        handler: Callable[[dict[str, str]], list[str]] | None = getattr(
            self, "cmd_" + name.replace("-", "_"), None
        )
        if handler is None:
            raise ValueError(f"unknown command {name!r}")
        lines = handler(a)
        return "\n".join(lines) if lines else "ok"

    def _select(self, a: dict[str, str], key: str = "ids") -> list[int]:
        if key in a:
            ids = parse_ids(a[key])
            for nid in ids:
                if nid not in self.replicas:
                    raise ValueError(f"no replica {nid}")
            return ids
        return sorted(self.replicas)

    def cmd_add_replicas(self, a: dict[str, str]) -> list[str]:
        seed = int(a.get("seed", 0))
        bootstrap = tuple(reconfig.endpoint(i) for i in parse_ids(a.get("bootstrap", "")))
        lines: list[str] = []
        for nid in parse_ids(a["ids"]):
            if nid in self.replicas:
                raise ValueError(f"replica {nid} exists")
            if "standalone" in a:
                voters, kraft = bootstrap_set([nid]), 1
            elif "initial-controllers" in a:
                voters, kraft = bootstrap_set(parse_ids(a["initial-controllers"])), 1
            elif "no-initial-controllers" in a:
                if not bootstrap:
                    raise ValueError("--no-initial-controllers needs bootstrap=...")
                voters, kraft = VoterSet.empty(), 0
            else:
                raise ValueError("standalone, initial-controllers=... or no-initial-controllers")
            node = RaftNode(
                nid,
                cluster_id=reconfig.CLUSTER,
                voters=voters,
                config=QuorumConfig(),
                rng=random.Random(1000 * seed + nid),
                log=RaftLog([]),
                election=None,
                now_ms=self.now,
                kraft_version=kraft,
                local_directory_id=str(reconfig.directory(str(nid), nid)),
                local_endpoints=(reconfig.endpoint(nid),),
                bootstrap_servers=bootstrap,
            )
            rep = Replica(nid, node, self.now)
            self.replicas[nid] = rep
            lines.append(f"{nid} start")
            lines.extend(self._take(rep, node.start(self.now)))
        return lines

    def cmd_advance(self, a: dict[str, str]) -> list[str]:
        return self._advance_to(self.now + int(a["ms"]))

    def cmd_timeout(self, a: dict[str, str]) -> list[str]:
        """Run the clock, deadline by deadline, until a timer of replica `id` (of any replica
        without `id`) fires with an effect: the next thing that happens on its own."""
        ids = set(self._select(a, "id"))
        lines: list[str] = []
        for _ in range(MAX_ROUNDS):
            target = max(self.now, min(self.replicas[n].deadline for n in ids))
            fired = self._advance_to(target, stop_after=ids)
            lines.extend(fired[:-1])
            if any(line.startswith("t=") and int(line.split()[1]) in ids for line in fired):
                return [*lines, fired[-1]]
        raise RuntimeError(f"timeout: no timer of {sorted(ids)} fired an effect")

    def cmd_poll(self, a: dict[str, str]) -> list[str]:
        lines: list[str] = []
        for nid in self._select(a):
            lines.extend(self._poll(self.replicas[nid]))
        return lines

    def cmd_deliver(self, a: dict[str, str]) -> list[str]:
        return self._deliver([m for m in self.queue if matches(m, a)])

    def cmd_drop(self, a: dict[str, str]) -> list[str]:
        lost = [m for m in self.queue if matches(m, a)]
        self.queue = [m for m in self.queue if m not in lost]
        return [f"{m.render()} dropped" for m in lost]

    def cmd_flush(self, a: dict[str, str]) -> list[str]:
        lines: list[str] = []
        for nid in self._select(a):
            lines.extend(self._flush(self.replicas[nid]))
        return lines

    def cmd_stabilize(self, a: dict[str, str]) -> list[str]:
        ids = set(self._select(a))
        lines: list[str] = []
        for _ in range(MAX_ROUNDS):
            before = len(lines)
            for nid in sorted(ids):
                rep = self.replicas[nid]
                if rep.deadline <= self.now:
                    lines.extend(self._poll(rep))
            for nid in sorted(ids):
                lines.extend(self._flush(self.replicas[nid]))
            batch = [m for m in self.queue if m.src in ids or m.dst in ids]
            lines.extend(self._deliver(batch))
            if len(lines) == before and not batch:
                return lines
        raise RuntimeError(f"stabilize: still busy after {MAX_ROUNDS} rounds")

    def cmd_partition(self, a: dict[str, str]) -> list[str]:
        self.groups = [set(parse_ids(g)) for g in a["groups"].split("|")]
        return [f"partition {' | '.join(ids_text(g) for g in self.groups)}"]

    def cmd_heal(self, a: dict[str, str]) -> list[str]:
        self.groups = []
        return ["healed"]

    def cmd_append(self, a: dict[str, str]) -> list[str]:
        rep = self.replicas[int(a["id"])]
        self.append_id += 1
        values = tuple(v.encode() for v in a["values"].split(","))
        lines = [f"{rep.nid} client append id={self.append_id} values={a['values']}"]
        return lines + self._step(rep, ClientAppend(self.append_id, values))

    def cmd_add_voter(self, a: dict[str, str]) -> list[str]:
        request = reconfig.command("add-voter", a)
        return self._admin(int(a["to"]), request)

    def cmd_remove_voter(self, a: dict[str, str]) -> list[str]:
        request = reconfig.command("remove-voter", a)
        return self._admin(int(a["to"]), request)

    def cmd_status(self, a: dict[str, str]) -> list[str]:
        lines = []
        for nid in self._select(a):
            rep = self.replicas[nid]
            qs = rep.quorum_state
            quorum = "none" if qs is None else election_text(qs)
            lines.append(f"{nid}: {self._state(rep)} next={rep.deadline} quorum-state=({quorum})")
        return lines

    def cmd_log(self, a: dict[str, str]) -> list[str]:
        lines = []
        for nid in self._select(a):
            log = self.replicas[nid].node.log
            shown = ",".join(reconfig.render_entry(x) for x in log.entries()) or "(empty)"
            lines.append(f"{nid}: {shown}")
        return lines

    def cmd_msgs(self, a: dict[str, str]) -> list[str]:
        return [m.render() for m in self.queue] or ["(none)"]

    # --- driving -------------------------------------------------------------------------
    def _admin(self, leader: int, request: object) -> list[str]:
        self.admin_cid += 1
        msg = Message(ADMIN, leader, self.admin_cid, request, is_response=False)
        self.queue.append(msg)
        return self._deliver([msg])

    def _advance_to(self, target: int, stop_after: set[int] | None = None) -> list[str]:
        """Poll every replica whose deadline is at most `target`, earliest first; stop early
        after a poll of a replica in `stop_after` that had effects."""
        lines: list[str] = []
        polls_now = 0
        while True:
            due = sorted((r.deadline, r.nid) for r in self.replicas.values())
            if not due or due[0][0] > target:
                break
            t, nid = due[0]
            if t > self.now:
                self.now, polls_now = t, 0
            polls_now += 1
            if polls_now > MAX_POLLS_AT_ONE_INSTANT:
                raise RuntimeError(f"replica {nid} asks to be polled again and again at {t}")
            polled = self._poll(self.replicas[nid])
            lines.extend(polled)
            if polled and stop_after is not None and nid in stop_after:
                target = self.now
                break
        self.now = max(self.now, target)
        lines.append(f"now={self.now}")
        return lines

    def _poll(self, rep: Replica) -> list[str]:
        effects = self._step(rep, Poll())
        if not effects:
            return []
        return [f"t={self.now} {rep.nid} poll", *effects]

    def _flush(self, rep: Replica) -> list[str]:
        if rep.flush_due is None:
            return []
        offset = min(rep.flush_due, rep.written)
        rep.flush_due = None
        rep.flushed = offset
        return [f"{rep.nid} flushed {offset}", *self._step(rep, Flushed(offset))]

    def _deliver(self, batch: list[Message]) -> list[str]:
        lines: list[str] = []
        for m in batch:
            self.queue.remove(m)
            if self._cut(m.src, m.dst):
                lines.append(f"{m.render()} lost (partition)")
                continue
            lines.append(m.render())
            if m.dst == ADMIN:
                continue
            rep = self.replicas.get(m.dst)
            if rep is None:
                lines.append(f"  no replica {m.dst}: lost")
            elif m.is_response:
                source = m.reply_as if m.reply_as is not None else m.src
                event: Event = ResponseReceived(source, m.correlation_id, m.body, m.entries)
                lines.extend(self._step(rep, event))
            elif isinstance(m.body, ApiVersionsRequestData):
                answer = api_versions_answer()
                self.queue.append(self._reply(m, answer))
                lines.append(f"  runtime respond to={m.src}: {render_body(answer)}")
            else:
                lines.extend(self._step(rep, RequestReceived(m.src, m.correlation_id, m.body)))
        return lines

    def _reply(self, request: Message, body: object, entries: tuple[LogEntry, ...] = ()) -> Message:
        reply_as = self.pseudo.pop((request.src, request.correlation_id), None)
        return Message(
            request.dst, request.src, request.correlation_id, body, True, entries, reply_as
        )

    def _step(self, rep: Replica, event: Event) -> list[str]:
        step: Step = rep.node.handle(event, self.now)
        return self._take(rep, step)

    def _take(self, rep: Replica, step: Step) -> list[str]:
        """Perform a step's effects as a driver does; return them rendered, then the
        replica's state if it changed."""
        rep.deadline = step.next_deadline_ms
        lines = [f"  {render_effect(e)}" for e in step.effects]
        for e in step.effects:
            self._perform(rep, e)
        if rep.written != rep.node.log.end_offset:
            raise AssertionError(
                f"replica {rep.nid}: the effects leave {rep.written} entries on disk, "
                f"the core's log ends at {rep.node.log.end_offset}"
            )
        state = self._state(rep)
        if state != rep.last_state:
            rep.last_state = state
            lines.append(f"  state: {state}")
        return lines

    def _perform(self, rep: Replica, e: Effect) -> None:
        if isinstance(e, SendRequest):
            dst = e.destination
            if dst < -1:  # a bootstrap pseudo-id: the replica at its endpoint
                assert e.endpoint is not None
                self.pseudo[(rep.nid, e.correlation_id)] = dst
                dst = e.endpoint.port - 9090
            self.queue.append(Message(rep.nid, dst, e.correlation_id, e.message, False))
        elif isinstance(e, SendResponse):
            req = Message(e.destination, rep.nid, e.correlation_id, None, False)
            self.queue.append(self._reply(req, e.message, e.entries))
        elif isinstance(e, PersistElectionState):
            rep.quorum_state = e.election
        elif isinstance(e, AppendEntries):
            if e.entries:
                if e.entries[0].offset != rep.written:
                    raise AssertionError(f"replica {rep.nid}: append at a gap {e.entries[0]}")
                rep.written = e.entries[-1].offset + 1
        elif isinstance(e, TruncateLog):
            rep.written = min(rep.written, e.offset)
            rep.flushed = min(rep.flushed, e.offset)
        elif isinstance(e, InstallSnapshot):
            rep.written = rep.flushed = e.snapshot.snapshot_id.offset
        elif isinstance(e, FlushLog):
            rep.flush_due = e.offset
        elif isinstance(e, WriteSnapshot):
            pass  # the log above the snapshot stays; nothing to mirror here

    def _cut(self, a: int, b: int) -> bool:
        ga = next((i for i, g in enumerate(self.groups) if a in g), None)
        gb = next((i for i, g in enumerate(self.groups) if b in g), None)
        return ga is not None and gb is not None and ga != gb

    def _state(self, rep: Replica) -> str:
        n = rep.node
        role = n.state.role.value
        hw = n.high_watermark
        own = ReplicaKey(rep.nid, str(reconfig.directory(str(rep.nid), rep.nid)))
        member = "voter" if n.voters.is_voter(own) else "observer"
        return (
            f"{role} epoch={n.epoch} leader={n.leader_id} {member} "
            f"voters={ids_text(n.voters.sorted_ids())} leo={n.log.end_offset} "
            f"flushed={n.log.flushed_offset} hw={-1 if hw is None else hw}"
        )


if __name__ == "__main__":
    from tests.scenarios.multinode_files import main

    sys.exit(main(sys.argv[1:]))
