"""`make cluster KIND=1`: the same images on a kind cluster, with Docker or Podman.

Role: `usercluster.py up --kind` / `down --kind` / `status --kind`. kind (built from the Go module
proxy by e2e/tools/build-kind.sh, cached by version) creates a one-node cluster from its node
image (kindest/node) in Docker or Podman, and `kind load image-archive` loads the OCI archives
`make images` writes to dist/ (docker.io/metaquorum/{node,operator}:<version>), so the chart's
defaults and the sample's image resolve without a registry.

Invariants:
- everything that can fail without a registry or a runtime is checked before `kind create
  cluster` (the runtime answers, kind builds, the node image is in the runtime's store or loads
  from KIND_NODE_IMAGE_ARCHIVE or pulls, the images build): a refusal is one line naming the
  cause and the fix, exit 1, and leaves nothing (no cluster, container, network or kubeconfig);
- a failure after `kind create cluster` deletes that cluster again before the one line, and
  what kind leaves of a failed create: the node's volumes (Podman: labelled `<name>-control-plane`)
  and the `kind` network when it did not exist before (recorded in the state dir, so
  `down` removes it too, when no other cluster uses it);
- the node image is kind's own default for the pinned kind version (KIND_VERSION) unless
  KIND_NODE_IMAGE names another; an archive keeps tags, not registry digests, so with
  KIND_NODE_IMAGE_ARCHIVE the default is its tag without the digest.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KIND_VERSION = os.environ.get("KIND_VERSION", "v0.30.0")
# kind's pkg/apis/config/defaults/image.go at each pinned version (the image it would pull)
DEFAULT_NODE_IMAGES = {
    "v0.30.0": "kindest/node:v1.34.0@sha256:"
    "7416a61b42b1662ca6ca89f02028ac133a309a2a30ba309614e8ec94d976dc5a",
}
NAME = os.environ.get("MQ_KIND_NAME", "metaquorum")
STATE = Path(os.environ.get("MQ_KIND_STATE", "/var/lib/metaquorum-kind"))
FALLBACK = "or use `make cluster` without KIND=1 (the same Kubernetes, no registry needed)"


class KindRefused(Exception):
    """Bad input or a missing prerequisite: the one line to print."""


@dataclass(frozen=True)
class Kind:
    """A kind binary, the runtime it drives (docker | podman), the cluster's name and files."""

    kind: str
    runtime: str
    name: str
    state: Path

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    def env(self) -> dict[str, str]:
        return {**os.environ, "KIND_EXPERIMENTAL_PROVIDER": self.runtime}

    def create_argv(self, image: str) -> list[str]:
        return [self.kind, "create", "cluster", "--name", self.name, "--image", image,
                "--kubeconfig", str(self.kubeconfig), "--wait", "180s"]  # fmt: skip

    def load_argv(self, archive: Path) -> list[str]:
        return [self.kind, "load", "image-archive", str(archive), "--name", self.name]

    def delete_argv(self) -> list[str]:
        return [self.kind, "delete", "cluster", "--name", self.name,
                "--kubeconfig", str(self.kubeconfig)]  # fmt: skip

    def networks(self) -> list[str]:
        out = subprocess.run([self.runtime, "network", "ls", "--format", "{{.Name}}"],
                             capture_output=True, text=True, check=False)  # fmt: skip
        return out.stdout.split()

    def remove_leftovers(self) -> None:
        """What kind does not remove after a failed create: the node's volume (Podman) and the
        `kind` network when this tool's create made it (a network in use stays)."""
        if self.runtime == "podman":
            vols = subprocess.run(
                ["podman", "volume", "ls", "--quiet", "--filter",
                 f"label={self.name}-control-plane"],
                capture_output=True, text=True, check=False,
            ).stdout.split()  # fmt: skip
            if vols:
                subprocess.run(["podman", "volume", "rm", "--force", *vols],
                               capture_output=True, check=False)  # fmt: skip
        if (self.state / "made-network").exists():
            subprocess.run([self.runtime, "network", "rm", "kind"], capture_output=True,
                           check=False)  # fmt: skip

    def clusters(self) -> list[str]:
        out = subprocess.run([self.kind, "get", "clusters"], env=self.env(), check=False,
                             capture_output=True, text=True)  # fmt: skip
        return out.stdout.split()


