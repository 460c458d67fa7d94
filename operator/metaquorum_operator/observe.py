"""Observe and change a MetadataQuorum's live quorum through the admin client (KIP-595
DescribeQuorum, KIP-919 `--bootstrap-controller` discovery, KIP-853 Add/RemoveRaftVoter).

Role: what `kafka-metadata-quorum --bootstrap-controller <pods> describe --status` does, for the
operator: DescribeCluster on the pods' stable DNS names (any of them answers with the cluster id
and the active controller), then DescribeQuorum on the leader; the answer mapped (purely, by
`observed_quorum_of`) to the planner's `ObservedQuorum`. `change` sends the planner's AddVoter /
RemoveVoter to the leader as `kafka-metadata-quorum add-controller / remove-controller` does
(metaquorum.admin.reconfig); both answer once the VotersRecord is committed. `resign` asks a
leader to resign its epoch through its node's HTTP listener (POST /resign?epoch=N: Kafka has no
wire RPC for it; the node's `RaftClient.resign(epoch)`), before a roll deletes its pod.
`describe` also reads the finalized kraft.version (ApiVersions, as `kafka-features describe`),
and `node_reports` each node's software version (upgrades.py) and directory id (migration.py)
from its GET /status.

Invariants: `describe` never raises: any failure (no pod answers, no leader yet, timeout, a bad
reply) is an `Observation` with `quorum=None` and a one-line `error`; it is bounded by
`timeout_s` in total, and runs on its own event loop in the calling thread (the kopf timer's
worker thread), so the operator's event loop never waits on a node. With `tls` (a quorum with
spec.tls.enabled: tls_client.SecretTls) every connection is mutual TLS with the pods' own
certificate, host names verified.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from metaquorum.admin.client import (
    AdminClient,
    AdminError,
    QuorumInfo,
    ReplicaInfo,
    parse_bootstrap,
)
from metaquorum.admin.features import describe_features, update_features
from metaquorum.admin.reconfig import Listener, add_controller, remove_controller
from metaquorum.protocol.types import Uuid

from metaquorum_operator.actions import AddVoter, RemoveVoter
from metaquorum_operator.model import Names
from metaquorum_operator.observed import ObservedQuorum, ReplicaState
from metaquorum_operator.quorum_lost import NodeView

DESCRIBE_TIMEOUT_S = 3.0
CHANGE_TIMEOUT_S = 15.0
RESIGN_TIMEOUT_S = 3.0
VERSION_TIMEOUT_S = 1.0
# Kafka's Uuid.ZERO as a string: a replica that reports no directory id (pre-KIP-853 voter).
ZERO_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(frozen=True, slots=True)
class Observation:
    quorum: ObservedQuorum | None
    error: str = ""
    # each pod's own view (GET /status), surveyed when no leader answers (survey.py)
    nodes: tuple[NodeView, ...] = ()


def bootstrap_servers(names: Names, port: int, members: int) -> str:
    """`host:port,...` of the first `members` pods' stable names (the headless Service)."""
    return ",".join(f"{names.pod_fqdn(i)}:{port}" for i in range(members))


def observed_quorum_of(cluster_id: str | None, info: QuorumInfo) -> ObservedQuorum:
    """DescribeQuorum's answer as the planner and status see it: replicas with directory ids and
    progress, in the order the leader reported them; a ZERO directory id (none) becomes ''."""

    def replica(r: ReplicaInfo) -> ReplicaState:
        d = str(r.directory_id)
        return ReplicaState(
            id=r.replica_id,
            directory_id="" if d == ZERO_DIRECTORY_ID else d,
            log_end_offset=r.log_end_offset,
            last_fetch_ms=r.last_fetch_timestamp,
            last_caught_up_ms=r.last_caught_up_timestamp,
        )

    return ObservedQuorum(
        cluster_id=cluster_id or None,
        leader_id=info.leader_id,
        leader_epoch=info.leader_epoch,
        high_watermark=info.high_watermark,
        voters=tuple(replica(v) for v in info.voters),
        observers=tuple(replica(o) for o in info.observers),
    )


Tls = Callable[[], ssl.SSLContext] | None


async def describe_async(
    bootstrap: str, timeout_s: float = DESCRIBE_TIMEOUT_S, tls: Tls = None
) -> Observation:
    try:
        endpoints = parse_bootstrap(bootstrap)
    except AdminError as e:
        return Observation(None, str(e))
    admin = AdminClient(endpoints, timeout_s=timeout_s, tls=tls)
    admin.request_timeout_s = min(admin.request_timeout_s, max(timeout_s / 2, 0.1))
    try:
        async with asyncio.timeout(timeout_s):
            cluster = await admin.describe_cluster()
            info = await admin.describe_quorum()
        quorum = observed_quorum_of(cluster.cluster_id, info)
        with contextlib.suppress(AdminError, OSError, ValueError, TimeoutError):
            async with asyncio.timeout(timeout_s / 2):
                features = await describe_features(admin)
            kraft = next((f.finalized for f in features if f.name == "kraft.version"), None)
            quorum = dataclasses.replace(quorum, kraft_version=kraft)
        return Observation(quorum)
    except TimeoutError:
        return Observation(None, f"no answer from the quorum within {timeout_s:g} s")
    except AdminError as e:
        return Observation(None, str(e) or type(e).__name__)
    except (OSError, ValueError) as e:
        return Observation(None, f"{type(e).__name__}: {e}")
    finally:
        with contextlib.suppress(Exception):  # closing is best effort
            await admin.close()


