"""UpdateFeatures on a KRaft node: `kafka-features.sh upgrade --feature kraft.version=1`
(KIP-584 feature flags; KIP-853 §"Upgrading to kraft.version 1" of a static quorum).

Role: answer UpdateFeatures (api key 57) as Kafka 4.3's active controller does
(`QuorumController.updateFeatures` -> `FeatureControlManager.updateFeature` ->
`KafkaRaftClient.upgradeKRaftVersion`), for the one feature this node finalizes, kraft.version:
- a replica that is not the leader answers NOT_CONTROLLER ("The active controller appears to be
  node N." / "No controller appears to be active."), so Kafka's admin client finds the leader
  (DescribeCluster) and retries;
- the checks of `updateFeature` in its order: upgrade type (1 UPGRADE, 2 SAFE_DOWNGRADE,
  3 UNSAFE_DOWNGRADE), level >= 0, the local supported range (kraft.version 0-1; every other
  feature, metadata.version included, is not supported by this node: range 0-0), a downgrade
  only with a downgrade type and never to a newer level; each refusal is INVALID_UPDATE_VERSION
  "Invalid update version L for feature F. <reason>";
- kraft.version with UPGRADE goes to the core (`UpgradeKRaftVersion`, validate-only honoured);
  its `KRaftVersionUpgrade` outcome becomes Kafka's answer (`outcome_error`): the raft client's
  InvalidUpdateVersionException messages, NOT_CONTROLLER for a lost leadership, and
  UNKNOWN_SERVER_ERROR with no message for Kafka's IllegalStateExceptions (voter ids differ, a
  directory id unknown); a downgrade type at the same level is a no-op, at another level
  "Can't downgrade the version of this feature.";
- an accepted upgrade is answered once everything the leader had appended by then is committed
  (Kafka waits for the NoOpRecord it appends after the upgrade records); a lost leadership
  meanwhile answers NOT_CONTROLLER, no commit within the request's timeoutMs REQUEST_TIMED_OUT;
- the response as `QuorumController`: a refusal is top-level "The update failed for all features
  since the following feature had an error: <message>" with no Results; a success is error 0
  with a null message and, for v0-1, one Result per feature (error 0, message "NONE"); an
  exception (NOT_CONTROLLER, UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT) is the top-level error
  alone (`UpdateFeaturesResponse.createWithErrors`).
Invariants: the core is asked only for kraft.version with UPGRADE, after every other feature of
the request passed (each of them is refused here, so a mixed request never upgrades); exactly one
outcome comes back per `UpgradeKRaftVersion` (core/kraft_upgrade.py), matched in FIFO order.
Differences from Kafka: Kafka's controller resigns after an IllegalStateException; we do not.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from metaquorum.core.effects import KRaftVersionUpgrade
from metaquorum.core.events import UpgradeKRaftVersion
from metaquorum.core.states import LeaderState
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import UpdateFeaturesRequestData, UpdateFeaturesResponseData

if TYPE_CHECKING:
    from metaquorum.runtime.driver import Driver

log = logging.getLogger("metaquorum.features")

KRAFT_VERSION = "kraft.version"
KRAFT_VERSION_RANGE = (0, 1)  # this node supports kraft.version 0-1 (KIP-853)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


@dataclass(frozen=True, slots=True)
class ApiError:
    """Kafka's `ApiError`; `raised` marks an exception of the controller event (answered by
    `createWithErrors`), not a feature's refusal returned by `updateFeature`."""

    error: Errors
    message: str | None = None
    raised: bool = False


NONE = ApiError(Errors.NONE)


@dataclass(frozen=True, slots=True)
class AskCore:
    """The request passed every local check: the core decides the kraft.version upgrade."""

    version: int
    validate_only: bool


def not_controller(leader_id: int) -> ApiError:
    """`ControllerExceptions.newWrongControllerException`."""
    if leader_id >= 0:
        text = f"The active controller appears to be node {leader_id}."
    else:
        text = "No controller appears to be active."
    return ApiError(Errors.NOT_CONTROLLER, text, raised=True)


def _invalid(feature: str, level: int, reason: str) -> ApiError:
    text = f"Invalid update version {level} for feature {feature}. {reason}"
    return ApiError(Errors.INVALID_UPDATE_VERSION, text)


def _range_text(lo: int, hi: int) -> str:
    """Kafka's `VersionRange.toString`."""
    return str(lo) if lo == hi else f"{lo}-{hi}"


