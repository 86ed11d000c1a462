"""Run files in object storage: ``s3://bucket/prefix/name.duckdb`` for ``collect --out``/``--resume`` and
``s3://bucket/prefix/`` for ``build`` (shared by both halves).

The S3 API through boto3, imported only when an ``s3://`` URL is used (``pip install 'rtreport[s3]'``), so the
base install stays light. Credentials, region and endpoint come from the standard AWS variables
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL`` /
``AWS_ENDPOINT_URL_S3``) or the AWS config files, so MinIO, R2 and GCS's interoperability endpoint serve too.

Local copies live under the cache folder (``$RTREPORT_CACHE``, else ``$XDG_CACHE_HOME/rtreport``, else
``~/.cache/rtreport``) in ``s3/<bucket>/<key>``; beside each, ``<name>.s3.json`` records the object's ETag and size
and the SHA-256 of the bytes last downloaded or uploaded, so an unchanged object is not fetched again and a local
file that was never uploaded (a failed upload) is recognised.

An upload is one PutObject of the whole file: S3 stores an object only once its PUT has completed (and checked
its Content-MD5), so a reader sees the previous object or the new one, never half of one. That bounds a run file
to 5 GB (the largest single PUT); the files here are tens of MB.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

SCHEME = "s3://"
MAX_PUT = 5 * 1024**3


def is_s3(text) -> bool:
    return isinstance(text, str) and text.startswith(SCHEME)


@dataclass(frozen=True)
class S3Url:
    bucket: str
    key: str  # a file's key, or a prefix ('' or ending in '/')

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.key}"

    def child(self, name: str) -> "S3Url":
        return S3Url(self.bucket, self.key + name)


def parse(text: str, folder: bool = False) -> S3Url:
    """``s3://bucket/key``; ``folder``: a prefix (a trailing '/' is added)."""
    rest = text[len(SCHEME) :]
    bucket, _, key = rest.partition("/")
    if not bucket or any(c in bucket for c in " \\"):
        raise UserError(f"{text}: not an s3://bucket/key URL")
    if folder:
        return S3Url(bucket, key if not key or key.endswith("/") else key + "/")
    if not key or key.endswith("/"):
        raise UserError(f"{text}: give the object's name, e.g. s3://{bucket}/{key}run.duckdb")
    if not key.endswith(".duckdb"):
        raise UserError(f"{text}: a run file's name ends in .duckdb")
    return S3Url(bucket, key)


