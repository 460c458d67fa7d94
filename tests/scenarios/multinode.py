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

Replicas (as `kafka-storage format` leaves them): replica i has directory id `Uuid(7, i)` and
the endpoint CONTROLLER://h<i>:<9090+i> (tests/scenarios/reconfig_commands.py).
- `add-replicas ids=1,2,3 initial-controllers=1,2,3` (`format --initial-controllers`): a
  bootstrap voter set with directory ids and endpoints, kraft.version 1;
  `add-replicas ids=1 standalone` (`format --standalone`): the voter set is the replica alone;
  `add-replicas ids=4 no-initial-controllers bootstrap=1,2,3` (`--no-initial-controllers`): no
  voter set, kraft.version 0 until the log says otherwise, the leader found through
  `controller.quorum.bootstrap.servers` (Kafka's pseudo-ids -2, -3, ... in that order).
  `bootstrap=...` may be given to any replica; `seed=N` (default 0) seeds its rng
  (`random.Random(1000 * seed + id)`).

Commands (`ids=` and the filters take comma lists; no argument means every replica):
- `advance ms=N`: move the clock; every replica whose deadline passes is polled at its deadline,
  earliest first (ties by id); a poll with no effect prints nothing. `timeout [id=N]`: run the
  clock deadline by deadline until a timer of replica N (of any replica) fires with an effect.
  `poll ids=...`: poll now (as the driver's next loop iteration or next event would).
- `deliver [from=] [to=] [type=]`: deliver the matching queued messages, oldest first; what they
  cause is queued, not delivered. `drop [from=] [to=] [type=]`: lose them (no reply ever comes;
  the requester's own request timeout covers it). `type` is the first word of a message's
  rendering (PreVote, Vote, VoteResponse, Fetch, FetchResponse, BeginQuorumEpoch, ...).
- `flush [ids=]`: complete each replica's outstanding `FlushLog` (`Flushed(offset)`).
- `stabilize [ids=]`: rounds of (poll the due replicas, complete their flushes, deliver every
  queued message to or from them) until nothing is left to do; the clock does not move.
- `partition groups=1|2,3`: a message between replicas listed in different groups is lost when
  delivered (unlisted replicas and the admin reach everyone); `heal` ends it.
- `append id=N values=a,b`: a client append (ClientAppend) on replica N.
- `add-voter to=L id=N` / `remove-voter to=L id=N [dir=new]`: the admin client (id 99,
  kafka-metadata-quorum add-controller / remove-controller) sends AddRaftVoter /
  RemoveRaftVoter to replica L; its answer is queued to `admin` like any message.
- `status [ids=]`, `log [ids=]`, `msgs`: print each replica's state, log, or the queue.
A replica's ApiVersions request is answered by its runtime (kraft.version 0-1), as a node does.
Output lines: `1->2 Fetch ...` is a delivery, `t=1864 1 poll` a deadline, `1 flushed 3` a
completed flush; the receiving replica's effects follow indented, then its state if it changed.
Invariants the harness checks after every step (a failure raises): the disk it keeps from the
effects (AppendEntries, TruncateLog, snapshots) has the core's log end offset, and `Flushed`
never reports more than was written.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

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
from metaquorum.core.voter_set import VoterNode, VoterSet
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    ApiVersionsRequestData,
    ApiVersionsResponseData,
    RemoveRaftVoterRequestData,
)

from tests.scenarios import reconfig_commands as reconfig
from tests.scenarios.runner import parse, render_effect, render_message

HERE = Path(__file__).parent / "multinode"
ADMIN = 99  # the admin client's "replica id": its requests come from it, answers go to it
MAX_ROUNDS = 200  # stabilize gives up (and says so) after this many rounds
MAX_POLLS_AT_ONE_INSTANT = 20  # a replica asking to be polled again and again now is a bug


def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _args(words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        key, eq, value = w.partition("=")
        out[key] = value if eq else "true"
    return out


def _name(nid: int) -> str:
    return "admin" if nid == ADMIN else str(nid)


def render_body(msg: object) -> str:
    """A message as one line (the single-node runner's rendering, plus the admin's requests)."""
    if isinstance(msg, AddRaftVoterRequestData):
        ep = msg.listeners[0]
        return (
            f"AddRaftVoter id={msg.voter_id} dir={_dir(msg.voter_id, str(msg.voter_directory_id))}"
            f" at={ep.host}:{ep.port} ack-when-committed={str(msg.ack_when_committed).lower()}"
        )
    if isinstance(msg, RemoveRaftVoterRequestData):
        return (
            f"RemoveRaftVoter id={msg.voter_id} "
            f"dir={_dir(msg.voter_id, str(msg.voter_directory_id))}"
        )
    if isinstance(msg, ApiVersionsResponseData):
        features = " ".join(
            f"{f.name}={f.min_version}-{f.max_version}" for f in msg.supported_features
        )
        return f"ApiVersionsResponse {features}"
    return render_message(msg)


def _dir(nid: int, directory: str | None) -> str:
    """A directory id as the script names it: the replica's own (its id) or `new`."""
    if directory is None:
        return "none"
    if directory == str(reconfig.directory(str(nid), nid)):
        return str(nid)
    if directory == str(reconfig.directory("new", nid)):
        return "new"
    return directory


@dataclass
class Message:
    """One message in flight. `reply_as` is the id the requester sent a request to (a
    bootstrap pseudo-id), under which it expects the answer."""

    src: int
    dst: int
    correlation_id: int
    body: object
    is_response: bool
    entries: tuple[LogEntry, ...] = ()
    reply_as: int | None = None

    @property
    def kind(self) -> str:
        return render_body(self.body).split(" ", 1)[0]

    def render(self) -> str:
        via = f" (as {self.reply_as})" if self.reply_as is not None else ""
        recs = ""
        if self.entries:
            recs = " records=" + ",".join(f"{x.offset}@{x.epoch}" for x in self.entries)
        return f"{_name(self.src)}->{_name(self.dst)}{via} {render_body(self.body)}{recs}"


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
        name, a = words[0], _args(words[1:])
        handler: Callable[[dict[str, str]], list[str]] | None = getattr(
            self, "cmd_" + name.replace("-", "_"), None
        )
        if handler is None:
            raise ValueError(f"unknown command {name!r}")
        lines = handler(a)
        return "\n".join(lines) if lines else "ok"

    def _select(self, a: dict[str, str], key: str = "ids") -> list[int]:
        if key in a:
            ids = _ids(a[key])
            for nid in ids:
                if nid not in self.replicas:
                    raise ValueError(f"no replica {nid}")
            return ids
        return sorted(self.replicas)

    def cmd_add_replicas(self, a: dict[str, str]) -> list[str]:
        seed = int(a.get("seed", 0))
        bootstrap = tuple(reconfig.endpoint(i) for i in _ids(a.get("bootstrap", "")))
        lines: list[str] = []
        for nid in _ids(a["ids"]):
            if nid in self.replicas:
                raise ValueError(f"replica {nid} exists")
            if "standalone" in a:
                voters, kraft = _bootstrap_set([nid]), 1
            elif "initial-controllers" in a:
                voters, kraft = _bootstrap_set(_ids(a["initial-controllers"])), 1
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
        return self._deliver([m for m in self.queue if _matches(m, a)])

    def cmd_drop(self, a: dict[str, str]) -> list[str]:
        lost = [m for m in self.queue if _matches(m, a)]
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
        self.groups = [set(_ids(g)) for g in a["groups"].split("|")]
        return [f"partition {' | '.join(_ids_text(g) for g in self.groups)}"]

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
            quorum = "none" if qs is None else _election_text(qs)
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
                answer = _api_versions_answer()
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
            f"voters={_ids_text(n.voters.sorted_ids())} leo={n.log.end_offset} "
            f"flushed={n.log.flushed_offset} hw={-1 if hw is None else hw}"
        )


def _ids_text(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(i) for i in sorted(ids)) + "]"


def _election_text(e: ElectionState) -> str:
    voted = "-1" if e.voted_key is None else str(e.voted_key.id)
    return f"epoch={e.epoch} leader={e.leader_id} voted={voted}"


def _bootstrap_set(ids: list[int]) -> VoterSet:
    """The VotersRecord `format --standalone / --initial-controllers` writes."""
    return VoterSet.from_nodes(
        VoterNode(ReplicaKey(i, str(reconfig.directory(str(i), i))), (reconfig.endpoint(i),), 0, 1)
        for i in ids
    )


def _api_versions_answer() -> ApiVersionsResponseData:
    """What a replica's runtime answers: it supports kraft.version 0-1."""
    key = ApiVersionsResponseData.SupportedFeatureKey(
        name="kraft.version", min_version=0, max_version=1
    )
    return ApiVersionsResponseData(supported_features=[key])


def _matches(m: Message, a: dict[str, str]) -> bool:
    def ids(key: str) -> set[int]:
        return {ADMIN if x == "admin" else int(x) for x in a[key].split(",") if x}

    if "from" in a and m.src not in ids("from"):
        return False
    if "to" in a and m.dst not in ids("to"):
        return False
    return "type" not in a or m.kind in a["type"].split(",")


def run_file(path: Path, *, rewrite: bool = False) -> list[str]:
    """Run one multi-node script; return the mismatches (or rewrite it and return none)."""
    env = Env()
    mismatches: list[str] = []
    rendered: list[str] = []
    for pre, command, expected in parse(path.read_text()):
        actual = env.run(command)
        if actual != expected:
            mismatches.append(
                f"{path.name}: {command}\n--- expected\n{expected}\n--- actual\n{actual}"
            )
        rendered.extend(line for line in pre if line.strip())
        rendered.extend([command, "----", actual, ""])
    if rewrite:
        path.write_text("\n".join(rendered).rstrip("\n") + "\n")
        return []
    return mismatches


def scripts() -> list[Path]:
    return sorted(HERE.glob("*.txt"))


def main(argv: list[str]) -> int:
    rewrite = "--rewrite" in argv
    paths = [Path(p) for p in argv if p != "--rewrite"] or scripts()
    failures = 0
    for path in paths:
        for problem in run_file(path, rewrite=rewrite):
            failures += 1
            print(problem, end="\n\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
