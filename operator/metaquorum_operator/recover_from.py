"""The `metaquorum.dev/recover-from: "<pod>"` annotation: which survivor to re-form a lost
quorum around, checked (issue 31). The check gates the action: only a survivor accepted here is
recovered (recovery.py; docs/operator.md, "Recovering").

Role: `check_survivor` decides, purely, whether the named pod is a survivor fit to recover from,
given the lost majority (quorum_lost.py) and the pods' own views: it must be a current voter
that answered with a non-empty log, and hold at least as much as every other survivor (highest
log end epoch, then offset: the survivor whose log holds every record any survivor committed).
Anything else is refused with one line naming the better choice.

Invariants: pure; never accepts a pod that is not a survivor, or one behind another survivor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from metaquorum_operator.model import RECOVER_FROM_ANNOTATION, Names
from metaquorum_operator.quorum_lost import LostMajority, NodeView


def requested(annotations: Mapping[str, str] | None) -> str | None:
    value = str((annotations or {}).get(RECOVER_FROM_ANNOTATION, "")).strip()
    return value or None


def check_survivor(
    pod: str, names: Names, lost: LostMajority, views: Sequence[NodeView]
) -> tuple[int | None, str]:
    """(ordinal, line): the survivor's ordinal and an acceptance line, or (None, refusal)."""
    by_id = {v.ordinal: v for v in views}
    survivors = [by_id[s] for s in lost.survivors if s in by_id]
    best = max(survivors, key=lambda v: (v.log_end_epoch, v.log_end_offset), default=None)
    hint = f"; recover from {names.pod(best.ordinal)}" if best is not None else ""
    prefix = f"{names.name}-"
    suffix = pod.removeprefix(prefix)
    if not pod.startswith(prefix) or not suffix.isdigit():
        return None, f'{RECOVER_FROM_ANNOTATION}: "{pod}" is not a pod of {names.name}{hint}'
    ordinal = int(suffix)
    if ordinal not in lost.survivors:
        why = "came back empty" if ordinal in lost.empty else "is not a surviving voter"
        return None, f"{RECOVER_FROM_ANNOTATION}: {pod} {why}{hint}"
    mine = by_id[ordinal]
    assert best is not None
    if (mine.log_end_epoch, mine.log_end_offset) < (best.log_end_epoch, best.log_end_offset):
        return None, (
            f"{RECOVER_FROM_ANNOTATION}: {pod} holds less than {names.pod(best.ordinal)} (log end"
            f" {mine.log_end_offset} in epoch {mine.log_end_epoch} < {best.log_end_offset} in"
            f" epoch {best.log_end_epoch}){hint}"
        )
    return ordinal, (
        f"{RECOVER_FROM_ANNOTATION}: {pod} is the survivor to recover from (log end"
        f" {mine.log_end_offset}, epoch {mine.log_end_epoch})"
    )