def cache_root() -> Path:
    if os.environ.get("RTREPORT_CACHE"):
        return Path(os.environ["RTREPORT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rtreport"


def local_path(url: S3Url) -> Path:
    """Where the object's local copy lives (the same file name, so pages built from it read the same)."""
    return cache_root() / "s3" / url.bucket / url.key


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".s3.json")


def _recorded(path: Path) -> dict:
    try:
        return json.loads(_sidecar(path).read_text())
    except (OSError, ValueError):
        return {}


def _record(path: Path, etag: str | None, size: int, sha256: str) -> None:
    _sidecar(path).write_text(json.dumps({"etag": etag, "size": size, "sha256": sha256}, sort_keys=True))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def not_uploaded(path: Path) -> bool:
    """The local copy holds bytes that never reached the bucket (its last upload failed or never ran)."""
    return path.is_file() and _recorded(path).get("sha256") != sha256_of(path)


def client():
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise UserError("s3:// URLs need boto3: pip install 'rtreport[s3]'") from None
    # Few retries and short connect timeouts: a network that is down should give its one line within seconds.
    config = Config(connect_timeout=5, read_timeout=60, retries={"max_attempts": 2, "mode": "standard"})
    return boto3.session.Session().client("s3", config=config)  # a new session: the variables as they are now


def problem(e: Exception, url, doing: str) -> str:
    """boto's exception as one line: what failed, and why in words."""
    from botocore import exceptions as bx

    if isinstance(e, bx.NoCredentialsError):
        why = "no AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an AWS profile)"
    elif isinstance(
        e,
        (
            bx.EndpointConnectionError,
            bx.ConnectionClosedError,
            bx.ConnectTimeoutError,
            bx.ReadTimeoutError,
            bx.ConnectionError,
        ),
    ):
        why = f"cannot reach the storage endpoint ({type(e).__name__})"
    elif isinstance(e, bx.ClientError):
        code = e.response.get("Error", {}).get("Code", "")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        why = {
            "NoSuchBucket": f"bucket {url.bucket} does not exist",
            "NoSuchKey": "no such object",
            "InvalidAccessKeyId": "the access key is not known there",
            "SignatureDoesNotMatch": "the secret key does not match the access key",
            "AccessDenied": "access denied",
        }.get(code) or (
            f"bucket {url.bucket} does not exist"
            if status == 404 and doing == "reach"
            else "access denied (check the credentials and the bucket's permissions)"
            if status == 403
            else f"{code or status}: {str(e)[:160]}"
        )
    else:
        why = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"
    return f"cannot {doing} {url}: {why}"


def check_bucket(s3, url: S3Url) -> None:
    """Fail before any measuring when the bucket cannot be reached (no bucket, no credentials, no network)."""
    try:
        s3.head_bucket(Bucket=url.bucket)
    except Exception as e:
        raise UserError(problem(e, url, "reach")) from None


def head(s3, url: S3Url) -> dict | None:
    """The object's metadata, or None when there is none under the key."""
    try:
        return s3.head_object(Bucket=url.bucket, Key=url.key)
    except Exception as e:
        from botocore.exceptions import ClientError

        if isinstance(e, ClientError) and e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise UserError(problem(e, url, "read")) from None


def upload(s3, path: Path, url: S3Url) -> None:
    """One PutObject of the whole file (atomic in S3), its MD5 checked by the server and its SHA-256 kept in the
    object's metadata; the local file is left as it is whatever happens."""
    size = path.stat().st_size
    if size > MAX_PUT:
        raise UserError(f"cannot upload {path} to {url}: {size:,} bytes is over one PUT's 5 GB; the run is in {path}")
    md5, sha = hashlib.md5(), hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            md5.update(block)
            sha.update(block)
    try:
        with open(path, "rb") as f:
            reply = s3.put_object(
                Bucket=url.bucket,
                Key=url.key,
                Body=f,
                ContentLength=size,
                ContentMD5=base64.b64encode(md5.digest()).decode(),
                Metadata={"sha256": sha.hexdigest()},
            )
    except Exception as e:
        raise UserError(
            problem(e, url, "upload to") + f"; the run is kept in {path} (the object is unchanged); "
            f"rtreport collect --resume {url} uploads it"
        ) from None
    _record(path, reply.get("ETag"), size, sha.hexdigest())


def download(s3, url: S3Url, dest: Path, meta: dict | None = None) -> Path:
    """The object into ``dest`` (written beside it, then renamed), unless the copy there is that object already
    (same ETag and size). Checked against the SHA-256 its uploader recorded, where there is one."""
    meta = meta if meta is not None else head(s3, url)
    if meta is None:
        raise UserError(f"{url}: no such object")
    etag, size = meta.get("ETag"), meta.get("ContentLength")
    seen = _recorded(dest)
    if dest.is_file() and seen.get("etag") == etag and seen.get("size") == size == dest.stat().st_size:
        return dest
    if not_uploaded(dest):  # a collect's run whose upload failed: never replaced by the bucket's older object
        raise UserError(
            f"{dest} holds a run not yet uploaded to {url}; rtreport collect --resume {url} uploads it "
            "(or move the file away)"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.{os.getpid()}.download")
    for left in dest.parent.glob(f".{dest.name}.*.download"):  # of downloads killed outright (their process gone)
        pid = left.name[len(dest.name) + 2 : -len(".download")]
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            left.unlink(missing_ok=True)
    try:
        s3.download_file(url.bucket, url.key, str(part))
    except BaseException as e:  # a stop signal too (then raised on): no half-downloaded file is left
        part.unlink(missing_ok=True)
        if not isinstance(e, Exception):
            raise
        raise UserError(problem(e, url, "download")) from None
    digest = sha256_of(part)
    wanted = (meta.get("Metadata") or {}).get("sha256")
    if wanted and wanted != digest:
        part.unlink(missing_ok=True)
        raise UserError(f"{url}: the downloaded bytes do not match the SHA-256 recorded at upload; download again")
    os.replace(part, dest)
    _record(dest, etag, dest.stat().st_size, digest)
    return dest


def fetch_folder(text: str) -> list[Path]:
    """Every ``*.duckdb`` directly under an ``s3://bucket/prefix/``, as local copies (cached by ETag and size)."""
    url = parse(text, folder=True)
    s3 = client()
    check_bucket(s3, url)
    found = []
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=url.bucket, Prefix=url.key, Delimiter="/"):
            found += [o for o in page.get("Contents", []) if o["Key"].endswith(".duckdb")]
    except Exception as e:
        raise UserError(problem(e, url, "list")) from None
    if not found:
        raise UserError(
            f"{url} holds no .duckdb files: collect into it first (rtreport collect --out {url}NAME.duckdb)"
        )
    paths = []
    for o in sorted(found, key=lambda o: o["Key"]):
        obj = S3Url(url.bucket, o["Key"])
        paths.append(download(s3, obj, local_path(obj), head(s3, obj)))
    return paths


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
