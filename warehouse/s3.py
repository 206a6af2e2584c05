"""The shards in an S3 bucket (AWS S3, MinIO, Ceph, R2, ...) through pyarrow's S3 file system.

Writes: one PUT per shard. S3 makes an object visible whole or not at all, so the shard
goes straight to its final key (no temporary key to copy); a shard over the upload part
size goes up as a multipart upload, which S3 also completes atomically. A process killed
mid-write leaves no object (at most an unfinished multipart upload, invisible to readers;
a bucket lifecycle rule aborts those).

Reads: DuckDB reads local files at full speed; an object read straight from S3 costs a
request per read of DuckDB's (nine per shard, one after another, through Python). A
recorded shard is never rewritten and its checksum is in the state database, so a shard
fetched once into a local read cache (named by its checksum, checked on arrival) is
valid forever: reads fetch the missing shards in parallel and query the local copies.
``bench/bench_s3.py`` measures both ways side by side.
"""

from __future__ import annotations

import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.fs as pafs

from warehouse import killpoints
from warehouse.errors import StorageError, one_line
from warehouse.objects import TMP_MARK, data_checksum
from warehouse.settings import S3Settings, redact_url, split_s3_url

_AWS_ERROR = re.compile(r"AWS Error (?P<code>[A-Z_]+)(?: \(HTTP status (?P<status>\d+)\))? during \w+ operation: "
                        r"(?P<message>.*)")
_DENIED = {"ACCESS_DENIED", "INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH", "FORBIDDEN", "UNAUTHORIZED"}


