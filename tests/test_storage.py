"""Run files in object storage, against a real S3 API server on 127.0.0.1 (moto's, in a thread): collect into
s3://, interrupt and resume from it, build from the bucket; and the errors, each one line that loses nothing."""

import boto3
import duckdb
import pytest
from click.testing import CliRunner

from conftest import COMMITTED_RUNS, ctrl_c_at_game
from rtreport_cli.main import main

moto_server = pytest.importorskip("moto.server")


def _stop(server) -> None:
    server.stop()
    server._server.server_close()  # stop() leaves the socket listening: connections would hang, not fail


@pytest.fixture(scope="module")
def endpoint():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    port = server.get_host_and_port()[1]
    server._port = port  # a restart (the network back) listens where the clients look
    yield {"url": f"http://127.0.0.1:{port}", "server": server}
    _stop(server)


@pytest.fixture
def s3(endpoint, tmp_path, monkeypatch):
    """The AWS variables pointing at the local server, the cache in tmp_path; a fresh bucket per test."""
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint["url"],
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "RTREPORT_CACHE": str(tmp_path / "cache"),
    }.items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(k, raising=False)
    client = boto3.client("s3")
    bucket = f"runs-{tmp_path.name.lower().replace('_', '-')}"[:60]
    client.create_bucket(Bucket=bucket)
    return client, bucket


def _collect(tmp_path, *args):
    return CliRunner().invoke(main, ["collect", "--quiet", *args, "--artifacts", str(tmp_path / "artifacts")])


def _quick(tmp_path, url):
    return _collect(tmp_path, "--quick", "--runtimes", "ort-cpu-fp32", "--label", "fleet", "--out", url)


def _status(client, bucket, key, tmp_path) -> str:
    path = tmp_path / f"check-{key.replace('/', '-')}"
    client.download_file(bucket, key, str(path))
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT status FROM runs").fetchone()[0]
    finally:
        con.close()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_collect_interrupt_resume_and_build_from_a_bucket_equal_to_disk(s3, tmp_path, monkeypatch):
    client, bucket = s3
    assert _quick(tmp_path, f"s3://{bucket}/fleet/a.duckdb").exit_code == 0
    assert _status(client, bucket, "fleet/a.duckdb", tmp_path) == "complete"

    from collect import measure

    real = ctrl_c_at_game(monkeypatch, 2)
    stopped = _quick(tmp_path, f"s3://{bucket}/fleet/b.duckdb")
    assert stopped.exit_code == 130, stopped.output
    assert _status(client, bucket, "fleet/b.duckdb", tmp_path) == "incomplete"  # uploaded when interrupted
    monkeypatch.setattr(measure, "ShadowedGame", real)
    (tmp_path / "cache").rename(tmp_path / "cache-gone")  # another machine: the resume downloads the object
    resumed = _collect(tmp_path, "--resume", f"s3://{bucket}/fleet/b.duckdb")
    assert resumed.exit_code == 0, resumed.output
    assert _status(client, bucket, "fleet/b.duckdb", tmp_path) == "complete"

    from_bucket = CliRunner().invoke(main, ["build", f"s3://{bucket}/fleet/", "--out", str(tmp_path / "site-s3")])
    assert from_bucket.exit_code == 0, from_bucket.output
    disk = tmp_path / "disk"
    disk.mkdir()
    for name in ("a.duckdb", "b.duckdb"):
        client.download_file(bucket, f"fleet/{name}", str(disk / name))
    assert CliRunner().invoke(main, ["build", str(disk), "--out", str(tmp_path / "site-disk")]).exit_code == 0
    pages = lambda root: {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}  # noqa
    built_s3, built_disk = pages(tmp_path / "site-s3"), pages(tmp_path / "site-disk")
    assert built_s3 == built_disk
    assert any("history" in str(p) for p in built_s3)  # two runs of one label: a history page


def test_build_uses_its_cache_until_the_object_changes(s3, tmp_path):
    client, bucket = s3
    cpu, gpu = COMMITTED_RUNS[0], COMMITTED_RUNS[-1]
    client.upload_file(str(cpu), bucket, "p/cpu.duckdb")
    from rtreport.storage import fetch_folder

    first = fetch_folder(f"s3://{bucket}/p")
    assert [p.name for p in first] == ["cpu.duckdb"]
    stamp = first[0].stat().st_mtime_ns
    assert fetch_folder(f"s3://{bucket}/p/")[0].stat().st_mtime_ns == stamp  # same ETag and size: not fetched
    client.upload_file(str(gpu), bucket, "p/cpu.duckdb")
    again = fetch_folder(f"s3://{bucket}/p/")
    assert again[0].read_bytes() == gpu.read_bytes()


def _one_line(result, *words):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert all(w in lines[0] for w in words), lines[0]


def test_no_bucket_and_no_credentials_are_one_line_before_measuring(s3, tmp_path, monkeypatch):
    _one_line(_quick(tmp_path, "s3://no-such-bucket/x.duckdb"), "no-such-bucket does not exist")
    _one_line(
        CliRunner().invoke(main, ["build", "s3://no-such-bucket/", "--out", str(tmp_path / "site")]),
        "no-such-bucket does not exist",
    )
    _one_line(
        CliRunner().invoke(main, ["build", f"s3://{s3[1]}/empty/", "--out", str(tmp_path / "site")]),
        "holds no .duckdb files",
    )
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    _one_line(_quick(tmp_path, f"s3://{s3[1]}/x.duckdb"), "no AWS credentials")
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.duckdb"))


def test_network_down_mid_upload_keeps_the_run_and_a_resume_uploads_it(s3, endpoint, tmp_path, monkeypatch):
    client, bucket = s3
    url = f"s3://{bucket}/n.duckdb"
    from collect import remote

    real_run = remote.run_collect

    def run_then_network_down(options):
        code = real_run(options)
        _stop(endpoint["server"])  # the endpoint is gone when the upload starts
        return code

    monkeypatch.setattr(remote, "run_collect", run_then_network_down)
    try:
        result = _quick(tmp_path, url)
    finally:
        endpoint["server"].start()  # same port, same in-process buckets
    local = tmp_path / "cache" / "s3" / bucket / "n.duckdb"
    _one_line(result, "cannot upload to", "cannot reach the storage endpoint", str(local), "--resume")
    assert local.is_file()
    assert client.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0  # no object, whole or half
    monkeypatch.setattr(remote, "run_collect", real_run)
    again = _collect(tmp_path, "--quick", "--runtimes", "ort-cpu-fp32", "--label", "fleet", "--out", url)
    _one_line(again, "never uploaded", "--resume")  # a new run would not replace it
    resumed = _collect(tmp_path, "--resume", url)
    assert resumed.exit_code == 0, resumed.output
    assert _status(client, bucket, "n.duckdb", tmp_path) == "complete"


def test_an_existing_object_is_not_replaced_without_overwrite(s3, tmp_path):
    client, bucket = s3
    client.put_object(Bucket=bucket, Key="e.duckdb", Body=b"x")
    _one_line(_quick(tmp_path, f"s3://{bucket}/e.duckdb"), "already exists", "--overwrite")
    _one_line(_quick(tmp_path, f"s3://{bucket}/e.txt"), "ends in .duckdb")
