"""The reconcile planner: desired spec + observed objects + observed quorum -> one action.

Role: the whole decision logic of the operator as one pure function, `plan`, so every step is
unit-testable. The handlers observe, call `plan`, execute the one action, observe the objects and
the quorum again, and plan again. KIP-853 dynamic quorum: the first pod formats --standalone, the
others join as observers and are added one at a time; scale-down removes voters before pods go.

Rules, in order (the first that applies wins):
0. Paused (annotation metaquorum.dev/pause-reconciliation: "true"): `Paused`, nothing else; it
   carries the action the planner would take otherwise (`held`), so the status can say what
   waits, and resuming continues from there (the plan is a function of the world, not of
   history).
0b. A lost majority (lost_majority_rule.py; quorum_lost.py): `QuorumLost`, nothing else, unless
   the annotation metaquorum.dev/recover-from names the survivor (recovery.py: `Recover`, seen
   through until a leader answers); with a leader and no request left, the annotation is removed
   (`EndRecovery`).
1. Owned objects (ConfigMap, headless Service, client Service, PDB, StatefulSet) that are missing
   are created, stale ones updated, in that order (desired.py). A new StatefulSet has every
   pod: pod 0 bootstraps alone, the others start as observers (an adopted static quorum,
   spec.staticVoters: one per static voter); the ConfigMap records `formed` once a leader was
   seen (from then on a pod with an empty volume formats --no-initial-controllers, never
   --standalone).
2. Wait while the StatefulSet controller lags. A pod whose volume the format init container
   refused stops everything: Refused (Degraded).
   Upgrades (upgrades.py): the one pod down, failing on an old revision of the pod template
   (the spec was fixed after a bad image), is deleted to come back on the current one.
3. Wait for a leader (DescribeQuorum through the pods' stable names); a pod failing on a new
   image mid-roll is Refused (UpgradeStalled) instead.
4. A voter change issued and seen in the voter set but not yet committed: wait. One issued but
   not seen: issue the same change again (idempotent; the leader refuses a second one anyway).
   A static quorum (finalized kraft.version 0) is first migrated: UpgradeKraftVersion once
   every voter reports a directory id and is caught up, else Refused (migration.py).
5. Disk loss: a voter (id, A), no longer caught up, while its pod runs as observer (id, B):
   tombstone A in the ConfigMap, then RemoveRaftVoter (id, A); rule 6 adds (id, B) once it is
   caught up. Both caught up is a duplicate (members.py): named, not acted on.
6. Scale up / replacement: an observer whose id is a pod < spec.replicas and not a voter is
   added with AddRaftVoter once caught up (lag below a threshold) for `hold_ms` (before any
   removal, so a scale-down never removes the last voter while a member waits to be added).
7. Scale down: RemoveRaftVoter of the voter with the highest id >= spec.replicas, the leader
   last (the node lets a leader remove itself and resigns once the removal is committed).
8. Shrink the StatefulSet one replica when its last pod is no longer a voter (its PVC goes by
   the StatefulSet's whenScaled retention policy, from spec.storage.deleteClaimsOnScaleDown).
   Rules 4-8 act while some pods are down (a dead voter can be removed); those below wait
   until every pod exists and is ready (Refused, UpgradeStalled, when one fails on a new image).
9. OnDelete roll: delete one pod due for a restart (rolls.py: an old revision of the pod
   template, ConfigChanged or ImageChanged; or ManualRoll: the annotation
   metaquorum.dev/manual-roll on the pod, or on the MetadataQuorum for every pod there when it
   was first seen; or FileSystemResize: its PVC waits for a restart to grow the filesystem,
   FileSystemResizePending for fs_resize_grace_ms), highest ordinal first, the leader last,
   and the leader only as a follower: first ResignLeader (its node's POST /resign?epoch=N,
   KIP-595 EndQuorumEpoch to its successors), then wait until another voter leads; a leader
   still leading that epoch `resign_timeout_ms` after it was asked is deleted anyway (the
   node's SIGTERM hand-over resigns it). A quorum of one voter has nobody to hand over to.
   A quorum-wide manual roll with no pod left to restart: EndManualRoll (remove the annotation).
   An image roll first checks the versions the nodes report against the skew rule
   (upgrades.skew: Refused, VersionSkew).
10. Grow the StatefulSet to spec.replicas when every pod is a voter and spec.replicas is larger:
   the new pods start together as observers, rule 6 adds them one at a time.
11. Converged when the voters are exactly pods 0..replicas-1; otherwise wait.

Safety (every voter change and pod deletion): never two voter changes in flight (rule 4 first);
the voter set after the change (or without the deleted pod's voter) keeps more than half of its
members caught up (membership.safe_voter_set), else Wait with the reason.
Invariants: pure (no IO, no clock: `Progress.now_ms` is given); one action per call; never
touches an object it does not own (ownerReference uid).
"""

