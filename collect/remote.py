"""``rtreport collect --out s3://…`` and ``--resume s3://…``: the run is measured into a local copy (the cache
folder of ``rtreport.storage``) exactly as into a local ``--out``, then uploaded when the command ends, whether
the run completed, was interrupted (Ctrl-C, SIGTERM, SIGHUP) or failed. A resume downloads the object first,
unless the local copy holds a run whose upload failed: then that copy goes on, and is uploaded at the end.

An upload that fails (no network, no access) loses nothing: the local copy stays, the command says where, and
the object under the key is the previous one (a single PUT is atomic; ``rtreport.storage``)."""

from __future__ import annotations

from dataclasses import replace

import click

from rtreport import storage
from rtreport.errors import UserError

from .collect_command import run_collect
from .options import CollectOptions


def run_collect_s3(o: CollectOptions) -> int:
    out, resume, overwrite, quiet = o.out, o.resume, o.overwrite, o.quiet
    if resume is not None and out is not None:
        raise UserError("--resume continues the file's own run: it takes no --out, --label or --quick")
    url = storage.parse(str(resume if resume is not None else out))
    local = storage.local_path(url)
    say = (lambda line: None) if quiet else (lambda line: click.echo(line, err=True))
    s3 = storage.client()
    storage.check_bucket(s3, url)
    if resume is not None:
        if storage.not_uploaded(local):
            say(f"{local} holds this run's latest measurements, never uploaded: continuing from it")
        else:
            storage.download(s3, url, local)
    else:
        if storage.not_uploaded(local):
            raise UserError(
                f"{local} holds a run to {url} that was never uploaded; rtreport collect --resume {url} "
                "continues and uploads it (or move the file away)"
            )
        if not overwrite and storage.head(s3, url) is not None:
            raise UserError(f"{url} already exists; pass --overwrite to replace it, or choose another --out")
        local.parent.mkdir(parents=True, exist_ok=True)
        local.unlink(missing_ok=True)  # the bucket's copy of an earlier object, or nothing
    say(f"the run is measured into {local} and uploaded to {url} when this command ends")
    code = run_collect(
        replace(o, out=None if resume is not None else local, resume=local if resume is not None else None)
    )
    if not local.is_file():
        return code
    try:
        storage.upload(s3, local, url)
    except KeyboardInterrupt:
        raise UserError(
            f"upload to {url} interrupted; the run is kept in {local} (the object is unchanged); "
            f"rtreport collect --resume {url} uploads it"
        ) from None
    say(f"uploaded {url} ({local.stat().st_size:,} bytes; local copy {local})")
    return code
