"""e2e/userkind.py (`make cluster KIND=1`): its refusals and the commands it runs, with stand-ins.

Stand-in `podman`, `docker` and `kind` executables on PATH record every call (argv and the
KIND_EXPERIMENTAL_PROVIDER they saw) and fail where a test says; the real kind + Podman refusal
is tests/containers/test_kind_refusal.py. Checked: a node image that cannot be pulled is one
line naming the image, the runtime's own cause and both fixes, and nothing is created (no
`kind create`, no image build, no state dir); a runtime is picked as kind would (Docker only when
its daemon answers); an archive is loaded and its tag used; the create and load commands; a
failed load deletes the cluster it made, kind's leftover volume and the `kind` network it made
(not one that was there). No root, no network; under 2 s.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "e2e"))
import userkind  # noqa: E402

DEFAULT = userkind.DEFAULT_NODE_IMAGES["v0.30.0"]
NO_HOST = (
    "Error: initializing source docker://kindest/node@sha256:7416: pinging container registry "
    'registry-1.docker.io: Get "https://registry-1.docker.io/v2/": dial tcp: lookup '
    "registry-1.docker.io on 10.255.255.53:53: no such host"
)
STAND_IN = """#!/bin/bash
echo "$(basename "$0") [${KIND_EXPERIMENTAL_PROVIDER:-}] $*" >> "$FAKE_LOG"
call="$(basename "$0") $*"
while IFS= read -r rule; do  # FAKE_RULES: lines `<glob>|<exit>|<stdout>|<stderr>`
    [[ -z "$rule" ]] && continue
    IFS='|' read -r glob code out err <<< "$rule"
    if [[ "$call" == $glob ]]; then
        [[ -n "$out" ]] && echo "$out"
        [[ -n "$err" ]] && echo "$err" >&2
        exit "$code"
    fi
