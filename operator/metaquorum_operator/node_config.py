"""The node's configuration as the operator renders it, and the format init container's script.

Role: from a `QuorumSpec` build server.properties (Kafka's names: a KIP-853 dynamic quorum found
through `controller.quorum.bootstrap.servers`, auto-join off, or an adopted static quorum's
`controller.quorum.voters`; TLS settings with the file locations as env, `tls_env`), the part of
it whose change needs a pod restart (`restart_relevant_config`), and FORMAT_SCRIPT, the shell the
format init container runs (KIP-853 bootstrap: --standalone, --no-initial-controllers, a
restore or a recovery; a formatted volume checked, never reformatted). builders.py puts these
into the ConfigMap and the StatefulSet (and re-exports the names).

Invariants: pure and deterministic (same spec -> same properties and script); the per-pod keys
(node.id, listeners) and paths (metadata.log.dir, TLS files) are never in server.properties but
in the containers' env (builders._env, `tls_env`); a refusal of the script is one line
prefixed REFUSED_PREFIX and exit REFUSED_EXIT (the pod's termination message).
"""

from __future__ import annotations

from typing import Any

from metaquorum_operator.model import CONFIG_DIR, CONFIG_FILE, TLS_DIR, Names, QuorumSpec
from metaquorum_operator.recovery import RECOVER_SCRIPT
from metaquorum_operator.tls_client import CA, COMBINED

BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"
STATIC_VOTERS = "controller.quorum.voters"
AUTO_JOIN = "controller.quorum.auto.join.enable"
RESIGN_ENABLE = "metaquorum.http.resign.enable"
# ConfigMap keys besides server.properties, read by the format init container.
BOOTSTRAP_KEY = "bootstrap"  # "standalone" until the quorum has had a leader, then "join"
TOMBSTONES_KEY = "removed-directory-ids"  # one replaced directory id per line
REFUSED_EXIT = 3
REFUSED_PREFIX = "metaquorum-refused: "
# The format init container (KIP-853 bootstrap). "$@" is its args (--config <file>); the node's
# METAQUORUM_<KEY> env overrides apply. A formatted volume is checked, never reformatted: it must
# hold this cluster, this node id and a directory id that was not replaced; else the container
# exits REFUSED_EXIT with one line, its termination message (FallbackToLogsOnError), and the pod
# does not start.
# An empty volume formats --standalone on pod 0 of a new quorum, else --no-initial-controllers
# (the member joins as an observer and the operator adds it); with controller.quorum.voters in
# the config (spec.staticVoters) never --standalone: every pod formats as a static voter does
# (meta.properties only, the same files).
FORMAT_SCRIPT = f"""set -u
cfg={CONFIG_DIR}
meta="$METAQUORUM_METADATA_LOG_DIR/meta.properties"
fix="delete this pod's PVC (and the pod) to start it empty"
refuse() {{ echo "{REFUSED_PREFIX}$*"; exit {REFUSED_EXIT}; }}
if [ -f "$meta" ]; then
  cid=$(sed -n 's/^cluster[.]id=//p' "$meta")
  nid=$(sed -n 's/^node[.]id=//p' "$meta")
  did=$(sed -n 's/^directory[.]id=//p' "$meta")
  [ "$cid" = "$CLUSTER_ID" ] || refuse "the volume holds cluster $cid, not $CLUSTER_ID: $fix"
  [ "$nid" = "$METAQUORUM_NODE_ID" ] || refuse "the volume holds node $nid, not this one: $fix"
  if [ -n "$did" ] && grep -qxF "$did" "$cfg/{TOMBSTONES_KEY}" 2>/dev/null; then
    refuse "directory $did was replaced in the quorum and may not rejoin: $fix"
  fi
{RECOVER_SCRIPT}  echo "volume formatted for cluster $cid, node $nid, directory $did"
  exit 0
fi
mode=--no-initial-controllers
static=$(sed -n 's/^controller[.]quorum[.]voters=//p' "$cfg/{CONFIG_FILE}")
if [ -z "$static" ] && [ "$METAQUORUM_NODE_ID" = 0 ] \
  && [ "$(cat "$cfg/{BOOTSTRAP_KEY}")" = standalone ]; then
  if [ -n "${{RESTORE_FROM:-}}" ]; then
    # spec.restoreFrom: pod 0 of a new quorum starts from a backup (restore_from.py)
    out=$(metaquorum backup restore "$RESTORE_FROM" "$@" --cluster-id "$CLUSTER_ID" 2>&1) \
      || refuse "$(printf '%s\n' "$out" | tail -n 1)"
    echo "$out"
    exit 0
  fi
  mode=--standalone
fi
exec metaquorum storage format "$@" --cluster-id "$CLUSTER_ID" $mode
"""