from __future__ import annotations

from collections.abc import Sequence

from metaquorum_operator import lost_majority_rule, migration, rolls, upgrades
from metaquorum_operator.actions import (
    IDLE,
    VOTER_CHANGES,
    Action,
    AddVoter,
    Apply,
    Converged,
    DeletePod,
    EndManualRoll,
    EndRecovery,
    Paused,
    QuorumLost,
    Recover,
    Refused,
    RemoveVoter,
    ResignLeader,
    ScaleStatefulSet,
    UpgradeKraftVersion,
    Wait,
)
from metaquorum_operator.desired import ORDER, Desired, NotOwned, objects
from metaquorum_operator.membership import (
    CatchUp,
    Progress,
    caught_up,
    healthy_keys,
    held,
    safe_voter_set,
)
from metaquorum_operator.observed import (
    Observed,
    ObservedQuorum,
    VoterKey,
)
from metaquorum_operator.quorum_lost import NodeView, formed_by_survey

__all__ = [
    "IDLE",
    "ORDER",
    "VOTER_CHANGES",
    "Action",
    "AddVoter",
    "Apply",
    "Converged",
    "DeletePod",
    "Desired",
    "EndManualRoll",
    "EndRecovery",
    "NotOwned",
    "Paused",
    "QuorumLost",
    "Recover",
    "Refused",
    "RemoveVoter",
    "ResignLeader",
    "ScaleStatefulSet",
    "UpgradeKraftVersion",
    "Wait",
    "plan",
]


def plan(
    desired: Desired,
    observed: Observed,
    quorum: ObservedQuorum | None = None,
    progress: Progress | None = None,
    nodes: Sequence[NodeView] = (),
) -> Action:
    if desired.controls.paused:
        # 0. paused: nothing, whatever the world looks like
        try:
            waiting = _plan(desired, observed, quorum, progress, nodes)
        except NotOwned as e:
            waiting = Wait(str(e))
        assert not isinstance(waiting, Paused)
        return Paused(waiting, roll_waits=rolls.roll_waits(desired.controls, observed))
    return _plan(desired, observed, quorum, progress, nodes)


def _plan(
    desired: Desired,
    observed: Observed,
    quorum: ObservedQuorum | None,
    progress: Progress | None,
    nodes: Sequence[NodeView] = (),
) -> Action:
    progress = progress or Progress()
    settings = desired.operator.catch_up
    led = quorum is not None and quorum.has_leader

    # 0b. a lost majority: say so, change nothing, unless the user names the survivor to
    # recover from; a recovery under way is seen through until a leader answers
    lost = lost_majority_rule.rule(desired, observed, led, nodes)
    if lost is not None:
        return lost
    formed = observed.formed or led or formed_by_survey(nodes)
    # 1. owned objects exist and are current
    step = objects(desired, observed, formed, observed.tombstones)
    if step is not None:
        return step
    sts = observed.statefulset
    assert sts is not None
    # 2. every member up before any step
    if sts.observed_generation < sts.generation:
        return Wait("the StatefulSet controller has not observed the latest StatefulSet")
    refused = sorted((p for p in observed.pods if p.volume_refused), key=lambda p: p.ordinal)
    if refused:
        p = refused[0]
        return Refused(f"{p.name}: {p.volume_refused}")
    fixed = upgrades.resume(desired.spec, observed)
    if fixed is not None:
        return fixed
    # 3. a leader to talk to
    if quorum is None or not quorum.has_leader:
        stall = upgrades.stalled(desired.spec, observed)
        if stall is not None:
            return stall
        down = _members_down(observed)
        return Wait(
            "no leader: waiting for the quorum to elect one" + (f"; {down}" if down else "")
        )
    return _quorum_rules(desired, observed, quorum, progress, settings)