class S3Objects:
    """The objects under ``s3://bucket/prefix``; read copies cached under ``cache_dir``."""

    is_local = False

    def __init__(self, url: str, settings: S3Settings, cache_dir: Path) -> None:
        self.location = url
        self.bucket, self.prefix = split_s3_url(url)
        self.settings = settings
        self.cache_dir = Path(cache_dir)
        self.endpoint = redact_url(settings.endpoint_url) if settings.endpoint_url else "AWS S3"
        self._fs: pafs.S3FileSystem | None = None

    # --- the connection ------------------------------------------------------------

    @property
    def fs(self) -> pafs.S3FileSystem:
        if self._fs is None:
            access, secret = self.settings.checked_keys()
            s = self.settings
            options = dict(
                access_key=access, secret_key=secret, region=s.region or "us-east-1",
                connect_timeout=s.timeout_s, request_timeout=s.timeout_s,
                retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=s.retries + 1),
                # a small object is one PutObject on close (no multipart upload to leave behind)
                allow_delayed_open=True, allow_bucket_creation=False, allow_bucket_deletion=False,
            )
            if s.endpoint_url:
                options.update(endpoint_override=s.endpoint_url, scheme=urlparse(s.endpoint_url).scheme)
            self._fs = pafs.S3FileSystem(**options)
        return self._fs

    def _key(self, relpath: str = "") -> str:
        return "/".join(p for p in (self.bucket, self.prefix, relpath) if p)

    def _error(self, doing: str, exc: OSError) -> StorageError:
        """One line for a failed request: what we were doing and what S3 said (never a key)."""
        text = str(exc)
        m = _AWS_ERROR.search(text)
        code = m.group("code") if m else ""
        if code == "NETWORK_CONNECTION" or "curlCode" in text:
            detail = text.split("Details: ", 1)[-1] if "Details: " in text else (m.group("message") if m else text)
            return StorageError(f"cannot reach S3 at {self.endpoint} ({doing}): {one_line(detail, 160)}; "
                                "check s3.endpoint_url")
        if code in _DENIED or (m and m.group("status") in ("401", "403")):
            return StorageError(f"S3 at {self.endpoint} refused the keys for bucket {self.bucket} ({doing}: "
                                f"{code.lower().replace('_', ' ') or 'access denied'}); check s3.access_key and "
                                "s3.secret_key")
        if code == "NO_SUCH_BUCKET":
            return self._no_bucket()
        message = m.group("message") if m else text
        return StorageError(f"S3 at {self.endpoint}: cannot {doing}: {one_line(message, 200)}")

    def _no_bucket(self) -> StorageError:
        return StorageError(f"bucket {self.bucket} does not exist at {self.endpoint}; create it first "
                            "(flywheel never creates buckets)")

    # --- the interface -------------------------------------------------------------

    def check(self) -> None:
        """The bucket is there and the keys may list the prefix; nothing is written."""
        try:
            info = self.fs.get_file_info(self.bucket)
            if info.type == pafs.FileType.NotFound:
                raise self._no_bucket()
            self.fs.get_file_info(pafs.FileSelector(self._key(), recursive=False, allow_not_found=True))
        except OSError as exc:
            raise self._error(f"open {self.location}", exc) from None

    def make(self) -> None:
        """Nothing to create: a key needs no directory (the bucket itself is the user's to make)."""

    def exists(self) -> bool:
        try:
            return self.fs.get_file_info(self.bucket).type != pafs.FileType.NotFound
        except OSError as exc:
            raise self._error(f"open {self.location}", exc) from None

    def put(self, relpath: str, data: bytes) -> None:
        try:
            with self.fs.open_output_stream(self._key(relpath)) as out:
                half = len(data) // 2
                out.write(data[:half])
                killpoints.reached("shard.written")  # mid-write: nothing is in place yet
                out.write(data[half:])
        except OSError as exc:
            raise self._error(f"write shard {self.location}/{relpath}", exc) from None

    def staging(self, relpath: str) -> Path:
        path = self.cache_dir / "staging" / f"{relpath}.{os.getpid()}"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def put_file(self, relpath: str, path: Path, block: int = 8 << 20) -> None:
        try:
            with self.fs.open_output_stream(self._key(relpath)) as out, open(path, "rb") as src:
                first = True
                while data := src.read(block):
                    out.write(data)
                    if first:
                        first = False
                        killpoints.reached("shard.written")  # mid-write: nothing is in place yet
        except OSError as exc:
            raise self._error(f"write shard {self.location}/{relpath}", exc) from None
        finally:
            Path(path).unlink(missing_ok=True)

    def list(self, prefix: str) -> list[str]:
        root = self._key()
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self._key(prefix), recursive=True, allow_not_found=True))
        except OSError as exc:
            raise self._error(f"list {self.location}/{prefix}", exc) from None
        return sorted(i.path[len(root) + 1:] for i in infos if i.type == pafs.FileType.File)

    def delete(self, relpath: str) -> None:
        # pyarrow then recreates the parent "directory" as a zero-byte marker key ending in "/" (apache/arrow
        # issue 36275): no shard, never listed as one, never read
        try:
            self.fs.delete_file(self._key(relpath))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._error(f"delete {self.location}/{relpath}", exc) from None

    def local_files(self, objects: list[tuple[str, str]]) -> list[str]:
        """Local copies of recorded shards, fetched (in parallel) into the read cache if missing."""
        paths = [self.cache_dir / f"{relpath.removesuffix('.parquet')}.{checksum}.parquet"
                 for relpath, checksum in objects]
        missing = [(rel, checksum, path) for (rel, checksum), path in zip(objects, paths, strict=True)
                   if not path.exists()]
        if missing:
            with ThreadPoolExecutor(min(self.settings.download_threads, len(missing))) as pool:
                list(pool.map(lambda item: self._fetch(*item), missing))
        return [str(p) for p in paths]

    def _fetch(self, relpath: str, checksum: str, path: Path) -> None:
        where = f"{self.location}/{relpath}"
        try:
            with self.fs.open_input_stream(self._key(relpath)) as src:
                data = src.read()
        except FileNotFoundError:
            raise StorageError(f"recorded shard {where} is missing from the bucket") from None
        except OSError as exc:
            raise self._error(f"read shard {where}", exc) from None
        if data_checksum(data) != checksum:
            raise StorageError(f"shard {where} does not match its recorded checksum (changed or damaged in the bucket)")
        tmp = path.with_name(f"{path.name}{TMP_MARK}{os.getpid()}-{threading.get_ident()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, path)  # whole or absent: another reader may be fetching the same shard
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StorageError(f"cannot write the read cache {self.cache_dir}: {exc.strerror or exc}") from exc