done <<< "${FAKE_RULES:-}"
exit 0
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("podman", "docker", "kind"):
        (bin_dir / name).write_text(STAND_IN)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("KIND_BIN", str(bin_dir / "kind"))
    for var in ("KIND_EXPERIMENTAL_PROVIDER", "KIND_NODE_IMAGE", "KIND_NODE_IMAGE_ARCHIVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(userkind, "STATE", tmp_path / "state")
    monkeypatch.setattr(userkind, "NAME", "mq-test")
    archives = [tmp_path / "metaquorum-node-0.1.0.oci.tar", tmp_path / "metaquorum-op.oci.tar"]
    monkeypatch.setattr(userkind, "dist_archives", lambda: archives)
    yield log


def rules(monkeypatch: pytest.MonkeyPatch, *lines: str) -> None:
    monkeypatch.setenv("FAKE_RULES", "\n".join(lines))


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines()


def clients() -> Path:
    return Path("/opt/clients")


DOCKER_DOWN = "docker info|1||Cannot connect to the Docker daemon at unix:///var/run/docker.sock"


def test_unpullable_node_image_is_one_line_and_creates_nothing(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []

    def dist_archives() -> list[Path]:
        built.append(1)
        return []

    monkeypatch.setattr(userkind, "dist_archives", dist_archives)
    rules(monkeypatch, DOCKER_DOWN, "podman image inspect *|1||", f"podman pull *|125||{NO_HOST}")
    with pytest.raises(userkind.KindRefused) as e:
        userkind.up(clients)
    line = str(e.value)
    assert "\n" not in line
    assert "kind's node image kindest/node:v1.34.0 is not in podman's store" in line
    assert "(dial tcp: lookup registry-1.docker.io on 10.255.255.53:53: no such host)" in line
    assert "KIND_NODE_IMAGE_ARCHIVE=" in line and "`make cluster` without KIND=1" in line
    assert f"podman [] pull docker.io/kindest/node@sha256:{DEFAULT.split(':')[-1]}" in calls(fake)
    assert not any(c.startswith("kind") and " create " in c for c in calls(fake))
    assert not built and not userkind.STATE.exists()


def test_docker_is_used_only_when_its_daemon_answers(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules(monkeypatch, DOCKER_DOWN)
    assert userkind.pick_runtime() == "podman"
    rules(monkeypatch)
    assert userkind.pick_runtime() == "docker"
    rules(monkeypatch, DOCKER_DOWN, "podman info|125||Error: cannot clone: Operation not permitted")
    with pytest.raises(userkind.KindRefused) as e:
        userkind.pick_runtime()
    assert str(e.value) == (
        "kind needs Docker or Podman, and none answers here (docker: Cannot connect to the "
        "Docker daemon at unix:///var/run/docker.sock; podman: cannot clone: Operation not "
        f"permitted): install or start one, {userkind.FALLBACK}"
    )
    monkeypatch.setenv("KIND_EXPERIMENTAL_PROVIDER", "nerdctl")
    with pytest.raises(userkind.KindRefused, match="is not docker or podman"):
        userkind.pick_runtime()


def test_create_and_load_commands(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules(monkeypatch, DOCKER_DOWN)  # podman: the image is present, kind succeeds
    assert userkind.up(clients) == 0
    kind = f"{fake.parent / 'bin' / 'kind'}"
    kc = userkind.STATE / "kubeconfig"
    ran = [c for c in calls(fake) if c.startswith("kind") and "get clusters" not in c]
    assert ran == [
        f"kind [podman] create cluster --name mq-test --image {DEFAULT} --kubeconfig {kc} "
        "--wait 180s",
        f"kind [podman] load image-archive {fake.parent}/metaquorum-node-0.1.0.oci.tar "
        "--name mq-test",
        f"kind [podman] load image-archive {fake.parent}/metaquorum-op.oci.tar --name mq-test",
    ]
    assert userkind.Kind(kind, "podman", "mq-test", userkind.STATE).create_argv(DEFAULT)[0] == kind


def test_a_failed_load_deletes_the_cluster_it_made(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules(monkeypatch, DOCKER_DOWN, "kind load *|1||ERROR: failed to load image",
          "podman volume ls *|0|vol1|")  # fmt: skip
    with pytest.raises(userkind.KindRefused, match=r"kind load image-archive .* failed"):
        userkind.up(clients)
    kc = userkind.STATE / "kubeconfig"
    ran = calls(fake)
    assert f"kind [podman] delete cluster --name mq-test --kubeconfig {kc}" in ran
    assert "podman [] volume ls --quiet --filter label=mq-test-control-plane" in ran
    assert "podman [] volume rm --force vol1" in ran
    assert ran[-1] == "podman [] network rm kind"  # made by this create: no `kind` network before
    assert not userkind.STATE.exists()


def test_a_failed_create_keeps_a_kind_network_that_was_there(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules(monkeypatch, DOCKER_DOWN, "kind create *|1||ERROR: failed to create cluster",
          "podman network ls *|0|kind|")  # fmt: skip
    with pytest.raises(userkind.KindRefused, match="kind create cluster failed"):
        userkind.up(clients)
    assert not any("network rm" in c or " load " in c for c in calls(fake))
    assert not userkind.STATE.exists()


def test_an_archive_is_loaded_and_its_tag_used(
    fake: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    archive = tmp_path / "kindest-node.tar"
    archive.write_bytes(b"x")
    monkeypatch.setenv("KIND_NODE_IMAGE_ARCHIVE", str(archive))
    rules(monkeypatch, DOCKER_DOWN, "podman pull *|125||must not pull")
    assert userkind.up(clients) == 0
    assert f"podman [] load -i {archive}" in calls(fake)
    assert "podman [] image inspect docker.io/kindest/node:v1.34.0" in calls(fake)
    assert any("create cluster --name mq-test --image kindest/node:v1.34.0 " in c
               for c in calls(fake))  # fmt: skip
    rules(monkeypatch, DOCKER_DOWN, "podman image inspect *|1||")
    with pytest.raises(userkind.KindRefused, match=r"holds no docker\.io/kindest/node:v1\.34\.0"):
        userkind.up(clients)


def test_already_up_creates_nothing(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules(monkeypatch, DOCKER_DOWN, "kind get clusters|0|mq-test|")
    assert userkind.up(clients) == 0
    assert not any(" create " in c for c in calls(fake))


@pytest.mark.parametrize(
    ("image", "ref"),
    [
        (DEFAULT, f"docker.io/kindest/node@sha256:{DEFAULT.split(':')[-1]}"),
        ("kindest/node:v1.34.0", "docker.io/kindest/node:v1.34.0"),
        ("node:1", "docker.io/library/node:1"),
        ("localhost/x/y:1", "localhost/x/y:1"),
        ("quay.io/a/b:1@sha256:d", "quay.io/a/b@sha256:d"),
    ],
)
def test_podman_reference_is_the_one_kind_pulls(image: str, ref: str) -> None:
    assert userkind.runtime_ref("podman", image) == ref
    assert userkind.runtime_ref("docker", image) == image
