"""Where backups live: a plain directory (a path, `file://`, a PVC) or S3-compatible object
storage (`s3://bucket/prefix`, backup/s3.py).

Role: `open_destination(url)` gives a `Destination` that stores a backup's files under
`<root>/<name>/<file>`; `split_backup_url("URL/NAME")` splits a backup's address. A backup's
writer puts every data file first and the manifest last (backup/create.py).

Invariants: a local file appears under its final name only whole and fsync'd (temp file,
fsync, rename, directory fsync), so a crash midway leaves no manifest; a destination that does
not exist is refused with one line (`BackupError`), never created behind the user's back
(except the backup's own sub-directory).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

from metaquorum.backup.manifest import MANIFEST, BackupError
from metaquorum.storage.fsutil import fsync_dir


class Destination(Protocol):
    url: str

    def put_file(self, name: str, file: str, source: Path) -> None: ...

    def put_bytes(self, name: str, file: str, data: bytes) -> None: ...

    def get_file(self, name: str, file: str, target: Path) -> None: ...

    def get_bytes(self, name: str, file: str) -> bytes: ...

    def names(self) -> list[str]:
        """Names of the complete backups (those with a manifest), oldest name first."""
        ...

    def delete_manifest(self, name: str) -> None:
        """Remove backup `name`'s manifest (durably): from then on it is not listed."""
        ...

    def delete_files(self, name: str, files: list[str]) -> None:
        """Remove these data files of backup `name` (absent ones are no error), then its
        directory when empty (local)."""
        ...


def split_backup_url(url: str) -> tuple[str, str]:
    """`URL/NAME` -> (URL, NAME)."""
    trimmed = url.rstrip("/")
    root, sep, name = trimmed.rpartition("/")
    if not sep or not name or not root or root.endswith(":/"):
        raise BackupError(f"{url!r} names no backup: give URL/NAME (see `metaquorum backup list`)")
    return root, name


def open_destination(url: str) -> Destination:
    parsed = urlparse(url)
    if parsed.scheme == "s3":
        from metaquorum.backup.s3 import S3Destination

        return S3Destination(url)
    if parsed.scheme == "file":
        return LocalDestination(Path(parsed.path), url)
    if parsed.scheme and len(parsed.scheme) > 1:
        raise BackupError(f"{url}: unknown scheme {parsed.scheme!r}: use a path, file:// or s3://")
    return LocalDestination(Path(url), url)


class LocalDestination:
    def __init__(self, root: Path, url: str) -> None:
        self.root = root
        self.url = url

    def _root(self) -> Path:
        if not self.root.is_dir():
            raise BackupError(
                f"{self.url}: directory {self.root} does not exist: create it or mount the volume"
            )
        return self.root

    def _dir(self, name: str) -> Path:
        d = self._root() / name
        d.mkdir(exist_ok=True)
        return d

    def put_file(self, name: str, file: str, source: Path) -> None:
        d = self._dir(name)
        tmp = d / f".{file}.tmp"
        with source.open("rb") as src, tmp.open("wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, d / file)
        fsync_dir(d)

    def put_bytes(self, name: str, file: str, data: bytes) -> None:
        d = self._dir(name)
        tmp = d / f".{file}.tmp"
        with tmp.open("wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, d / file)
        fsync_dir(d)

    def _path(self, name: str, file: str) -> Path:
        path = self._root() / name / file
        if not path.is_file():
            what = "has no manifest (incomplete or absent)" if file == MANIFEST else f"lacks {file}"
            raise BackupError(f"backup {name} at {self.url} {what}: see `metaquorum backup list`")
        return path

    def get_file(self, name: str, file: str, target: Path) -> None:
        shutil.copyfile(self._path(name, file), target)

    def get_bytes(self, name: str, file: str) -> bytes:
        return self._path(name, file).read_bytes()

    def names(self) -> list[str]:
        root = self._root()
        return sorted(d.name for d in root.iterdir() if (d / MANIFEST).is_file())

    def delete_manifest(self, name: str) -> None:
        d = self._root() / name
        (d / MANIFEST).unlink(missing_ok=True)
        fsync_dir(d)

    def delete_files(self, name: str, files: list[str]) -> None:
        d = self._root() / name
        for file in files:
            if "/" in file or file in ("", ".", ".."):
                raise BackupError(f"backup {name} names a file {file!r} outside it: not deleted")
            (d / file).unlink(missing_ok=True)
        fsync_dir(d)
        try:
            d.rmdir()  # only when nothing else is left in it
        except OSError:
            return
        fsync_dir(self._root())
