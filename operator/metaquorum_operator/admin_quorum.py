"""The live quorum as the operator's step loop sees it: DescribeQuorum, voter changes, resign
and the kraft.version upgrade through metaquorum.admin (handlers.Quorum's implementation).

Role: `AdminQuorum` reaches the quorum on the pods' stable names (observe.py does the wire
work); over mutual TLS with the pods' certificate (tls_client.SecretTls) when
spec.tls.enabled. `describe` also asks each pod's node for its own view (survey.py) when no
leader answers (the lost-majority check), and for its software version and directory id
(GET /status) when one does (upgrades.py, migration.py).

Invariants: runs in the reconcile timer's worker thread, each call bounded by observe's
timeouts; nothing is described before the StatefulSet has a member; a TLS quorum without a
Secret to read is a ConfigError in the observation (describe) or an AdminError (the changes),
never a plaintext connection.
"""

from __future__ import annotations

import asyncio
import dataclasses

from metaquorum.admin.client import AdminError
from metaquorum.net.endpoint import ConfigError

from metaquorum_operator import observe, planner, survey
from metaquorum_operator.observed import Observed
from metaquorum_operator.tls_client import SecretTls


class AdminQuorum:
    """The live quorum through metaquorum.admin, on the pods' stable names; over mutual TLS with
    the pods' certificate (tls_client.SecretTls) when spec.tls.enabled."""

    def __init__(self, tls: SecretTls | None = None) -> None:
        self.tls = tls

    def _tls(self, desired: planner.Desired) -> observe.Tls:
        spec = desired.spec
        if not spec.tls_enabled:
            return None
        if self.tls is None or not spec.tls_secret_name:
            raise ConfigError("spec.tls.enabled but the operator has no TLS Secret to read")
        algorithm = spec.config.get("ssl.endpoint.identification.algorithm", "https")
        return self.tls.client(desired.names.namespace, spec.tls_secret_name, algorithm)

    def describe(self, desired: planner.Desired, observed: Observed) -> observe.Observation:
        """DescribeQuorum in this worker thread, bounded by observe.DESCRIBE_TIMEOUT_S;
        nothing to describe before the StatefulSet has a member."""
        sts = observed.statefulset
        if sts is None or sts.replicas == 0:
            return observe.Observation(None)
        try:
            tls = self._tls(desired)
        except ConfigError as e:
            return observe.Observation(None, str(e))
        port = desired.spec.controller_port
        bootstrap = observe.bootstrap_servers(desired.names, port, sts.replicas)
        found = observe.describe(bootstrap, tls=tls)
        if found.quorum is None or not found.quorum.has_leader:
            # no leader: ask each pod's node itself, for the lost-majority check
            views = survey.survey(desired.names, desired.spec.http_port, observed.pods)
            found = dataclasses.replace(found, nodes=views)
        if found.quorum is None:
            return found
        # each running pod's software version (upgrades.py) and directory id (migration.py),
        # from its node's GET /status
        hosts = {
            p.ordinal: desired.names.pod_fqdn(p.ordinal)
            for p in observed.pods
            if not p.terminating and p.failing is None
        }
        versions, dirs = observe.node_reports(hosts, desired.spec.http_port)
        return dataclasses.replace(
            found, quorum=dataclasses.replace(found.quorum, versions=versions, directories=dirs)
        )

    def change(
        self, action: planner.AddVoter | planner.RemoveVoter, desired: planner.Desired
    ) -> None:
        try:
            tls = self._tls(desired)
        except ConfigError as e:
            raise AdminError(str(e)) from None
        port = desired.spec.controller_port
        members = max(desired.spec.replicas, action.key.id + 1)
        bootstrap = observe.bootstrap_servers(desired.names, port, members)
        # an added voter's endpoint: its pod's stable name
        endpoint = (desired.names.pod_fqdn(action.key.id), port)
        observe.change(action, bootstrap, endpoint, tls=tls)

    def resign(self, action: planner.ResignLeader, desired: planner.Desired) -> None:
        host = desired.names.pod_fqdn(action.node_id)
        observe.resign(host, desired.spec.http_port, action.epoch)

    def upgrade_kraft_version(self, desired: planner.Desired) -> None:
        try:
            tls = self._tls(desired)
        except ConfigError as e:
            raise AdminError(str(e)) from None
        port = desired.spec.controller_port
        bootstrap = observe.bootstrap_servers(desired.names, port, desired.spec.replicas)
        asyncio.run(observe.upgrade_kraft_version_async(bootstrap, tls=tls))
