"""Datadriven scenario scripts for the KRaft core: commands, `----`, expected effects.

A script is a sequence of blocks:

    # comments
    command arg=value flag ...
    ----
    the effects the command produced, one per line, then the node's state

Run by `tests/scenarios/test_scenarios.py`; regenerate the expected parts with
`python -m tests.scenarios.runner --rewrite` (or METAQUORUM_REWRITE=1 pytest ...), then read
the diff: the transcripts are reviewed against Kafka's rules, not trusted blindly.
Commands: node, timeout, advance, vote, vote-response, fetch, fetch-response, begin-epoch,
end-epoch, flush, append, describe, snapshot, fetch-snapshot. `top-error=NAME` on a response
sets its top-level error; `vote ... directory=UUID` and `node ... voted-dir=UUID` carry
KIP-853 directory ids; `fetch-response ... snapshot=EPOCH:OFFSET` sends a SnapshotId.
KIP-853 reconfiguration commands (`node ... kraft=1`, `add-voter`, `remove-voter`,
`api-versions-response`, `fetch ... dir=N|new`): tests/scenarios/reconfig_commands.py.
Multi-node scripts (several replicas, the script as network, disks and clock) are
tests/scenarios/multinode.py's; `main` here replays and rewrites those too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from metaquorum.core.effects import (
    AbandonRequest,
    AppendCommitted,
    AppendEntries,
    AppendFailed,
    Effect,
    FlushLog,
    HighWatermarkAdvanced,
    InstallSnapshot,
    KRaftVersionUpgrade,
    LeaderChanged,
    PersistElectionState,
    SendRequest,
    SendResponse,
    TruncateLog,
    VotersChanged,
    WriteSnapshot,
)
from metaquorum.core.events import CreateSnapshot, RequestReceived
from metaquorum.core.ids import ReplicaKey
from metaquorum.core.states import (
    CandidateState,
    ElectionState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
)
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    AddRaftVoterRequestData,
    BeginQuorumEpochRequestData,
    BeginQuorumEpochResponseData,
    DescribeQuorumRequestData,
    DescribeQuorumResponseData,
    EndQuorumEpochRequestData,
    EndQuorumEpochResponseData,
    FetchRequestData,
    FetchResponseData,
    FetchSnapshotRequestData,
    FetchSnapshotResponseData,
    RemoveRaftVoterRequestData,
    UpdateRaftVoterRequestData,
    VoteRequestData,
    VoteResponseData,
)
from metaquorum.protocol.types import Uuid

from tests.scenarios import reconfig_commands as reconfig
from tests.unit.core.context import (
    RaftTestContext,
    begin_epoch,
    end_epoch,
    entries,
    fetch_request,
    fetch_response,
    vote_request,
    vote_response,
)

HERE = Path(__file__).parent
TOPIC = "__cluster_metadata"


def _args(words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        key, _, value = w.partition("=")
        out[key] = value if _ else "true"
    return out


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _error(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return str(code)


def render_message(msg: object) -> str:
    if isinstance(msg, VoteRequestData):
        p = msg.topics[0].partitions[0]
        kind = "PreVote" if p.pre_vote else "Vote"
        return f"{kind} epoch={p.replica_epoch} last=({p.last_offset_epoch},{p.last_offset})"
    if isinstance(msg, VoteResponseData):
        if not msg.topics:
            return f"VoteResponse error={_error(msg.error_code)}"
        p = msg.topics[0].partitions[0]
        return (
            f"VoteResponse granted={str(p.vote_granted).lower()} epoch={p.leader_epoch} "
            f"leader={p.leader_id} error={_error(p.error_code)}"
        )
    if isinstance(msg, FetchRequestData):
        p = msg.topics[0].partitions[0]
        return (
            f"Fetch epoch={p.current_leader_epoch} offset={p.fetch_offset} "
            f"last-epoch={p.last_fetched_epoch} hw={p.high_watermark}"
        )
    if isinstance(msg, FetchResponseData):
        if not msg.responses:
            return f"FetchResponse error={_error(msg.error_code)}"
        p = msg.responses[0].partitions[0]
        text = (
            f"FetchResponse error={_error(p.error_code)} hw={p.high_watermark} "
            f"leader={p.current_leader.leader_id}/{p.current_leader.leader_epoch}"
        )
        if p.diverging_epoch.epoch >= 0:
            text += f" diverging={p.diverging_epoch.epoch}:{p.diverging_epoch.end_offset}"
        if p.snapshot_id.epoch >= 0:
            text += f" snapshot={p.snapshot_id.end_offset}:{p.snapshot_id.epoch}"
        return text
    if isinstance(msg, BeginQuorumEpochRequestData):
        p = msg.topics[0].partitions[0]
        return f"BeginQuorumEpoch leader={p.leader_id} epoch={p.leader_epoch}"
    if isinstance(msg, EndQuorumEpochRequestData):
        p = msg.topics[0].partitions[0]
        succ = ",".join(str(c.candidate_id) for c in p.preferred_candidates)
        return f"EndQuorumEpoch leader={p.leader_id} epoch={p.leader_epoch} successors={succ}"
    if isinstance(msg, BeginQuorumEpochResponseData | EndQuorumEpochResponseData):
        name = type(msg).__name__.removesuffix("Data")
        if not msg.topics:
            return f"{name} error={_error(msg.error_code)}"
        p = msg.topics[0].partitions[0]
        return f"{name} error={_error(p.error_code)} leader={p.leader_id} epoch={p.leader_epoch}"
    if isinstance(msg, FetchSnapshotRequestData):
        p = msg.topics[0].partitions[0]
        return (
            f"FetchSnapshot epoch={p.current_leader_epoch} snapshot={p.snapshot_id.end_offset}:"
            f"{p.snapshot_id.epoch} position={p.position} max={msg.max_bytes}"
        )
    if isinstance(msg, FetchSnapshotResponseData):
        if not msg.topics:
            return f"FetchSnapshotResponse error={_error(msg.error_code)}"
        p = msg.topics[0].partitions[0]
        chunk = (p.unaligned_records or b"").decode(errors="replace")
        return (
            f"FetchSnapshotResponse error={_error(p.error_code)} snapshot="
            f"{p.snapshot_id.end_offset}:{p.snapshot_id.epoch} size={p.size} "
            f"position={p.position} chunk={chunk!r}"
        )
    if isinstance(msg, DescribeQuorumResponseData):
        p = msg.topics[0].partitions[0]
        if p.error_code:
            return f"DescribeQuorumResponse error={_error(p.error_code)}"

        def replicas(states: list[DescribeQuorumResponseData.ReplicaState]) -> str:
            return " ".join(
                f"{v.replica_id}:leo={v.log_end_offset},fetch={v.last_fetch_timestamp},"
                f"caught-up={v.last_caught_up_timestamp}"
                for v in states
            )

        observers = f" observers=[{replicas(p.observers)}]" if p.observers else ""
        return (
            f"DescribeQuorumResponse leader={p.leader_id} epoch={p.leader_epoch} "
            f"hw={p.high_watermark} voters=[{replicas(p.current_voters)}]{observers}"
        )
    return reconfig.render(msg) or type(msg).__name__


def render_effect(e: Effect) -> str:
    if isinstance(e, PersistElectionState):
        v = e.election.voted_key
        voted = -1 if v is None else v.id
        el = e.election
        return f"persist epoch={el.epoch} leader={el.leader_id} voted={voted}"
    if isinstance(e, SendRequest):
        at = f" at={e.endpoint.host}:{e.endpoint.port}" if e.endpoint is not None else ""
        return f"send to={e.destination}{at}: {render_message(e.message)}"
    if isinstance(e, AbandonRequest):
        return f"abandon to={e.destination}"
    if isinstance(e, SendResponse):
        recs = ""
        if e.entries:
            recs = " records=" + ",".join(f"{x.offset}@{x.epoch}" for x in e.entries)
        return f"respond to={e.destination}: {render_message(e.message)}{recs}"
    if isinstance(e, AppendEntries):
        return "append " + ",".join(reconfig.render_entry(x) for x in e.entries)
    if isinstance(e, TruncateLog):
        return f"truncate to={e.offset}"
    if isinstance(e, WriteSnapshot | InstallSnapshot):
        sid = e.snapshot.snapshot_id
        verb = "write-snapshot" if isinstance(e, WriteSnapshot) else "install-snapshot"
        return f"{verb} end={sid.offset} epoch={sid.epoch} bytes={len(e.snapshot.payload)}"
    if isinstance(e, FlushLog):
        return f"flush upto={e.offset}"
    if isinstance(e, HighWatermarkAdvanced):
        return f"high-watermark {e.high_watermark}"
    if isinstance(e, LeaderChanged):
        return f"leader-changed leader={e.leader_id} epoch={e.epoch}"
    if isinstance(e, VotersChanged):
        return f"voters-changed {e.voters.sorted_ids()}"
    if isinstance(e, KRaftVersionUpgrade):
        return f"kraft-version-upgrade {e.version}: {e.error or 'accepted'}"
    if isinstance(e, AppendCommitted):
        return f"append-committed id={e.append_id} last-offset={e.last_offset}"
    if isinstance(e, AppendFailed):
        return f"append-failed id={e.append_id} {e.reason}"
    return repr(e)


def render_state(ctx: RaftTestContext) -> str:
    n = ctx.node
    st = n.state
    text = f"state: {st.role.value} epoch={st.epoch}"
    if isinstance(st, FollowerState):
        text += f" leader={st.leader_id} fetched={str(st.has_fetched).lower()}"
    if isinstance(st, UnattachedState | ProspectiveState | FollowerState) and st.voted_key:
        text += f" voted={st.voted_key.id}"
    if isinstance(st, ProspectiveState | CandidateState):
        text += f" granted={sorted(st.tally.granted)} rejected={sorted(st.tally.rejected)}"
    if isinstance(st, LeaderState):
        text += f" epoch-start={st.epoch_start_offset}"
    if isinstance(st, ResignedState):
        text += f" successors={list(st.preferred_successors)}"
    hw = n.high_watermark
    text += f" leo={n.log.end_offset} flushed={n.log.flushed_offset} hw={-1 if hw is None else hw}"
    return text + f" now={ctx.now} next={ctx.deadline}"


class Script:
    def __init__(self) -> None:
        self.ctx: RaftTestContext | None = None
        self.cid = 1000

    def run(self, command: str) -> str:
        words = command.split()
        name, args = words[0], _args(words[1:])
        if name == "node":
            election = None
            if "epoch" in args:
                voted = (
                    ReplicaKey(int(args["voted"]), args.get("voted-dir"))
                    if "voted" in args
                    else None
                )
                election = ElectionState(int(args["epoch"]), int(args.get("leader", -1)), voted)
            self.ctx = RaftTestContext(
                int(args["id"]),
                _ints(args["voters"]),
                epochs=_ints(args.get("log", "")),
                election=election,
                seed=int(args.get("seed", 0)),
                **reconfig.node_kwargs(int(args["id"]), _ints(args["voters"]), args),
            )
            out = self.ctx.effects
        else:
            ctx = self.ctx
            assert ctx is not None, "the first command must be `node`"
            out = self._command(ctx, name, args)
        assert self.ctx is not None
        lines = [render_effect(e) for e in out]
        lines.append(render_state(self.ctx))
        return "\n".join(lines)

    def _command(self, ctx: RaftTestContext, name: str, a: dict[str, str]) -> list[Effect]:
        src = int(a.get("from", 0))
        self.cid += 1
        if name == "timeout":
            return ctx.advance_to_deadline()
        if name == "advance":
            return ctx.advance(int(a["ms"]))
        if name == "flush":
            return ctx.flush()
        if name == "append":
            values = tuple(v.encode() for v in a["values"].split(","))
            return ctx.append(int(a["id"]), *values)
        if name == "vote":
            msg: object = vote_request(
                int(a["epoch"]),
                src,
                int(a.get("last-epoch", 0)),
                int(a.get("last-offset", 0)),
                pre_vote="prevote" in a,
                cluster_id=a.get("cluster", "test-cluster-id-000000"),
            )
            if "directory" in a:
                assert isinstance(msg, VoteRequestData)
                directory = Uuid.from_string(a["directory"])
                vp = replace(msg.topics[0].partitions[0], replica_directory_id=directory)
                msg = replace(msg, topics=[replace(msg.topics[0], partitions=[vp])])
            return ctx.handle(RequestReceived(src, self.cid, msg))
        if name == "vote-response":
            msg = vote_response(int(a["epoch"]), "granted" in a, int(a.get("leader", -1)))
            return ctx.respond(src, _top_error(msg, a))
        if name == "fetch":
            msg = fetch_request(
                src,
                int(a["epoch"]),
                int(a["offset"]),
                int(a["last-epoch"]),
                hw=int(a.get("hw", -1)),
                max_wait=int(a.get("wait", 500)),
                cluster_id=a.get("cluster", "test-cluster-id-000000"),
            )
            msg = reconfig.with_fetch_directory(msg, src, a)
            return ctx.handle(RequestReceived(src, self.cid, msg))
        if name == "fetch-response":
            div = None
            if "diverging" in a:
                e, _, o = a["diverging"].partition(":")
                div = (int(e), int(o))
            error = int(Errors[a["error"]]) if "error" in a else 0
            msg = fetch_response(
                int(a["leader"]),
                int(a["epoch"]),
                hw=int(a.get("hw", -1)),
                error=error,
                diverging=div,
            )
            if "snapshot" in a:
                e, _, o = a["snapshot"].partition(":")
                fp = replace(
                    msg.responses[0].partitions[0],
                    snapshot_id=FetchResponseData.SnapshotId(end_offset=int(o), epoch=int(e)),
                )
                msg = replace(msg, responses=[replace(msg.responses[0], partitions=[fp])])
            recs = entries(
                int(a.get("start", ctx.node.log.end_offset)), _ints(a.get("records", ""))
            )
            return ctx.respond(src, _top_error(msg, a), recs)
        if name == "begin-epoch":
            return ctx.handle(RequestReceived(src, self.cid, begin_epoch(src, int(a["epoch"]))))
        if name == "end-epoch":
            msg = end_epoch(src, int(a["epoch"]), _ints(a.get("successors", "")))
            return ctx.handle(RequestReceived(src, self.cid, msg))
        if name == "snapshot":
            payload = a.get("payload", "state").encode()
            return ctx.handle(CreateSnapshot(int(a["end"]), payload))
        if name == "fetch-snapshot":
            sp = FetchSnapshotRequestData.PartitionSnapshot(
                partition=0,
                current_leader_epoch=int(a["epoch"]),
                snapshot_id=FetchSnapshotRequestData.SnapshotId(
                    end_offset=int(a["end"]), epoch=int(a["snapshot-epoch"])
                ),
                position=int(a.get("position", 0)),
            )
            msg = FetchSnapshotRequestData(
                cluster_id="test-cluster-id-000000",
                replica_id=src,
                max_bytes=int(a.get("max", 1024)),
                topics=[FetchSnapshotRequestData.TopicSnapshot(name=TOPIC, partitions=[sp])],
            )
            return ctx.handle(RequestReceived(src, self.cid, msg))
        if name == "describe":
            req = DescribeQuorumRequestData(
                topics=[
                    DescribeQuorumRequestData.TopicData(
                        topic_name="__cluster_metadata",
                        partitions=[DescribeQuorumRequestData.PartitionData(partition_index=0)],
                    )
                ]
            )
            return ctx.handle(RequestReceived(src, self.cid, req))
        message = reconfig.command(name, a)
        if isinstance(message, reconfig.UpgradeKRaftVersion):
            return ctx.handle(message)
        if isinstance(
            message,
            AddRaftVoterRequestData | RemoveRaftVoterRequestData | UpdateRaftVoterRequestData,
        ):
            return ctx.handle(RequestReceived(src, self.cid, message))
        if message is not None:
            return ctx.respond(src, message)
        raise ValueError(f"unknown command {name!r}")


def _top_error(msg: Any, a: dict[str, str]) -> Any:
    """The response with a top-level error code (`top-error=NAME`), else unchanged."""
    if "top-error" not in a:
        return msg
    return replace(msg, error_code=int(Errors[a["top-error"]]))


def parse(text: str) -> list[tuple[list[str], str, str]]:
    """Blocks of (leading comment/blank lines, command, expected output)."""
    blocks: list[tuple[list[str], str, str]] = []
    lines = text.splitlines()
    i = 0
    pre: list[str] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            pre.append(line)
            i += 1
            continue
        command = line.strip()
        i += 1
        if i >= len(lines) or lines[i] != "----":
            raise ValueError(f"line {i}: expected ---- after {command!r}")
        i += 1
        out: list[str] = []
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        blocks.append((pre, command, "\n".join(out)))
        pre = []
    return blocks


def run_file(path: Path, *, rewrite: bool = False) -> list[str]:
    """Run one script; return the mismatches (or rewrite the file and return none)."""
    return replay(path, Script().run, rewrite=rewrite)


def replay(path: Path, run: Callable[[str], str], *, rewrite: bool = False) -> list[str]:
    """Run each command of the script at `path` through `run` (single- or multi-node); return
    the mismatches with the transcript, or with `rewrite` write the new outputs and return none."""
    mismatches: list[str] = []
    rendered: list[str] = []
    for pre, command, expected in parse(path.read_text()):
        actual = run(command)
        if actual != expected:
            mismatches.append(
                f"{path.name}: {command}\n--- expected\n{expected}\n--- actual\n{actual}"
            )
        rendered.extend(line for line in pre if line.strip())
        rendered.extend([command, "----", actual, ""])
    if rewrite:
        text = "\n".join(rendered).rstrip("\n") + "\n"
        while "\n\n\n" in text:
            text = text.replace("\n\n\n", "\n\n")
        path.write_text(text)
        return []
    return mismatches


def main(argv: list[str]) -> int:
    """Replay (or with --rewrite regenerate) every single-node and multi-node script."""
    from tests.scenarios import multinode_files

    rewrite = "--rewrite" in argv
    failures = 0
    for path in sorted(HERE.glob("*.txt")):
        problems = run_file(path, rewrite=rewrite)
        failures += len(problems)
        for p in problems:
            print(p, end="\n\n")
    failures += multinode_files.main(["--rewrite"] if rewrite else [])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
