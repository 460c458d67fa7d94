"""Each nemesis node's own disk: a small ext4 file system on a loop device, so the `full` fault
can make that one disk run out of space and the node meet a real ENOSPC from the kernel.

Role: `Disk.create()` makes a sparse image, formats it ext4 (no blocks reserved for root: the
nodes run as root) and mounts it at `node-N/disk`; the node's data dir lives inside it
(`node-N/disk/data`). `fill()` takes every free block with one preallocated file, then small
writes until the kernel answers ENOSPC; `unfill()` gives the space back. `release()` unmounts
(the loop device goes with it: `mount -o loop` sets autoclear) and deletes the image; a failing
run keeps a copy of the data dir first (`keep_data_in`).
Invariants: nothing is mounted outside the run directory; every mount made is unmounted by
`release()` (lazily if busy), so a finished run leaves no loop device behind.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import shutil
import subprocess
from pathlib import Path

IMAGE_MB = 256


class Disk:
    def __init__(self, node_dir: Path) -> None:
        self.image = node_dir / "disk.img"
        self.mount = node_dir / "disk"
        self.filler = self.mount / "filler"
        self.mounted = False

    @property
    def data(self) -> Path:
        return self.mount / "data"

    def create(self) -> None:
        self.mount.mkdir(parents=True, exist_ok=True)
        with self.image.open("wb") as f:
            f.truncate(IMAGE_MB << 20)
        _run("mkfs.ext4", "-q", "-F", "-m", "0", str(self.image))
        _run("mount", "-o", "loop", str(self.image), str(self.mount))
        self.mounted = True
        (self.mount / "lost+found").rmdir()  # the log dir holds only what the node writes

    def fill(self) -> int:
        """Take every free block (one preallocated file, then 4 KiB files until ENOSPC); the
        bytes taken."""

        def free() -> int:
            st = os.statvfs(self.mount)
            return st.f_bavail * st.f_frsize

        before = free()
        with self.filler.open("wb") as f, contextlib.suppress(OSError):
            os.posix_fallocate(f.fileno(), 0, before)  # may stop short, keeping what it took
        for k in itertools.count():
            try:
                with (self.mount / f"filler.{k}").open("wb") as f:
                    f.write(b"\0" * 4096)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                return before - free()
        raise AssertionError("unreachable")

    def unfill(self) -> None:
        for p in self.mount.glob("filler*"):
            p.unlink(missing_ok=True)

    def release(self, keep_data_in: Path | None = None) -> None:
        if self.mounted:
            if keep_data_in is not None and self.data.exists():
                shutil.copytree(self.data, keep_data_in, dirs_exist_ok=True)
            if subprocess.run(["umount", str(self.mount)], check=False).returncode != 0:
                subprocess.run(["umount", "-l", str(self.mount)], check=False)
            self.mounted = False
        self.image.unlink(missing_ok=True)


def _run(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: rc {done.returncode}: {done.stderr.strip()}")
