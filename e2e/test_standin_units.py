"""Pure parts of the kubelet stand-in: $(VAR) expansion, env, mount paths, hosts entries.

Oracles: the expansion rules documented for Kubernetes container env/command, written out by
hand per case.
"""

from __future__ import annotations

import hostsfile
import podspec
import pytest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)", "1"),
        ("x$(A)y$(B)", "x1y2"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("$A", "$A"),
        ("$(A", "$(A"),
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert podspec.expand(text, {"A": "1", "B": "2"}) == expected


def test_env_order_field_refs_and_references() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
        "spec": {"nodeName": "n"},
        "status": {"podIP": "127.0.10.3"},
    }
    c = {
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "URL", "value": "http://$(IP):80"},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        ],
    }
    env = podspec.resolve_env(pod, c, {"cm": {"k": "v"}}, {})
    assert env == {
        "CM_k": "v",
        "IP": "127.0.10.3",
        "URL": "http://127.0.10.3:80",
        "APP": "x",
        "K": "v",
    }


def test_mount_paths_are_rewritten_as_path_prefixes_only() -> None:
    c = {
        "name": "c",
        "command": ["run", "--config=/etc/mq/a.properties"],
        "args": ["/var/lib/mq", "/var/lib/mqx", "/etc/mq", "$(D)/x"],
        "volumeMounts": [
            {"name": "a", "mountPath": "/var/lib/mq"},
            {"name": "b", "mountPath": "/etc/mq"},
        ],
    }
    mounts = podspec.mount_map(c, {"a": "/tmp/A", "b": "/tmp/B"})
    argv = podspec.process_argv(c, {"D": "/var/lib/mq"}, mounts)
    assert argv == [
        "run",
        "--config=/tmp/B/a.properties",
        "/tmp/A",
        "/var/lib/mqx",
        "/tmp/B",
        "/tmp/A/x",
    ]
    with pytest.raises(ValueError, match="no command"):
        podspec.process_argv({"name": "c"}, {}, [])


def test_hosts_entries_for_statefulset_pods_and_services() -> None:
    def pod(name: str, ip: str, ready: bool) -> dict:  # type: ignore[type-arg]
        return {
            "metadata": {"name": name, "namespace": "ns", "labels": {"app": "q"}},
            "spec": {"hostname": name, "subdomain": "h"},
            "status": {
                "podIP": ip,
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }

    pods = [pod("q-0", "127.0.10.1", True), pod("q-1", "127.0.10.2", False)]
    svcs = [
        {
            "metadata": {"name": "h", "namespace": "ns"},
            "spec": {"selector": {"app": "q"}, "publishNotReadyAddresses": True},
        },
        {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"selector": {"app": "q"}}},
    ]
    entries = set(hostsfile.entries(pods, svcs))
    assert ("127.0.10.2", "q-1.h.ns.svc.cluster.local") in entries
    assert ("127.0.10.2", "h.ns.svc") in entries  # publishNotReadyAddresses
    assert ("127.0.10.1", "c.ns.svc.cluster.local") in entries
    assert not any(ip == "127.0.10.2" and name.startswith("c.") for ip, name in entries)
