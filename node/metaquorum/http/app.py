"""aiohttp app of a running node: /metrics, /healthz, /readyz, /status, POST /snapshot, /resign.

Role: expose the node's view of the quorum. /metrics uses Kafka's `raft-metrics` names
(reference §7) in Prometheus form: group and name joined, dashes as underscores, e.g.
`kafka-metrics raft-metrics current-leader` -> `kafka_server_raft_metrics_current_leader`
(the JMX exporter's usual mapping of `kafka.server:type=raft-metrics`): Kafka 4.3's whole set,
the latencies and rates windowed as Kafka's (runtime/raft_metrics.py), and prometheus_client's
process and GC collectors (`process_resident_memory_bytes`, `process_open_fds`,
`python_gc_collections_total{generation}`).
/metrics also has `metaquorum_build_info{version=...} 1` and /status a `version`
(runtime/version.py: the package version or METAQUORUM_VERSION_OVERRIDE; the operator reads it).
/healthz is 200 while the driver runs; /readyz 200 when a leader is known and this replica is
caught up (else 503 with the reason); /status the JSON of `node_status`; POST /snapshot
snapshots the state machine now (the node side of `snapshot create`: 200 with the snapshot id,
409 when nothing new is committed) only when `metaquorum.http.snapshot.enable=true`, else 403
naming that key: this listener has no authentication, so the mutating endpoints are off
unless asked for (bind the listener to loopback, `metaquorum.http.listener=127.0.0.1:P`, to keep
even the read-only endpoints off the network). POST /resign?epoch=N (only when
`metaquorum.http.resign.enable=true`, else 403): a leader of epoch N resigns now, as Kafka's
`RaftClient.resign(epoch)` — EndQuorumEpoch to the voters, its successors most caught up first,
the node keeps running as a follower; 202 with the epoch, 409 when this node is not the leader of
that epoch (so a retried request never unseats a newer leader). The operator's rolling restart
uses it to move leadership off a leader before deleting its pod.
Invariants: the GET endpoints only read; every value is read from the driver at request time.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator

from aiohttp import web
from prometheus_client import CollectorRegistry, GCCollector, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from metaquorum.core.events import Resign
from metaquorum.core.states import LeaderState
from metaquorum.net.tls import TlsContexts
from metaquorum.runtime.driver import Driver
from metaquorum.runtime.node import NodeRuntime
from metaquorum.runtime.status import is_ready, kafka_state_name, node_status
from metaquorum.runtime.version import software_version

PREFIX = "kafka_server_raft_metrics_"
STATES = (
    "leader",
    "prospective",
    "prospective-voted",
    "candidate",
    "unattached-voted",
    "follower",
    "observer",
    "unattached",
)


class RaftCollector(Collector):
    def __init__(self, runtime: NodeRuntime) -> None:
        self.runtime = runtime

    def collect(self) -> Iterator[Metric]:
        s = node_status(self.runtime.driver)
        gauges = {
            "current_leader": ("current-leader", s["leader_id"]),
            "current_vote": ("current-vote", s["voted_id"]),
            "current_epoch": ("current-epoch", s["epoch"]),
            "high_watermark": ("high-watermark", s["high_watermark"]),
            "log_end_offset": ("log-end-offset", s["log_end_offset"]),
            "log_end_epoch": ("log-end-epoch", s["log_end_epoch"]),
            "number_of_voters": ("number-of-voters", len(s["voters"])),
        }
        for name, (kafka, value) in gauges.items():
            yield GaugeMetricFamily(PREFIX + name, f"raft-metrics {kafka}", value=value)
        state = GaugeMetricFamily(
            PREFIX + "current_state", "raft-metrics current-state (1 = current)", labels=["state"]
        )
        current = kafka_state_name(self.runtime.driver)
        for name in STATES:
            state.add_metric([name], 1.0 if name == current else 0.0)
        yield state
        driver = self.runtime.driver
        yield GaugeMetricFamily(
            PREFIX + "append_records_total",
            "records appended to the local log",
            value=driver.stats.appends,
        )
        yield from windowed_metrics(driver)
        info = GaugeMetricFamily(
            "metaquorum_build_info", "the node's software version (1)", labels=["version"]
        )
        info.add_metric([software_version()], 1.0)
        yield info
        yield GaugeMetricFamily(
            "metaquorum_fsyncs_total",
            "log fsyncs (group commit)",
            value=self.runtime.driver.io.fsyncs,
        )


class DiskCollector(Collector):
    """The filesystem of metadata.log.dir as this process sees it (statvfs): size and the bytes
    an unprivileged writer may still use; what the chart's disk-nearly-full alert and a volume
    growth check read."""

    def __init__(self, runtime: NodeRuntime) -> None:
        self.runtime = runtime

    def collect(self) -> Iterator[Metric]:
        config = getattr(self.runtime, "config", None)  # a stand-in runtime in tests has none
        if config is None:
            return
        try:
            st = os.statvfs(str(config.metadata_log_dir))
        except OSError:
            return
        yield GaugeMetricFamily(
            "metaquorum_log_dir_size_bytes",
            "size of the filesystem holding metadata.log.dir",
            value=float(st.f_blocks * st.f_frsize),
        )
        yield GaugeMetricFamily(
            "metaquorum_log_dir_available_bytes",
            "bytes still available to the node on the filesystem holding metadata.log.dir",
            value=float(st.f_bavail * st.f_frsize),
        )


def windowed_metrics(driver: Driver) -> Iterator[Metric]:
    """Kafka 4.3's other raft-metrics (runtime/raft_metrics.py): windowed latencies and rates,
    the idle ratio, and the leader-only gauges (present only while leading, as in Kafka)."""
    m = driver.metrics
    now = driver.clock.now_ms()
    values = {
        "commit-latency-avg": m.commit_latency.avg(now),
        "commit-latency-max": m.commit_latency.max(now),
        "election-latency-avg": m.election_latency.avg(now),
        "election-latency-max": m.election_latency.max(now),
        "fetch-records-rate": m.fetch_records.rate_per_s(now, m.started_ms),
        "append-records-rate": m.append_records.rate_per_s(now, m.started_ms),
        "poll-idle-ratio-avg": m.idle_ratio(now),
        "number-unknown-voter-connections": len(
            driver.node.voters.voter_ids - {driver.node.local_id} - set(driver.voter_endpoints)
        ),
    }
    node = driver.node
    st = node.state
    if isinstance(st, LeaderState):
        values["number-of-observers"] = len(st.data.progress.observers)
        values["uncommitted-voter-change"] = int(st.data.pending_change is not None)
    for kafka, value in values.items():
        yield GaugeMetricFamily(
            PREFIX + kafka.replace("-", "_"), f"raft-metrics {kafka}", value=float(value)
        )


def build_app(
    runtime: NodeRuntime, *, snapshot_enabled: bool = False, resign_enabled: bool = False
) -> web.Application:
    registry = CollectorRegistry()
    registry.register(RaftCollector(runtime))
    # prometheus_client's defaults beside Kafka's names: the process (RSS, open fds, CPU) and
    # the garbage collector per generation (python_gc_collections_total), read by the soak.
    ProcessCollector(registry=registry)
    GCCollector(registry=registry)
    registry.register(DiskCollector(runtime))

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), content_type="text/plain")

    async def healthz(_: web.Request) -> web.Response:
        task = runtime.driver._task
        if task is None or task.done():
            return web.Response(status=503, text="driver not running\n")
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        ok, why = is_ready(runtime.driver)
        return web.Response(status=200 if ok else 503, text=why + "\n")

    async def status(_: web.Request) -> web.Response:
        return web.json_response(node_status(runtime.driver))

    async def snapshot(_: web.Request) -> web.Response:
        if not snapshot_enabled:
            return web.json_response(
                {"error": "POST /snapshot is off: set metaquorum.http.snapshot.enable=true"},
                status=403,
            )
        done = await runtime.driver.snapshot_now()
        if done is None:
            return web.json_response({"error": "nothing new committed to snapshot"}, status=409)
        return web.json_response({"end_offset": done[0], "epoch": done[1]})

    async def resign(request: web.Request) -> web.Response:
        if not resign_enabled:
            return web.json_response(
                {"error": "POST /resign is off: set metaquorum.http.resign.enable=true"},
                status=403,
            )
        raw = request.query.get("epoch", "")
        if not raw.isdigit():
            return web.json_response(
                {"error": "epoch=N (the leader's epoch) is required"}, status=400
            )
        node = runtime.driver.node
        if not isinstance(node.state, LeaderState) or node.epoch != int(raw):
            return web.json_response(
                {"error": f"not the leader of epoch {raw}", "epoch": node.epoch}, status=409
            )
        runtime.driver.post(Resign())
        return web.json_response({"resigned": int(raw)}, status=202)

    app = web.Application()
    app.add_routes(
        [
            web.get("/metrics", metrics),
            web.get("/healthz", healthz),
            web.get("/readyz", readyz),
            web.get("/status", status),
            web.post("/snapshot", snapshot),
            web.post("/resign", resign),
        ]
    )
    return app


async def start_configured_http(runtime: NodeRuntime) -> web.AppRunner | None:
    """The HTTP listener as the node's config asks (`metaquorum.http.listener`, the snapshot
    switch, HTTPS), or None when none is configured."""
    config = runtime.config
    if config.http_listener is None:
        return None
    return await start_http(
        runtime,
        config.http_listener.host,
        config.http_listener.port,
        snapshot_enabled=config.http_snapshot_enabled,
        resign_enabled=config.http_resign_enabled,
        tls=TlsContexts.shared(config.http_tls).server() if config.http_tls else None,
    )


async def start_http(
    runtime: NodeRuntime,
    host: str,
    port: int,
    *,
    snapshot_enabled: bool = False,
    resign_enabled: bool = False,
    tls: ssl.SSLContext | None = None,
) -> web.AppRunner:
    """`tls`: HTTPS (`metaquorum.http.ssl.enable`), with the certificates net/tls.py reloads."""
    app = build_app(runtime, snapshot_enabled=snapshot_enabled, resign_enabled=resign_enabled)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=tls)
    await site.start()
    return runner
