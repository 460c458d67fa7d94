"""A real S3-compatible server on loopback for the backup tests: SeaweedFS's `weed server -s3`
(Apache-2.0), built from the Go module proxy and cached by scripts/build-seaweedfs.sh. MinIO's
server is AGPL and is not used.

`S3Server` starts one (master, volume, filer and S3 gateway in one process, data in a temp
dir) with two identities: `admin` (all actions) and `stranger` (rights on another bucket
only, for the access-denied case), and creates the bucket `backups`.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import botocore.config
import botocore.exceptions

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "backups"
ADMIN = ("mq-admin-key", "mq-admin-secret-0123456789")
STRANGER = ("mq-stranger-key", "mq-stranger-secret-012345")


def weed_binary() -> Path:
    out = subprocess.run(
        [str(ROOT / "scripts" / "build-seaweedfs.sh")],
        check=True,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    return Path(out.stdout.strip().splitlines()[-1])


def _free_pair(host: str = "127.0.0.1") -> int:
    """A port p with p and p + 10000 (weed's gRPC port) both free on `host`."""
    for _ in range(200):
        p = random.randint(20000, 29999)
        ok = True
        for q in (p, p + 10000):
            with socket.socket() as s:
                try:
                    s.bind((host, q))
                except OSError:
                    ok = False
        if ok:
            return p
    raise RuntimeError("no free port pair")


@dataclass
class S3Server:
    base: Path
    host: str = "127.0.0.1"  # the address it binds (the e2e tier: the pods' bridge gateway)
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    ports: list[int] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self, creds: tuple[str, str] = ADMIN) -> dict[str, str]:
        """The environment a `metaquorum backup` process gets (as from a Kubernetes Secret)."""
        return {
            **os.environ,
            "AWS_ACCESS_KEY_ID": creds[0],
            "AWS_SECRET_ACCESS_KEY": creds[1],
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
        }

    def client(self, creds: tuple[str, str] = ADMIN) -> object:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=creds[0],
            aws_secret_access_key=creds[1],
            region_name="us-east-1",
            config=botocore.config.Config(s3={"addressing_style": "path"}),
        )

    def start(self) -> None:
        weed = weed_binary()
        self.base.mkdir(parents=True, exist_ok=True)
        config = self.base / "s3.json"
        config.write_text(
            json.dumps(
                {
                    "identities": [
                        {
                            "name": "admin",
                            "credentials": [{"accessKey": ADMIN[0], "secretKey": ADMIN[1]}],
                            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                        },
                        {
                            "name": "stranger",
                            "credentials": [{"accessKey": STRANGER[0], "secretKey": STRANGER[1]}],
                            "actions": ["Read:elsewhere", "Write:elsewhere", "List:elsewhere"],
                        },
                    ]
                }
            )
        )
        master, volume, filer, self.port = (_free_pair(self.host) for _ in range(4))
        (self.base / "data").mkdir(exist_ok=True)
        log = (self.base / "weed.log").open("ab")
        self.process = subprocess.Popen(
            [
                str(weed),
                "server",
                f"-dir={self.base / 'data'}",
                f"-ip={self.host}",
                f"-ip.bind={self.host}",
                f"-master.port={master}",
                f"-volume.port={volume}",
                "-filer",
                f"-filer.port={filer}",
                "-s3",
                f"-s3.port={self.port}",
                f"-s3.config={config}",
                "-volume.max=0",
                "-master.volumeSizeLimitMB=64",
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        s3 = self.client()
        deadline = time.monotonic() + 90
        while True:
            try:
                s3.create_bucket(Bucket=BUCKET)  # type: ignore[attr-defined]
                s3.put_object(Bucket=BUCKET, Key="probe", Body=b"x")  # type: ignore[attr-defined]
                s3.delete_object(Bucket=BUCKET, Key="probe")  # type: ignore[attr-defined]
                return
            except botocore.exceptions.ClientError as e:
                if e.response.get("Error", {}).get("Code") == "BucketAlreadyExists":
                    return
                last: Exception = e
            except botocore.exceptions.BotoCoreError as e:
                last = e
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = (self.base / "weed.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"SeaweedFS S3 did not come up: {last}\n{tail}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
