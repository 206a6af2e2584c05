"""A real S3 server for tests: moto's, in its own process on a free port, checking keys.

moto skips authentication for the first ``INITIAL_NO_AUTH_ACTION_COUNT`` requests: those make
an IAM user with an S3 policy and an access key; every request after is signed and checked,
so a wrong secret key is refused as AWS would refuse it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

SETUP_ACTIONS = 3  # create_user, put_user_policy, create_access_key
POLICY = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'


@dataclass
class S3Server:
    endpoint: str
    access_key: str
    secret_key: str
    pid: int

    def client(self, secret_key: str | None = None):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id=self.access_key,
                            aws_secret_access_key=secret_key or self.secret_key)

    def new_bucket(self) -> str:
        """A fresh, empty bucket of its own (one per test)."""
        name = f"fw-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key in ``bucket`` (under ``prefix``), sorted."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def env(self, **extra: str) -> dict[str, str]:
        """The FLYWHEEL_S3__* variables that point the command line at this server."""
        return {"FLYWHEEL_S3__ENDPOINT_URL": self.endpoint, "FLYWHEEL_S3__ACCESS_KEY": self.access_key,
                "FLYWHEEL_S3__SECRET_KEY": self.secret_key, "FLYWHEEL_S3__REGION": "us-east-1", **extra}


def start(port: int, log: Path, wait_for) -> S3Server:
    """Start the server and make its one user; ``wait_for(what, check)`` polls until it answers."""
    import boto3

    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_ACTIONS)}
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        import urllib.request

        if proc.poll() is not None:
            raise RuntimeError(f"moto's server exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    try:
        wait_for("moto's S3 server", answers, timeout=60)
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup",
                           aws_secret_access_key="setup")
        iam.create_user(UserName="flywheel")
        iam.put_user_policy(UserName="flywheel", PolicyName="s3", PolicyDocument=POLICY)
        key = iam.create_access_key(UserName="flywheel")["AccessKey"]
    except BaseException:
        stop(proc.pid)
        raise
    return S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"], proc.pid)


def stop(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