def _last_line(text: str) -> str:
    """A tool's error, short: its last line's innermost three `a: b: c` causes."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else "no output"
    line = line.removeprefix("Error: ").removeprefix("error: ")
    return ": ".join(line.split(": ")[-3:])[:200]


def pick_runtime() -> str:
    """KIND_EXPERIMENTAL_PROVIDER if set, else Docker when its daemon answers, else Podman."""
    asked = os.environ.get("KIND_EXPERIMENTAL_PROVIDER", "")
    candidates = [asked] if asked else ["docker", "podman"]
    why = []
    for runtime in candidates:
        if runtime not in ("docker", "podman"):
            raise KindRefused(
                f"KIND_EXPERIMENTAL_PROVIDER={runtime} is not docker or podman: set one of those"
            )
        if shutil.which(runtime) is None:
            why.append(f"{runtime}: not on PATH")
            continue
        info = subprocess.run([runtime, "info"], capture_output=True, text=True, check=False)
        if info.returncode == 0:
            return runtime
        why.append(f"{runtime}: {_last_line(info.stderr or info.stdout)}")
    raise KindRefused(
        f"kind needs Docker or Podman, and none answers here ({'; '.join(why)}): install or "
        f"start one, {FALLBACK}"
    )


def node_image(runtime: str) -> str:
    """The node image to boot from, made present in the runtime's store, else KindRefused."""
    default = DEFAULT_NODE_IMAGES.get(KIND_VERSION)
    archive = os.environ.get("KIND_NODE_IMAGE_ARCHIVE", "")
    image = os.environ.get("KIND_NODE_IMAGE") or (
        default.split("@")[0] if archive and default else default
    )
    if not image:
        raise KindRefused(
            f"no default node image known for kind {KIND_VERSION}: name one "
            "(KIND_NODE_IMAGE=kindest/node:<version>)"
        )
    if archive:
        if not Path(archive).is_file():
            raise KindRefused(f"KIND_NODE_IMAGE_ARCHIVE={archive} is not a file: name the archive")
        load = subprocess.run([runtime, "load", "-i", archive], capture_output=True, text=True,
                              check=False)  # fmt: skip
        if load.returncode != 0:
            raise KindRefused(
                f"{runtime} load -i {archive} failed ({_last_line(load.stderr)}): name an image "
                "archive (`docker save kindest/node:<version>`)"
            )
    ref = runtime_ref(runtime, image)
    if _present(runtime, ref):
        return image
    if archive:
        raise KindRefused(
            f"{archive} holds no {ref}: name the reference it holds (KIND_NODE_IMAGE=...)"
        )
    pull = subprocess.run([runtime, "pull", ref], capture_output=True, text=True, check=False)
    if pull.returncode == 0:
        return image
    raise KindRefused(
        f"kind's node image {image.split('@')[0]} is not in {runtime}'s store and cannot be "
        f"pulled ({_last_line(pull.stderr)}): provide it as an archive "
        f"(KIND_NODE_IMAGE_ARCHIVE=<file from `docker save {image.split('@')[0]}` where a "
        f"registry is reachable> make cluster KIND=1), {FALLBACK}"
    )


def runtime_ref(runtime: str, image: str) -> str:
    """The reference kind itself looks up and pulls: with Podman, its provider's sanitizeImage
    (docker.io/ added to a name without a registry, library/ to one without a repository, and
    `name@digest` without the tag when a digest is given); with Docker, the image as named."""
    if runtime != "podman":
        return image
    name, _, digest = image.partition("@sha256:")
    rest = f"{name.rsplit(':', 1)[0] if ':' in name.split('/')[-1] else name}@sha256:{digest}"
    rest = rest if digest else image
    if "/" not in rest:
        rest = f"library/{rest}"
    first, slash, _ = name.partition("/")
    if not slash or (not any(c in first for c in ".:") and first != "localhost"):
        return f"docker.io/{rest}"
    return rest


