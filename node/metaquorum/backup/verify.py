"""`metaquorum backup verify`: is a backup whole and readable? (also the first step of restore)

Role: fetch the manifest (its own checksum, backup/manifest.py) and every file it lists; check
each file's size and SHA-256; decode the snapshot (header, CRC of every batch, footer; its name
equal to the manifest's start offset and epoch); decode every segment batch by batch (CRC-32C,
offsets dense from the start offset to the end offset, epochs not decreasing, the last one the
manifest's end epoch); recompute the voter set and kraft.version at the end and compare them
with the manifest's.

Invariants: nothing is written outside `work`; the first failure is one `BackupError` line
naming the backup, the file and what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from metaquorum.backup.destinations import Destination
from metaquorum.backup.files import Membership, check_file, check_segments, check_snapshot
from metaquorum.backup.manifest import MANIFEST, BackupError, Manifest


@dataclass(frozen=True, slots=True)
class VerifyReport:
    manifest: Manifest
    records: int  # data records in the segments
    files: int


def read_manifest(dest: Destination, name: str) -> Manifest:
    where = f"{dest.url.rstrip('/')}/{name}"
    manifest = Manifest.parse(dest.get_bytes(name, MANIFEST), where)
    if manifest.name != name:
        raise BackupError(
            f"{where}: the manifest names backup {manifest.name}: it was moved or altered"
        )
    return manifest


def verify_backup(dest: Destination, name: str, work: Path) -> VerifyReport:
    """Download backup `name` into `work` (final file names) and check it."""
    manifest = read_manifest(dest, name)
    where = f"{dest.url.rstrip('/')}/{name}"
    for entry in manifest.files:
        if "/" in entry.name or entry.name.startswith("."):
            raise BackupError(f"{where}: bad file name {entry.name!r} in the manifest")
        dest.get_file(name, entry.name, work / entry.name)
        check_file(work / entry.name, entry, f"{where}/{entry.name}")
    membership = Membership()
    start, start_epoch = 0, 0
    snapshot = manifest.snapshot
    if snapshot is not None:
        start, start_epoch = check_snapshot(work / snapshot.name, snapshot, membership)
    if (start, start_epoch) != (manifest.start_offset, manifest.start_epoch):
        raise BackupError(
            f"{where}: starts at ({start}, epoch {start_epoch}), the manifest says "
            f"({manifest.start_offset}, epoch {manifest.start_epoch})"
        )
    segments = [(work / s.name, s) for s in manifest.segments]
    end, end_epoch, records = check_segments(segments, start, start_epoch, membership)
    if (end, end_epoch) != (manifest.end_offset, manifest.end_epoch):
        raise BackupError(
            f"{where}: ends at ({end}, epoch {end_epoch}), the manifest says "
            f"({manifest.end_offset}, epoch {manifest.end_epoch}): the backup is truncated"
        )
    if membership.kraft_version != manifest.kraft_version:
        raise BackupError(
            f"{where}: kraft.version {membership.kraft_version} in the files, "
            f"{manifest.kraft_version} in the manifest"
        )
    if manifest.voters_source == "log" and membership.voter_entries() != manifest.voters:
        raise BackupError(f"{where}: the voter set in the files differs from the manifest's")
    return VerifyReport(manifest, records, len(manifest.files))