def check_update(
    feature: str, level: int, upgrade_type: int, *, node_id: int, kraft_version: int
) -> ApiError | AskCore:
    """`FeatureControlManager.updateFeature` up to the raft client's call, for one feature;
    `AskCore(level, False)` when the core must decide (validate-only is set by the caller)."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return _invalid(feature, level, "The controller does not support the given upgrade type.")
    is_kraft = feature == KRAFT_VERSION
    current = kraft_version if is_kraft else 0
    if level < 0:
        return _invalid(feature, level, "A feature version cannot be less than 0.")
    lo, hi = KRAFT_VERSION_RANGE if is_kraft else (0, 0)
    if not lo <= level <= hi:
        who = f"Local controller {node_id}"
        reason = (
            f"{who} does not support this feature."
            if hi == 0
            else f"{who} only supports versions {_range_text(lo, hi)}"
        )
        return _invalid(feature, level, reason)
    if level < current and upgrade_type == UPGRADE:
        return _invalid(
            feature,
            level,
            "Can't downgrade the version of this feature without setting the "
            "upgrade type to either safe or unsafe downgrade.",
        )
    if level > current and upgrade_type != UPGRADE:
        return _invalid(feature, level, "Can't downgrade to a newer version.")
    if not is_kraft:
        return _invalid(feature, level, f"Feature {feature} not found.")  # Feature.featureFromName
    if upgrade_type == UPGRADE:
        return AskCore(level, False)
    if level != current:
        return _invalid(feature, level, "Can't downgrade the version of this feature.")
    return NONE


def _kafka_version(level: int | str) -> str:
    return f"KRAFT_VERSION_{level}"  # Kafka's KRaftVersion enum constant, as its messages print


# The core's refusals (core/kraft_upgrade.py) -> Kafka's exceptions in
# `LeaderState.maybeAppendUpgradedKRaftVersion`, in the order the core checks them.
_OUTCOMES: tuple[tuple[re.Pattern[str], Errors, str | None], ...] = (
    (re.compile(r"not the leader of epoch \d+"), Errors.NOT_CONTROLLER, None),
    (
        re.compile(r"an upgrade to (?P<p>\d+) is pending"),
        Errors.INVALID_UPDATE_VERSION,
        "Invalid concurrent upgrade of kraft.version from version Version[kraftVersion={P}] to {V}",
    ),
    (
        re.compile(r"kraft\.version \d+ would be a downgrade from (?P<p>\d+)"),
        Errors.INVALID_UPDATE_VERSION,
        "Invalid upgrade of kraft.version from version {P} to {V} because the new version is "
        "a downgrade",
    ),
    (
        re.compile(r"cannot upgrade kraft\.version (?P<p>\d+) to \d+"),
        Errors.INVALID_UPDATE_VERSION,
        "Invalid upgrade of kraft.version from version {P} to {V}",
    ),
    (re.compile(r"voters .* differ from "), Errors.UNKNOWN_SERVER_ERROR, None),
    (
        re.compile(r"not all of the voters support kraft\.version"),
        Errors.INVALID_UPDATE_VERSION,
        "Invalid upgrade of kraft.version to {V} because not all of the voters support it",
    ),
    (re.compile(r"directory id of every voter must be known"), Errors.UNKNOWN_SERVER_ERROR, None),
)


def outcome_error(outcome: KRaftVersionUpgrade, leader_id: int) -> ApiError:
    """Kafka's answer for the core's `KRaftVersionUpgrade` outcome."""
    if outcome.error is None:
        return NONE
    for pattern, error, template in _OUTCOMES:
        m = pattern.search(outcome.error)
        if m is None:
            continue
        if error is Errors.NOT_CONTROLLER:
            return not_controller(leader_id)  # NotLeaderException -> NotControllerException
        if template is None:  # IllegalStateException: UnknownServerException, no message
            return ApiError(error, None, raised=True)
        groups = m.groupdict()
        text = template.format(
            V=_kafka_version(outcome.version), P=_kafka_version(groups.get("p", "?"))
        )
        return ApiError(error, text)
    log.warning("unexpected kraft.version upgrade refusal: %s", outcome.error)
    return ApiError(Errors.UNKNOWN_SERVER_ERROR, None, raised=True)


def plan_request(
    request: UpdateFeaturesRequestData, *, node_id: int, kraft_version: int
) -> ApiError | AskCore:
    """Every update of the request checked; the first refusal, or what to ask the core, or
    NONE. The kraft.version update is decided last, so a refused sibling never upgrades."""
    updates = {u.feature: u for u in request.feature_updates}  # a repeated name: the last wins
    ask: ApiError | AskCore = NONE
    for name in sorted(updates, key=lambda n: n == KRAFT_VERSION):
        u = updates[name]
        checked = check_update(
            name, u.max_version_level, u.upgrade_type, node_id=node_id, kraft_version=kraft_version
        )
        if isinstance(checked, ApiError) and checked.error is not Errors.NONE:
            return checked
        ask = checked
    if isinstance(ask, AskCore):
        return AskCore(ask.version, request.validate_only)
    return ask


def update_features_response(
    request: UpdateFeaturesRequestData, version: int, result: ApiError
) -> UpdateFeaturesResponseData:
    """The response as `QuorumController.updateFeatures` / `createWithErrors` build it."""
    if result.raised:
        return UpdateFeaturesResponseData(
            error_code=int(result.error), error_message=result.message
        )
    if result.error is not Errors.NONE:
        return UpdateFeaturesResponseData(
            error_code=int(result.error), error_message=FAILED_PREFIX + (result.message or "")
        )
    results: list[UpdateFeaturesResponseData.UpdatableFeatureResult] = []
    if version <= 1:
        results = [
            UpdateFeaturesResponseData.UpdatableFeatureResult(
                feature=u.feature, error_code=0, error_message="NONE"
            )
            for u in request.feature_updates
        ]
    return UpdateFeaturesResponseData(error_code=0, error_message=None, results=results)


class KRaftUpgrades:
    """The runtime's side of `UpgradeKRaftVersion`: futures for the outcomes, in FIFO order
    (the core answers every such event with exactly one `KRaftVersionUpgrade`, in its step)."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self._waiting: deque[asyncio.Future[tuple[KRaftVersionUpgrade, int]]] = deque()

    def request(
        self, version: int, validate_only: bool
    ) -> asyncio.Future[tuple[KRaftVersionUpgrade, int]]:
        """Post the upgrade for the node's current epoch; the future gets the outcome and the
        log end offset right after it (what must commit before the answer)."""
        fut: asyncio.Future[tuple[KRaftVersionUpgrade, int]]
        fut = asyncio.get_running_loop().create_future()
        self._waiting.append(fut)
        self.driver.post(UpgradeKRaftVersion(self.driver.node.epoch, version, validate_only))
        return fut

    def on_outcome(self, outcome: KRaftVersionUpgrade, end_offset: int) -> None:
        """Called by the driver for each `KRaftVersionUpgrade` effect."""
        if outcome.error is None:
            log.info("kraft.version upgrade to %s accepted", outcome.version)
        else:
            log.warning("kraft.version upgrade to %s refused: %s", outcome.version, outcome.error)
        if self._waiting:
            fut = self._waiting.popleft()
            if not fut.done():
                fut.set_result((outcome, end_offset))

    def close(self) -> None:
        while self._waiting:
            fut = self._waiting.popleft()
            if not fut.done():
                fut.cancel()