def _members_down(observed: Observed) -> str | None:
    sts = observed.statefulset
    assert sts is not None
    live = [p for p in observed.pods if not p.terminating]
    if len(live) != sts.replicas or any(p.terminating for p in observed.pods):
        return f"{len(live)} of {sts.replicas} pods exist"
    unready = sorted(p.name for p in live if not p.ready)
    if unready or sts.ready_replicas < sts.replicas:
        return f"waiting for pods to be ready: {', '.join(unready) or 'status lagging'}"
    return None


def _quorum_rules(
    desired: Desired,
    observed: Observed,
    quorum: ObservedQuorum,
    progress: Progress,
    settings: CatchUp,
) -> Action:
    sts = observed.statefulset
    assert sts is not None
    target = desired.spec.replicas
    voters = quorum.voter_keys()
    healthy = healthy_keys(quorum, settings)
    voter_ids = {k.id for k in voters}
    # 4. one voter change at a time
    pending = progress.pending
    if pending is not None:
        what = f"{pending.kind} voter {pending.key.id} ({pending.key.directory_id or 'no dir'})"
        if pending.reflected(quorum):
            return Wait(f"{what}: waiting for the voter change to commit")
        if pending.kind == "remove":
            return _checked_remove(pending.key, voters, healthy, quorum, f"resuming: {what}")
        if pending.key in {o.key for o in quorum.observers}:
            return _checked_add(pending.key, voters, healthy, f"resuming: {what}")
        return Wait(f"{what}: issued, not in the quorum yet")
    # a static quorum (kraft.version 0) moves to kraft.version 1 before any voter change
    migrate = migration.step(quorum, healthy)
    if migrate is not None:
        return migrate
    # 5. disk loss: the old incarnation goes first (a node id is a voter once)
    observers_by_id: dict[int, list[VoterKey]] = {}
    for o in quorum.observers:
        if o.id < sts.replicas and caught_up(o, quorum, settings):
            observers_by_id.setdefault(o.id, []).append(o.key)
    for v in sorted(voters):
        fresh = [k for k in observers_by_id.get(v.id, []) if k != v]
        # only when the old incarnation is gone (not caught up): two live ones are a duplicate
        # the operator names (members.py) and leaves alone
        if fresh and v.directory_id and v not in healthy:
            if v.directory_id not in observed.tombstones:
                tombstones = observed.tombstones | {v.directory_id}
                cm = desired.manifests(sts.replicas, True, tombstones)["ConfigMap"]
                return Apply(
                    "ConfigMap",
                    cm,
                    create=False,
                    reason=f"voter {v.id} came back with a new directory {fresh[0].directory_id}:"
                    f" its old directory {v.directory_id} is refused from now on",
                )
            return _checked_remove(
                v, voters, healthy, quorum, f"voter {v.id} lost its disk (now {fresh[0]})"
            )
    # 6. add observers that are pods within spec.replicas, once caught up long enough
    for oid in sorted(observers_by_id):
        if oid >= target or oid in voter_ids:
            continue
        keys = observers_by_id[oid]
        if len(keys) > 1:
            return Wait(f"node {oid} has {len(keys)} caught-up incarnations: waiting for one")
        key = keys[0]
        if not held(progress, key, settings):
            return Wait(f"observer {oid} is catching up (needs {settings.hold_ms} ms caught up)")
        return _checked_add(key, voters, healthy, f"node {oid} caught up as an observer")
    # 7. scale down: voters beyond spec.replicas, highest id first, the leader last
    extra = sorted(
        (k for k in voters if k.id >= target), key=lambda k: (k.id == quorum.leader_id, -k.id)
    )
    if extra:
        return _checked_remove(extra[0], voters, healthy, quorum, f"scaling down to {target}")
    # 8. shrink the StatefulSet once its last pod is no longer a voter
    if sts.replicas > target:
        last = sts.replicas - 1
        if last in voter_ids:
            return Wait(f"pod {last} is still a voter")
        return ScaleStatefulSet(last, f"scaling down toward {target}: pod {last} is no voter")
    # every member up before a roll or a new member
    down = _members_down(observed)
    if down:
        return upgrades.stalled(desired.spec, observed) or Wait(down)
    # 9. OnDelete roll, one pod at a time, highest ordinal first, the leader last
    manual = rolls.roll_uids(desired.controls, progress, observed)
    due = rolls.due(
        observed.pods,
        (desired.spec.image, sts.update_revision, manual),
        quorum.leader_id,
        now_ms=progress.now_ms,
        grace_ms=settings.fs_resize_grace_ms,
    )
    if any(cause == "ImageChanged" for _, cause, _ in due):
        skewed = upgrades.skew(desired.spec, observed, quorum)
        if skewed is not None:
            return skewed
    if due:
        p, cause, why = due[0]
        still = frozenset(k for k in healthy if k.id != p.ordinal)
        others = frozenset(k for k in voters if k.id != p.ordinal)
        # One or two voters cannot stay available through a restart: roll only with the
        # other caught up (as Strimzi's KafkaQuorumCheck does), never losing an entry.
        ok = others <= still if len(voters) <= 2 else safe_voter_set(voters, still)
        if not ok:
            return Wait(f"{why}; the others are not caught up")
        if p.ordinal == quorum.leader_id and len(voters) > 1:
            step = _resign_first(p.name, quorum, progress, settings)
            if step is not None:
                return step
        return DeletePod(p.name, why, cause)
    if rolls.roll_done(desired.controls, progress, observed):
        return EndManualRoll("manual roll done: every pod was restarted once")
    # 10. grow to the target at once when every pod is a voter: the new pods start as
    # observers together and rule 6 adds them one at a time as each catches up
    if sts.replicas < target:
        missing = [i for i in range(sts.replicas) if i not in voter_ids]
        if missing:
            return Wait(f"pod {missing[0]} is not a voter yet")
        return ScaleStatefulSet(target, f"scaling up to {target} replicas")
    # 11. converged
    missing = [i for i in range(target) if i not in voter_ids]
    if missing:
        return Wait(f"node {missing[0]} is not a voter (waiting for it to join as an observer)")
    return Converged()


