"""How the kubelet stand-in turns a Pod's container spec into a local process (pure functions).

Role: env resolution (values, downward API fieldRefs, ConfigMap/Secret keys, envFrom), Kubernetes'
`$(VAR)` expansion in env, command and args, and the mapping of volume mount paths to local
directories. No container runtime means no mount namespace: a mountPath such as
`/var/lib/metaquorum` is rewritten to the directory backing the volume wherever it appears as a
path prefix in command, args, env values and workingDir (longest mount path first). Processes
written for a container therefore run unchanged as long as they take their paths from their
arguments or environment, which is how our node and operator images are written.

Invariants: functions here do no IO; a reference to an unknown variable is left as written, as
the kubelet does; `$$(X)` is an escape for a literal `$(X)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion (k8s.io/kubernetes/third_party/forked/golang/expansion)."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env.get(name, m.group(0))

    return _VAR.sub(sub, text)


def field_ref(pod: Mapping[str, Any], path: str) -> str:
    """Value of a downward API fieldRef.fieldPath on a pod dict (camelCase API form)."""
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    status = pod.get("status", {})
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
        "status.podIPs": ",".join(p["ip"] for p in status.get("podIPs") or []),
    }
    if path not in simple:
        raise ValueError(f"unsupported fieldRef {path!r}")
    return str(simple[path] or "")


def resolve_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    configmaps: Mapping[str, Mapping[str, str]],
    secrets: Mapping[str, Mapping[str, str]],
) -> dict[str, str]:
    """The container's environment, in Kubernetes' order: envFrom first, then env, expanded."""
    env: dict[str, str] = {}
    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        if "configMapRef" in src:
            data = configmaps.get(src["configMapRef"]["name"], {})
        else:
            data = secrets.get(src["secretRef"]["name"], {})
        for k, v in data.items():
            env[prefix + k] = v
    for e in container.get("env") or []:
        name = e["name"]
        if "value" in e:
            env[name] = expand(str(e["value"]), env)
            continue
        vf = e.get("valueFrom") or {}
        if "fieldRef" in vf:
            env[name] = field_ref(pod, vf["fieldRef"]["fieldPath"])
        elif "configMapKeyRef" in vf:
            ref = vf["configMapKeyRef"]
            env[name] = configmaps.get(ref["name"], {}).get(ref["key"], "")
        elif "secretKeyRef" in vf:
            ref = vf["secretKeyRef"]
            env[name] = secrets.get(ref["name"], {}).get(ref["key"], "")
        elif "resourceFieldRef" in vf:
            env[name] = "0"
        else:
            env[name] = ""
    return env


def mount_map(
    container: Mapping[str, Any], volume_dirs: Mapping[str, str]
) -> list[tuple[str, str]]:
    """(mountPath, local dir) pairs, longest mountPath first; subPath appended to the dir."""
    pairs: list[tuple[str, str]] = []
    for vm in container.get("volumeMounts") or []:
        local = volume_dirs[vm["name"]]
        if vm.get("subPath"):
            local = f"{local}/{vm['subPath']}"
        pairs.append((vm["mountPath"].rstrip("/") or "/", local))
    pairs.sort(key=lambda p: len(p[0]), reverse=True)
    return pairs


def rewrite_paths(text: str, mounts: list[tuple[str, str]]) -> str:
    """Replace each mount path used as a path prefix in text by its local directory, in one
    pass (a replaced directory is never rewritten again)."""
    if not mounts:
        return text
    table = dict(mounts)
    alternation = "|".join(re.escape(m) for m, _ in mounts)
    pattern = re.compile(r"(?<![\w.-])(" + alternation + r")(?=$|[/:\s,;=\"'])")
    return pattern.sub(lambda m: table[m.group(1)], text)


def process_argv(
    container: Mapping[str, Any], env: Mapping[str, str], mounts: list[tuple[str, str]]
) -> list[str]:
    """command + args with $(VAR) expansion and mount path rewriting. Image entrypoints are
    not known here, so a container without `command` is refused."""
    command = list(container.get("command") or [])
    if not command:
        raise ValueError(f"container {container.get('name')!r} has no command")
    args = list(container.get("args") or [])
    return [rewrite_paths(expand(a, env), mounts) for a in command + args]
