"""The S3 client env of a pod that talks to a backup destination (issue 31).

Role: one builder for what the backup Job (backups.py, `spec.backup.s3`) and the restoring
format init container (restore_from.py, `spec.restoreFrom.s3`) both give `metaquorum backup`:
the credentials Secret's keys as `secretKeyRef` env (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
and AWS_SESSION_TOKEN when the Secret has it), the endpoint (AWS_ENDPOINT_URL) and the region
(AWS_REGION), each only when given.

Invariants: pure; credentials only by reference (secretKeyRef naming the Secret and the key),
never a value; the session token is optional (`optional: true`), the two keys are not; nothing
here imports model.py (restore_from.py, which model imports, uses it).
"""

from __future__ import annotations

from typing import Any

CREDENTIAL_KEYS = (
    ("AWS_ACCESS_KEY_ID", False),
    ("AWS_SECRET_ACCESS_KEY", False),
    ("AWS_SESSION_TOKEN", True),  # (key, optional)
)


def s3_env(
    credentials_secret: str | None, endpoint: str | None, region: str | None
) -> list[dict[str, Any]]:
    """The env entries, in this order: the credentials (none when `credentials_secret` is
    None), AWS_ENDPOINT_URL, AWS_REGION (each when not empty)."""
    env: list[dict[str, Any]] = []
    if credentials_secret is not None:
        for key, optional in CREDENTIAL_KEYS:
            ref: dict[str, Any] = {"name": credentials_secret, "key": key}
            if optional:
                ref["optional"] = True
            env.append({"name": key, "valueFrom": {"secretKeyRef": ref}})
    if endpoint:
        env.append({"name": "AWS_ENDPOINT_URL", "value": endpoint})
    if region:
        env.append({"name": "AWS_REGION", "value": region})
    return env