def _resign_first(
    pod: str, quorum: ObservedQuorum, progress: Progress, settings: CatchUp
) -> Action | None:
    """The leader's pod is next in a roll: ask it to resign, wait for another leader, or (None)
    roll it anyway once it ignored the request for settings.resign_timeout_ms."""
    leader, epoch = quorum.leader_id, quorum.leader_epoch
    asked = progress.resign_asked
    if asked is None or asked[:2] != (leader, epoch):
        return ResignLeader(pod, leader, epoch, f"{pod} leads epoch {epoch} and is rolled last")
    if progress.now_ms - asked[2] < settings.resign_timeout_ms:
        return Wait(f"{pod} was asked to resign epoch {epoch}: waiting for another leader")
    return None


def _checked_remove(
    key: VoterKey,
    voters: frozenset[VoterKey],
    healthy: frozenset[VoterKey],
    quorum: ObservedQuorum,
    why: str,
) -> Action:
    after = voters - {key}
    if not after:
        return Wait(f"{why}: would remove the last voter")
    if not safe_voter_set(after, healthy):
        return Wait(f"{why}: removing voter {key.id} would leave no caught-up majority")
    return RemoveVoter(key, why)


def _checked_add(
    key: VoterKey, voters: frozenset[VoterKey], healthy: frozenset[VoterKey], why: str
) -> Action:
    if key not in healthy:
        return Wait(f"{why}: observer {key.id} is not caught up")
    if not safe_voter_set(voters | {key}, healthy):
        return Wait(f"{why}: adding voter {key.id} would leave no caught-up majority")
    return AddVoter(key, why)
