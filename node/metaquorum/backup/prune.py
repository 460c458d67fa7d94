"""Retention of backups: which complete backups a policy drops, and dropping them safely.

Role: `metaquorum backup prune URL --keep N [--max-age D]` (docs/backup.md, "Retention"), run
by the operator's backup Job after each `backup create`. `doomed` is the pure policy; `prune`
applies it to a `Destination`.

Policy: the backups considered are the complete ones (a manifest) whose name is
`backup_name`'s `<UTC time>-<end offset>`, newest first by that time. A backup is dropped when it
is beyond the newest `keep`, or (with `max_age`) older than `max_age` at `now`; the newest
backup is never dropped, whatever its age, so a policy never leaves zero backups.

Invariants: a backup is dropped **manifest first**, its data files after: from the moment its
manifest is gone it is no longer listed as complete (`Destination.names`), so a prune
interrupted midway never leaves a half-deleted backup that `list`, `verify` or `restore` would
take for a whole one — only files without a manifest, which the next prune finishes removing
only if they belong to a backup it dropped (files of a backup being written by a concurrent
`create`, which also have no manifest yet, are never touched: prune only removes what a
manifest it read named). Nothing else is deleted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from metaquorum.backup.destinations import Destination
from metaquorum.backup.manifest import BackupError
from metaquorum.backup.verify import read_manifest

_NAME = re.compile(r"^(\d{8}T\d{6}Z)-(\d{20})$")
_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `2w`, `3600s` -> a timedelta; anything else is one BackupError line."""
    m = _DURATION.match(text.strip())
    if m is None or int(m.group(1)) == 0:
        raise BackupError(
            f"--max-age {text!r}: give a positive number and a unit s, m, h, d or w, e.g. 30d"
        )
    return timedelta(seconds=int(m.group(1)) * _UNIT[m.group(2)])


def taken_at(name: str) -> datetime | None:
    """The UTC time a backup's name carries, None for a name `backup create` did not make."""
    m = _NAME.match(name)
    if m is None:
        return None
    return datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Policy:
    keep: int
    max_age: timedelta | None = None


def doomed(names: Sequence[str], policy: Policy, now: datetime) -> list[str]:
    """The backups `policy` drops among `names` (complete backups), oldest first."""
    if policy.keep < 1:
        raise BackupError(f"--keep {policy.keep}: keep at least 1 backup")
    dated = sorted(
        ((t, n) for n in names if (t := taken_at(n)) is not None), key=lambda p: (p[0], p[1])
    )
    newest_first = list(reversed(dated))
    out: list[str] = []
    for i, (t, n) in enumerate(newest_first):
        if i == 0:
            continue  # the newest backup stays, whatever its age
        too_many = i >= policy.keep
        too_old = policy.max_age is not None and now - t > policy.max_age
        if too_many or too_old:
            out.append(n)
    return list(reversed(out))


def prune(dest: Destination, policy: Policy, now: datetime) -> list[str]:
    """Drop the backups `policy` drops at `dest`: each one's manifest first, then the files
    its manifest names. Returns the dropped names, oldest first."""
    names = doomed(dest.names(), policy, now)
    for name in names:
        manifest = read_manifest(dest, name)
        dest.delete_manifest(name)
        dest.delete_files(name, [f.name for f in manifest.files])
    return names
