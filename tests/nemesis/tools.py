"""The nemesis tier's tools: the machine packages (scripts/nemesis-tools.sh: nftables,
iproute2, libfiu) and the Go program `mqnemesis` (tests/nemesis/go: the clients and the
porcupine checker), built once and cached under $METAQUORUM_CACHE/nemesis by a hash of its
sources (as bench/goload is), so a run never rebuilds it and every caller uses one binary.
Invariant: nothing is installed by hand; every tool comes from the project's own scripts and
the registries' ordinary clients (Debian's apt, the Go module proxy for porcupine)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GO_SRC = REPO / "tests" / "nemesis" / "go"
CACHE = Path(os.environ.get("METAQUORUM_CACHE", Path.home() / ".cache" / "metaquorum"))


@dataclass(frozen=True)
class Tools:
    mqnemesis: Path
    fiu_bin: Path  # holds fiu-run and fiu-ctrl


@cache
def tools() -> Tools:
    done = subprocess.run(
        [str(REPO / "scripts" / "nemesis-tools.sh")], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"scripts/nemesis-tools.sh failed: {done.stderr.strip()[-500:]}")
    return Tools(mqnemesis=mqnemesis_binary(), fiu_bin=Path(done.stdout.strip()))


def mqnemesis_binary() -> Path:
    h = hashlib.sha256()
    for p in sorted(GO_SRC.iterdir()):
        if p.suffix in (".go", ".mod", ".sum"):
            h.update(p.name.encode() + p.read_bytes())
    out = CACHE / "nemesis" / f"mqnemesis-{h.hexdigest()[:12]}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0")
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    subprocess.run(["go", "build", "-o", str(tmp), "."], cwd=GO_SRC, env=env, check=True)
    tmp.rename(out)
    return out