def bootstrap_servers(spec: QuorumSpec, names: Names) -> str:
    """`controller.quorum.bootstrap.servers`: the stable names of pods 0..replicas-1."""
    return ",".join(f"{names.pod_fqdn(i)}:{spec.controller_port}" for i in range(spec.replicas))


def node_properties(spec: QuorumSpec, names: Names) -> dict[str, str]:
    """The node configuration shared by all pods, with Kafka's names: a dynamic quorum (KIP-853)
    found through `controller.quorum.bootstrap.servers`; auto-join off, as the operator adds
    and removes voters itself (docs/operator.md says why). The per-pod keys (node.id, the
    listeners) and metadata.log.dir come from the container's env (`builders._env`), as the node's
    METAQUORUM_<KEY> overrides."""
    protocol = "SSL" if spec.tls_enabled else "PLAINTEXT"
    props = {
        "process.roles": "controller",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"CONTROLLER://:{spec.controller_port}",
        "listener.security.protocol.map": f"CONTROLLER:{protocol}",
        BOOTSTRAP_SERVERS: bootstrap_servers(spec, names),
        AUTO_JOIN: "false",
        # POST /resign?epoch=N: a roll moves leadership off a leader before deleting its pod
        RESIGN_ENABLE: "true",
    }
    if spec.static_voters:
        # an adopted static quorum (spec.staticVoters): its nodes start from this voter set
        # until the log holds a VotersRecord (kraft.version 1, migration.py)
        props[STATIC_VOTERS] = spec.static_voters
    if spec.tls_enabled:
        # PEM key + chain and CA from the Secret mounted at TLS_DIR; the file locations are
        # env (`tls_env`), as paths are. Mutual TLS between controllers, as Strimzi does.
        props.update(
            {
                "ssl.keystore.type": "PEM",
                "ssl.truststore.type": "PEM",
                "ssl.client.auth": "required",
            }
        )
    props.update(spec.config)
    return props


def tls_env(spec: QuorumSpec) -> list[dict[str, Any]]:
    """The TLS file locations in the mounted Secret, as METAQUORUM_<KEY> env (a path in env,
    not in server.properties, like metadata.log.dir): Kafka's PEM keystore file holds the
    private key and the chain (cert-manager: additionalOutputFormats CombinedPEM), the trust
    store the CA (ca.crt). The CRD refuses these keys in spec.config."""
    if not spec.tls_enabled:
        return []
    return [
        {"name": "METAQUORUM_SSL_KEYSTORE_LOCATION", "value": f"{TLS_DIR}/{COMBINED}"},
        {"name": "METAQUORUM_SSL_TRUSTSTORE_LOCATION", "value": f"{TLS_DIR}/{CA}"},
    ]


def server_properties(spec: QuorumSpec, names: Names) -> str:
    props = node_properties(spec, names)
    lines = [f"{k}={props[k]}" for k in sorted(props)]
    return (
        "# generated by the metaquorum operator; edit spec.config instead\n"
        + "\n".join(lines)
        + "\n"
    )


def restart_relevant_config(spec: QuorumSpec, names: Names) -> dict[str, str]:
    """The configuration whose change needs a pod restart. The bootstrap servers list follows
    spec.replicas but only serves discovery (KIP-853), so scaling rolls no pod."""
    props = node_properties(spec, names)
    props.pop(BOOTSTRAP_SERVERS, None)
    return props
