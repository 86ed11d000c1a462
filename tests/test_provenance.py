"""Provenance that is true: both ONNX Runtime distributions installed is refused in one line (or,
allowed, recorded and shown); a plugin runtime's package, version and files' hash; the code hash and a dirty
checkout said plainly on the machine page."""

import importlib.metadata
import json

from click.testing import CliRunner

from collect import packages, provenance
from rtreport_cli.main import main
from site_gen.build import load_runs
from site_gen.describe import provenance_banners
from site_gen.i18n import Translator
from tests.conftest import COMMITTED_RUNS

BOTH = {"onnxruntime": "1.30.0", "onnxruntime-gpu": "1.31.1"}


def _mixed(monkeypatch):
    real = provenance.version
    monkeypatch.setattr(provenance, "version", lambda d: BOTH.get(d) or real(d))


def test_collect_refuses_both_onnxruntime_distributions_in_one_line(monkeypatch, tmp_path):
    _mixed(monkeypatch)
    out = tmp_path / "x.duckdb"
    result = CliRunner().invoke(main, ["collect", "--quick", "--model", str(tmp_path / "none.pt"), "--out", str(out)])
    assert result.exit_code == 2 and not out.exists(), result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "onnxruntime 1.30.0 and onnxruntime-gpu 1.31.1 are both installed" in lines[0]
    assert "--allow-mixed-onnxruntime" in lines[0] and "Traceback" not in result.output


def test_allowed_it_is_recorded_in_the_environment(monkeypatch, tmp_path):
    _mixed(monkeypatch)
    result = CliRunner().invoke(
        main,
        [
            "collect",
            "--quick",
            "--allow-mixed-onnxruntime",
            "--model",
            str(tmp_path / "none.pt"),
            "--out",
            str(tmp_path / "x.duckdb"),
        ],
    )
    assert "both installed" not in result.output  # past the check: the next error is the missing model
    env = provenance.environment()
    assert env["onnxruntime"] == "1.30.0" and env["onnxruntime-gpu"] == "1.31.1"
    assert (
        "1.30.0" in env[provenance.MIXED_ONNXRUNTIME]
        and "--allow-mixed-onnxruntime" in env[provenance.MIXED_ONNXRUNTIME]
    )


def test_the_machine_page_says_so_and_says_dirty_plainly():
    run = {"environment": BOTH, "code_version": "b4b494f5767b-dirty", "code_hash": "30d4ad5cc57652dc"}
    for lang in ("en", "zh-tw"):
        t = Translator(lang)
        said = provenance_banners(run, t)
        assert said == [
            t("mixed_onnxruntime_banner", cpu="1.30.0", gpu="1.31.1"),
            t("dirty_banner", version="b4b494f5767b-dirty", hash="30d4ad5cc576"),
        ]
    assert (
        provenance_banners({"environment": {"onnxruntime": "1.32.0"}, "code_version": "b4b494f5767b"}, Translator("en"))
        == []
    )
    for run in load_runs(list(COMMITTED_RUNS)):  # the committed files: as their environment says
        env, said = run.run.get("environment") or {}, provenance_banners(run.run, Translator("en"))
        assert any("onnxruntime-gpu" in s for s in said) == bool(env.get("onnxruntime") and env.get("onnxruntime-gpu"))
        assert any("uncommitted" in s for s in said) == str(run.run.get("code_version")).endswith("-dirty")


def test_a_plugin_package_is_named_with_its_version_and_files_hash(tmp_path):
    site = tmp_path / "site"
    (site / "tinypkg").mkdir(parents=True)
    (site / "tinypkg" / "__init__.py").write_text("RUNTIMES = []\n")
    info = site / "tinypkg-2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinypkg\nVersion: 2.3\n")
    (info / "entry_points.txt").write_text("[rtreport.runtimes]\ntiny = tinypkg:RUNTIMES\n")
    (info / "RECORD").write_text("tinypkg/__init__.py,,\ntinypkg-2.3.dist-info/METADATA,,\n")
    dist = importlib.metadata.PathDistribution(info)
    ep = next(iter(dist.entry_points))
    name, version, sha = packages.package_of(ep)
    assert (name, version) == ("tinypkg", "2.3") and len(sha) == 64
    (site / "tinypkg" / "__init__.py").write_text("RUNTIMES = []  # changed\n")
    assert packages.package_of(ep)[2] != sha  # its code changed: so does the hash
    assert json.dumps(packages.package_of(ep))


def test_a_source_stamp_names_the_clean_commit_only_for_the_code_it_was_made_from(monkeypatch, tmp_path):
    """The device copy's git says `<old commit>-dirty`; a stamp made from the clean commit names that commit when
    the running code hashes the same, and is ignored (git's word stands) when it does not."""
    stamp = tmp_path / provenance.SOURCE_STAMP
    monkeypatch.setattr(provenance, "_describe", lambda root: "2c06e2d50d35-dirty")
    assert provenance.code_version(tmp_path) == "2c06e2d50d35-dirty"  # no stamp
    stamp.write_text(json.dumps({"commit": "8b708c4" + "0" * 33, "code_hash": provenance.code_hash()}))
    assert provenance.code_version(tmp_path) == "8b708c400000"
    stamp.write_text(json.dumps({"commit": "8b708c4" + "0" * 33, "code_hash": "other code"}))
    assert provenance.code_version(tmp_path) == "2c06e2d50d35-dirty"
    stamp.write_text("not json")
    assert provenance.code_version(tmp_path) == "2c06e2d50d35-dirty"
    monkeypatch.setattr(provenance, "_describe", lambda root: "abc123")  # a clean checkout: git's word
    assert provenance.code_version(tmp_path) == "abc123"


def test_no_stamp_for_a_dirty_tree(tmp_path):
    import subprocess

    import pytest

    from rtreport.errors import UserError

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("1")
    for args in (["add", "a.txt"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "a"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True)
    made = provenance.write_stamp(tmp_path)
    assert json.loads((tmp_path / provenance.SOURCE_STAMP).read_text()) == made and len(made["commit"]) == 40
    (tmp_path / "a.txt").write_text("2")
    with pytest.raises(UserError, match="uncommitted"):
        provenance.write_stamp(tmp_path)
