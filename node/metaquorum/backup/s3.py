"""S3-compatible object storage as a backup destination, through boto3 (docs/backup.md).

Role: `s3://bucket/prefix` -> objects `prefix/<name>/<file>`. The endpoint is
`AWS_ENDPOINT_URL` (or `AWS_ENDPOINT_URL_S3`, both read by boto3 itself; unset: AWS), the
region `AWS_REGION` / `AWS_DEFAULT_REGION` (default us-east-1); credentials come from boto3's
usual chain: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` in the environment (a Kubernetes
Secret's keys as env vars), or a credentials file named by `AWS_SHARED_CREDENTIALS_FILE` (a
mounted Secret). Path-style addressing, so any S3-compatible server works.

Invariants: credentials are never printed or logged (errors name the S3 error code and the
bucket, never a key); every failure is one `BackupError` line naming the fix; an object is
visible whole or not at all (S3 PUT semantics), and the manifest is put last.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import urlparse

import boto3
import botocore.config
import botocore.exceptions

from metaquorum.backup.manifest import MANIFEST, BackupError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_DENIED = {"AccessDenied", "AllAccessDisabled", "Forbidden", "403"}
_BAD_KEY = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken"}
_NO_BUCKET = {"NoSuchBucket"}
_NO_KEY = {"NoSuchKey", "404", "NotFound"}


class S3Destination:
    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        if not parsed.netloc:
            raise BackupError(f"{url}: no bucket: use s3://BUCKET[/PREFIX]")
        self.url = url
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        config = botocore.config.Config(
            s3={"addressing_style": "path"},
            retries={"max_attempts": 3, "mode": "standard"},
            connect_timeout=10,
            read_timeout=60,
        )
        self.client: S3Client = boto3.client("s3", region_name=region, config=config)

    def _key(self, name: str, file: str) -> str:
        return "/".join(p for p in (self.prefix, name, file) if p)

    def _fail(self, e: Exception, name: str | None = None, file: str | None = None) -> NoReturn:
        where = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        if isinstance(e, botocore.exceptions.NoCredentialsError):
            raise BackupError(
                f"{where}: no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                "(or AWS_SHARED_CREDENTIALS_FILE)"
            ) from None
        if isinstance(
            e, botocore.exceptions.EndpointConnectionError | botocore.exceptions.ConnectTimeoutError
        ):
            raise BackupError(
                f"{where}: cannot reach the S3 endpoint ({e.__class__.__name__}): check "
                "AWS_ENDPOINT_URL"
            ) from None
        if isinstance(e, botocore.exceptions.ClientError):
            code = str(e.response.get("Error", {}).get("Code", "?"))
            if code in _BAD_KEY:
                raise BackupError(
                    f"{where}: S3 refused the credentials ({code}): check AWS_ACCESS_KEY_ID "
                    "and AWS_SECRET_ACCESS_KEY"
                ) from None
            if code in _NO_BUCKET:
                raise BackupError(
                    f"{where}: bucket {self.bucket} does not exist: create it or fix the URL"
                ) from None
            if code in _DENIED:
                raise BackupError(
                    f"{where}: access denied to bucket {self.bucket} ({code}): grant these "
                    "credentials s3:ListBucket, s3:GetObject and s3:PutObject (s3:DeleteObject to "
                    "prune) on it"
                ) from None
            if code in _NO_KEY and name is not None:
                what = (
                    "has no manifest (incomplete or absent)"
                    if file == MANIFEST
                    else f"lacks {file}"
                )
                raise BackupError(
                    f"backup {name} at {self.url} {what}: see `metaquorum backup list`"
                ) from None
            raise BackupError(f"{where}: S3 error {code}") from None
        if isinstance(e, botocore.exceptions.BotoCoreError):
            raise BackupError(f"{where}: {e.__class__.__name__}: {e}") from None
        raise e

    def put_file(self, name: str, file: str, source: Path) -> None:
        # One PUT per file (segments are rolled at 64 MiB, under S3's 5 GiB single-PUT limit).
        try:
            with source.open("rb") as body:
                self.client.put_object(Bucket=self.bucket, Key=self._key(name, file), Body=body)
        except Exception as e:
            self._fail(e, name, file)

    def put_bytes(self, name: str, file: str, data: bytes) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(name, file), Body=data)
        except Exception as e:
            self._fail(e, name, file)

    def get_file(self, name: str, file: str, target: Path) -> None:
        target.write_bytes(self.get_bytes(name, file))

    def get_bytes(self, name: str, file: str) -> bytes:
        try:
            obj = self.client.get_object(Bucket=self.bucket, Key=self._key(name, file))
            return obj["Body"].read()
        except Exception as e:
            self._fail(e, name, file)

    def names(self) -> list[str]:
        base = f"{self.prefix}/" if self.prefix else ""
        out: set[str] = set()
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=base
            )
            for page in pages:
                for obj in page.get("Contents", []):
                    rest = obj["Key"][len(base) :]
                    name, sep, file = rest.partition("/")
                    if sep and file == MANIFEST:
                        out.add(name)
        except Exception as e:
            self._fail(e)
        return sorted(out)

    def delete_manifest(self, name: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(name, MANIFEST))
        except Exception as e:
            self._fail(e, name, MANIFEST)

    def delete_files(self, name: str, files: list[str]) -> None:
        for file in files:
            try:
                self.client.delete_object(Bucket=self.bucket, Key=self._key(name, file))
            except Exception as e:
                self._fail(e, name, file)
