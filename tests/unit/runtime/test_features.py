"""UpdateFeatures as Kafka 4.3's controller answers it (runtime/features.py): the checks of
`FeatureControlManager.updateFeature`, the core's kraft.version outcomes mapped to Kafka's
errors (every refusal core/kraft_upgrade.py can return is mapped, none falls through), the
response shapes of `QuorumController.updateFeatures` per version, and ApiVersions'
FinalizedFeatures once kraft.version is 1."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from metaquorum.core import kraft_upgrade
from metaquorum.core.effects import KRaftVersionUpgrade
from metaquorum.protocol.errors import Errors
from metaquorum.protocol.messages import (
    ApiVersionsResponseData,
    UpdateFeaturesRequestData,
    UpdateFeaturesResponseData,
)
from metaquorum.runtime.apis import api_versions_response
from metaquorum.runtime.features import (
    FAILED_PREFIX,
    NONE,
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    ApiError,
    AskCore,
    check_update,
    outcome_error,
    plan_request,
    update_features_response,
)

from tests.unit.core.test_kraft_upgrade import _leader, _report, _upgrade

Key = UpdateFeaturesRequestData.FeatureUpdateKey
INVALID = Errors.INVALID_UPDATE_VERSION


def _check(name: str, level: int, kind: int = UPGRADE, current: int = 0) -> ApiError | AskCore:
    return check_update(name, level, kind, node_id=1, kraft_version=current)


@pytest.mark.parametrize(
    ("name", "level", "kind", "current", "reason"),
    [
        ("kraft.version", 1, 0, 0, "The controller does not support the given upgrade type."),
        ("kraft.version", 1, 4, 0, "The controller does not support the given upgrade type."),
        ("kraft.version", -1, UPGRADE, 0, "A feature version cannot be less than 0."),
        ("kraft.version", 2, UPGRADE, 0, "Local controller 1 only supports versions 0-1"),
        ("group.version", 1, UPGRADE, 0, "Local controller 1 does not support this feature."),
        ("metadata.version", 27, UPGRADE, 0, "Local controller 1 does not support this feature."),
        ("no.such", 0, UPGRADE, 0, "Feature no.such not found."),
        (
            "kraft.version",
            0,
            UPGRADE,
            1,
            "Can't downgrade the version of this feature without setting the upgrade type to "
            "either safe or unsafe downgrade.",
        ),
        ("kraft.version", 1, SAFE_DOWNGRADE, 0, "Can't downgrade to a newer version."),
        ("kraft.version", 0, SAFE_DOWNGRADE, 1, "Can't downgrade the version of this feature."),
        ("kraft.version", 0, UNSAFE_DOWNGRADE, 1, "Can't downgrade the version of this feature."),
    ],
)
def test_refusals_are_kafkas(name: str, level: int, kind: int, current: int, reason: str) -> None:
    assert _check(name, level, kind, current) == ApiError(
        INVALID, f"Invalid update version {level} for feature {name}. {reason}"
    )


def test_kraft_upgrade_goes_to_the_core_a_downgrade_type_at_the_same_level_is_a_noop() -> None:
    assert _check("kraft.version", 1) == AskCore(1, False)
    assert _check("kraft.version", 1, current=1) == AskCore(1, False)  # no-op: the core says so
    assert _check("kraft.version", 0) == AskCore(0, False)
    assert _check("kraft.version", 1, SAFE_DOWNGRADE, current=1) == NONE


def test_a_request_with_any_other_feature_never_reaches_the_core() -> None:
    request = UpdateFeaturesRequestData(
        feature_updates=[Key("kraft.version", 1), Key("group.version", 1)], validate_only=True
    )
    plan = plan_request(request, node_id=3, kraft_version=0)
    assert isinstance(plan, ApiError) and "feature group.version" in (plan.message or "")
    only = UpdateFeaturesRequestData(feature_updates=[Key("kraft.version", 1)], validate_only=True)
    assert plan_request(only, node_id=3, kraft_version=0) == AskCore(1, True)
    assert plan_request(UpdateFeaturesRequestData(), node_id=3, kraft_version=0) == NONE


def _strings(node: ast.expr) -> list[str]:
    """The strings an expression may evaluate to, placeholders filled with sample values."""
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, ast.JoinedStr):
        parts = [
            p.value if isinstance(p, ast.Constant) else "[1, 2]" if "ids" in ast.unparse(p) else "1"
            for p in node.values
        ]
        return ["".join(str(p) for p in parts)]
    return []


def test_every_refusal_of_the_core_maps_to_a_kafka_error() -> None:
    """Each string `_upgrade` in core/kraft_upgrade.py can return is recognised (a changed
    wording there fails here, not silently as UNKNOWN_SERVER_ERROR on the wire)."""
    # The module's source file, not `inspect.getsource`: the compiled build's function has none.
    module = ast.parse(Path(kraft_upgrade.__file__).with_name("kraft_upgrade.py").read_text())
    tree = next(
        n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == "_upgrade"
    )
    returned = [
        n.value for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None
    ]
    texts = [t for value in returned for t in _strings(value)]
    assert len(texts) == 7, texts
    expected = {
        "not the leader of epoch 1": (Errors.NOT_CONTROLLER, True),
        "an upgrade to 1 is pending": (INVALID, False),
        "kraft.version 1 would be a downgrade from 1": (INVALID, False),
        "cannot upgrade kraft.version 1 to 1": (INVALID, False),
        "voters [1, 2] differ from [1, 2]": (Errors.UNKNOWN_SERVER_ERROR, True),
        "not all of the voters support kraft.version 1 yet": (INVALID, False),
        "the directory id of every voter must be known (UpdateRaftVoter from each)": (
            Errors.UNKNOWN_SERVER_ERROR,
            True,
        ),
    }
    assert set(texts) == set(expected)
    for text, (error, raised) in expected.items():
        mapped = outcome_error(KRaftVersionUpgrade(1, text), leader_id=2)
        assert (mapped.error, mapped.raised) == (error, raised), text
        if error is Errors.UNKNOWN_SERVER_ERROR:
            assert mapped.message is None  # ApiError.fromThrowable hides it
    assert outcome_error(KRaftVersionUpgrade(1, "something new"), 2).error is (
        Errors.UNKNOWN_SERVER_ERROR
    )


def test_outcomes_of_the_real_core() -> None:
    ctx = _leader()
    leader = ctx.node.local_id
    refused = outcome_error(KRaftVersionUpgrade(1, _upgrade(ctx)), leader)
    assert refused == ApiError(
        INVALID, "Invalid upgrade of kraft.version to KRAFT_VERSION_1 because not all of the "
        "voters support it"
    )  # fmt: skip
    stale = outcome_error(KRaftVersionUpgrade(1, _upgrade(ctx, epoch=ctx.node.epoch + 1)), 7)
    assert stale == ApiError(
        Errors.NOT_CONTROLLER, "The active controller appears to be node 7.", raised=True
    )
    assert outcome_error(KRaftVersionUpgrade(1, "not the leader of epoch 3"), -1).message == (
        "No controller appears to be active."
    )
    assert _report(ctx, 2) == 0 and _report(ctx, 3) == 0
    assert outcome_error(KRaftVersionUpgrade(1, _upgrade(ctx, validate=True)), leader) == NONE
    assert outcome_error(KRaftVersionUpgrade(1, _upgrade(ctx)), leader) == NONE
    assert outcome_error(KRaftVersionUpgrade(1, _upgrade(ctx)), leader) == NONE  # no-op repeat
    pending = outcome_error(KRaftVersionUpgrade(0, _upgrade(ctx, 0)), leader)
    assert pending == ApiError(
        INVALID, "Invalid concurrent upgrade of kraft.version from version "
        "Version[kraftVersion=KRAFT_VERSION_1] to KRAFT_VERSION_0"
    )  # fmt: skip


def _request(version: int) -> UpdateFeaturesRequestData:
    return UpdateFeaturesRequestData(feature_updates=[Key("kraft.version", 1)])


@pytest.mark.parametrize("version", [0, 1, 2])
def test_response_shapes(version: int) -> None:
    ok = update_features_response(_request(version), version, NONE)
    results = [UpdateFeaturesResponseData.UpdatableFeatureResult("kraft.version", 0, "NONE")]
    assert ok == UpdateFeaturesResponseData(
        error_code=0, error_message=None, results=results if version <= 1 else []
    )
    refused = update_features_response(_request(version), version, ApiError(INVALID, "why"))
    assert refused == UpdateFeaturesResponseData(
        error_code=int(INVALID), error_message=FAILED_PREFIX + "why"
    )
    raised = ApiError(Errors.NOT_CONTROLLER, "The active controller appears to be node 2.", True)
    moved = update_features_response(_request(version), version, raised)
    assert (moved.error_code, moved.error_message, moved.results) == (41, raised.message, [])
    for answer in (ok, refused, moved):
        assert UpdateFeaturesResponseData.decode(answer.encode(version), version) == answer


def test_api_versions_reports_kraft_version_finalized_once_it_is_1() -> None:
    zero = api_versions_response(4, kraft_version=0, features_epoch=12)
    assert zero.finalized_features == [] and zero.finalized_features_epoch == -1
    one = api_versions_response(4, kraft_version=1, features_epoch=12)
    assert one.finalized_features == [
        ApiVersionsResponseData.FinalizedFeatureKey("kraft.version", 1, 1)
    ]
    assert one.finalized_features_epoch == 12
    assert ApiVersionsResponseData.decode(one.encode(3), 3).finalized_features_epoch == 12
    assert [k.api_key for k in one.api_keys if k.api_key == 57] == [57]


def test_cli_parses_and_prints_as_kafkas_feature_command() -> None:
    from metaquorum.admin.features import format_update
    from metaquorum.cli.features_cmd import parse_updates

    assert parse_updates(["kraft.version=1", " group.version = 0"]) == {
        "kraft.version": 1,
        "group.version": 0,
    }
    for bad, text in (
        ("kraft.version", "equals sign not found."),
        ("kraft.version=x", "unable to parse x as a short."),
        ("kraft.version=40000", "unable to parse 40000 as a short."),
    ):
        with pytest.raises(ValueError, match=text):
            parse_updates([bad])
    with pytest.raises(ValueError, match="was specified more than once"):
        parse_updates(["a=1", "a=2"])
    ok = format_update("upgrade", {"kraft.version": 1}, {"kraft.version": None}, False)
    assert ok == ("kraft.version was upgraded to 1.\n", 0)
    dry = format_update("upgrade", {"kraft.version": 1}, {"kraft.version": None}, True)
    assert dry == ("kraft.version can be upgraded to 1.\n", 0)
    failed = format_update("downgrade", {"kraft.version": 0}, {"kraft.version": "why"}, False)
    assert failed == ("Could not downgrade kraft.version to 0. why\n", 1)