def describe(bootstrap: str, timeout_s: float = DESCRIBE_TIMEOUT_S, tls: Tls = None) -> Observation:
    """Blocking form for a worker thread (kopf runs sync handlers in its thread pool)."""
    return asyncio.run(describe_async(bootstrap, timeout_s, tls))


async def change_async(
    action: AddVoter | RemoveVoter,
    bootstrap: str,
    endpoint: tuple[str, int],
    timeout_s: float = CHANGE_TIMEOUT_S,
    tls: Tls = None,
) -> None:
    """Send one voter change to the leader; returns once it is committed, raises AdminError
    with a one-line reason otherwise. `endpoint` is an added voter's CONTROLLER listener."""
    admin = AdminClient(parse_bootstrap(bootstrap), timeout_s=timeout_s, tls=tls)
    key = action.key
    directory = Uuid.from_string(key.directory_id or ZERO_DIRECTORY_ID)
    try:
        async with asyncio.timeout(timeout_s + 1):
            if isinstance(action, AddVoter):
                listener = Listener("CONTROLLER", *endpoint)
                await add_controller(admin, key.id, directory, [listener])
            else:
                await remove_controller(admin, key.id, directory)
    except TimeoutError:
        raise AdminError(f"no answer from the leader within {timeout_s:g} s") from None
    except (OSError, ValueError) as e:
        raise AdminError(f"{type(e).__name__}: {e}") from None
    finally:
        with contextlib.suppress(Exception):
            await admin.close()


def change(
    action: AddVoter | RemoveVoter,
    bootstrap: str,
    endpoint: tuple[str, int],
    timeout_s: float = CHANGE_TIMEOUT_S,
    tls: Tls = None,
) -> None:
    """Blocking form for a worker thread."""
    asyncio.run(change_async(action, bootstrap, endpoint, timeout_s, tls))


async def upgrade_kraft_version_async(
    bootstrap: str, timeout_s: float = CHANGE_TIMEOUT_S, tls: Tls = None
) -> None:
    """UpdateFeatures kraft.version=1 to the leader (as `kafka-features upgrade --feature
    kraft.version=1`); AdminError with the leader's one line when refused."""
    admin = AdminClient(parse_bootstrap(bootstrap), timeout_s=timeout_s, tls=tls)
    try:
        async with asyncio.timeout(timeout_s + 1):
            outcome = await update_features(admin, {"kraft.version": 1})
    except TimeoutError:
        raise AdminError(f"no answer from the leader within {timeout_s:g} s") from None
    except (OSError, ValueError) as e:
        raise AdminError(f"{type(e).__name__}: {e}") from None
    finally:
        with contextlib.suppress(Exception):
            await admin.close()
    error = outcome.get("kraft.version")
    if error is not None:
        raise AdminError(f"could not upgrade kraft.version to 1: {error}")


def node_report(
    host: str, http_port: int, timeout_s: float = VERSION_TIMEOUT_S
) -> tuple[str | None, str | None]:
    """(software version, directory id) a node reports on GET /status
    (node/metaquorum/runtime/version.py; the directory.id of its meta.properties), each None
    when it does not answer or reports none."""
    try:
        url = f"http://{host}:{http_port}/status"
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            found = json.loads(r.read())
        version, directory = found.get("version"), found.get("directory_id")
    except (OSError, ValueError, AttributeError):
        return None, None
    return (str(version) if version else None), (str(directory) if directory else None)


Pairs = tuple[tuple[int, str], ...]


def node_reports(hosts: dict[int, str], http_port: int) -> tuple[Pairs, Pairs]:
    """((node id, version), (node id, directory id)) of every node in `hosts` (id -> host) that
    answers, asked in parallel, in VERSION_TIMEOUT_S in all."""
    if not hosts:
        return (), ()
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(hosts), 8)) as pool:
        answers = list(pool.map(lambda h: node_report(h, http_port), hosts.values()))
    found = dict(zip(hosts, answers, strict=True))
    versions = tuple(sorted((i, v) for i, (v, _) in found.items() if v is not None))
    dirs = tuple(sorted((i, d) for i, (_, d) in found.items() if d is not None))
    return versions, dirs


def resign(host: str, http_port: int, epoch: int, timeout_s: float = RESIGN_TIMEOUT_S) -> str:
    """POST /resign?epoch=N to a node: "resigned" (202) or "not leader" (409: another leader
    or epoch already); AdminError with one line for anything else (the endpoint off, no
    answer)."""
    url = f"http://{host}:{http_port}/resign?epoch={epoch}"
    req = urllib.request.Request(url, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s):
            return "resigned"
    except urllib.error.HTTPError as e:
        if e.code == 409:
            return "not leader"
        try:
            why = json.loads(e.read()).get("error", "")
        except ValueError:
            why = ""
        raise AdminError(f"POST {url}: HTTP {e.code} {why}".strip()) from None
    except (OSError, ValueError) as e:
        raise AdminError(f"POST {url}: {type(e).__name__}: {e}") from None