def _present(runtime: str, ref: str) -> bool:
    argv = [runtime, "image", "inspect", ref]  # both runtimes: exit 0 only when it is there
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def _tool(*argv: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run([*argv], check=False, stdout=subprocess.PIPE, text=True, env=env)
    if out.returncode != 0:
        raise KindRefused(f"{Path(argv[0]).name} failed (see its output above)")
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def kind_binary() -> str:
    """KIND_BIN (a kind you have) or the one build-kind.sh builds from the Go module proxy."""
    if os.environ.get("KIND_BIN"):
        return os.environ["KIND_BIN"]
    bin_dir = _tool(str(HERE / "tools" / "build-kind.sh"), env={**os.environ,
                    "KIND_VERSION": KIND_VERSION})  # fmt: skip
    return str(Path(bin_dir) / "kind")


def dist_archives() -> list[Path]:
    """`make images`: the node and operator OCI archives in dist/ (built when not cached)."""
    _tool(sys.executable, str(HERE / "tools" / "dist_images.py"))
    images = json.loads((ROOT / "dist" / "images.json").read_text())
    return [ROOT / "dist" / i["archive"] for i in images]


def paste_lines(k: Kind, clients: Path) -> str:
    return (
        f"  export KUBECONFIG={k.kubeconfig} PATH={clients}:$PATH   # kubectl, helm\n"
        "  make cluster-down KIND=1    # deletes the kind cluster"
    )


def up(clients_bin: Callable[[], Path]) -> int:
    runtime = pick_runtime()
    k = Kind(kind_binary(), runtime, NAME, STATE)
    if NAME in k.clusters():
        print(f"make cluster KIND=1: kind cluster {NAME} is already up ({runtime})")
        print(paste_lines(k, clients_bin()))
        return 0
    image = node_image(runtime)
    archives = dist_archives()
    clients = clients_bin()
    k.state.mkdir(parents=True, exist_ok=True)
    if "kind" not in k.networks():
        (k.state / "made-network").touch()
    created = False
    try:
        if subprocess.run(k.create_argv(image), env=k.env(), check=False).returncode != 0:
            raise KindRefused(
                f"kind create cluster failed (its output is above; the cluster, its volume and "
                f"network are removed again), {FALLBACK}"
            )
        created = True
        for archive in archives:
            if subprocess.run(k.load_argv(archive), env=k.env(), check=False).returncode != 0:
                raise KindRefused(f"kind load image-archive {archive.name} failed (see above)")
    except KindRefused:
        if created or NAME in k.clusters():
            subprocess.run(k.delete_argv(), env=k.env(), check=False)
        k.remove_leftovers()
        shutil.rmtree(k.state, ignore_errors=True)
        raise
    print(f"make cluster KIND=1: kind cluster {NAME} up ({runtime}, {image.split('@')[0]}), "
          "images loaded. Next:")  # fmt: skip
    print(paste_lines(k, clients))
    return 0


def down() -> int:
    runtime = pick_runtime()
    k = Kind(kind_binary(), runtime, NAME, STATE)
    if NAME not in k.clusters():
        k.remove_leftovers()
        shutil.rmtree(k.state, ignore_errors=True)
        print(f"make cluster-down KIND=1: no kind cluster {NAME}; nothing to do")
        return 0
    if subprocess.run(k.delete_argv(), env=k.env(), check=False).returncode != 0:
        raise KindRefused(f"kind delete cluster --name {NAME} failed (see above)")
    k.remove_leftovers()
    shutil.rmtree(k.state, ignore_errors=True)
    print(f"make cluster-down KIND=1: kind cluster {NAME} deleted")
    return 0


def status() -> int:
    runtime = pick_runtime()
    k = Kind(kind_binary(), runtime, NAME, STATE)
    is_up = NAME in k.clusters()
    print(f"kind cluster {NAME}: {'up' if is_up else 'down'} ({runtime})")
    return 0