async def handle_update_features(
    driver: Driver, upgrades: KRaftUpgrades, request: UpdateFeaturesRequestData, version: int
) -> UpdateFeaturesResponseData:
    """Answer one UpdateFeatures request (see the module docstring)."""
    result = await _update(driver, upgrades, request)
    return update_features_response(request, version, result)


async def _update(
    driver: Driver, upgrades: KRaftUpgrades, request: UpdateFeaturesRequestData
) -> ApiError:
    node = driver.node
    state = node.state
    if not isinstance(state, LeaderState):
        return not_controller(node.leader_id)
    epoch = state.epoch
    plan = plan_request(
        request, node_id=node.local_id, kraft_version=node.control.latest_kraft_version()
    )
    if isinstance(plan, ApiError):
        return plan
    loop = asyncio.get_running_loop()
    timeout_ms = request.timeout_ms if request.timeout_ms > 0 else 60_000  # the default
    deadline = loop.time() + timeout_ms / 1000
    try:
        async with asyncio.timeout_at(deadline):
            outcome, end_offset = await upgrades.request(plan.version, plan.validate_only)
            result = outcome_error(outcome, node.leader_id)
            if result.error is not Errors.NONE or plan.validate_only:
                return result
            # Answer once committed, as Kafka's controller waits for its NoOpRecord.
            while True:
                st = node.state
                if not isinstance(st, LeaderState) or st.epoch != epoch:
                    return not_controller(node.leader_id)
                if (node.high_watermark or 0) >= end_offset:
                    return NONE
                await asyncio.sleep(0.01)
    except TimeoutError:
        text = f"kraft.version {plan.version} was not committed within {timeout_ms} ms"
        return ApiError(Errors.REQUEST_TIMED_OUT, text, raised=True)
