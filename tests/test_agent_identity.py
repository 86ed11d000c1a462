"""An agent is its model and the preprocessing it plays behind, not its file's name: two different Stable-Baselines3
models saved under one name in two folders, collected with one label, are two agents on every page, each with its
own answer, numbers and history; the same model collected twice is one agent with a history of two runs. Real SB3,
Gymnasium, CPU runtimes, DuckDB files and build."""

from __future__ import annotations

import json
import re

import duckdb
import pytest
from click.testing import CliRunner

from rtreport_cli.main import main
from site_gen.agents import identity, tell_apart

LABEL = "lab-cpu"
BASE = f"{LABEL} / CartPole-v1 / ppo_cartpole.zip"
SLUG = "lab-cpu-cartpole-v1-ppo-cartpole-zip"  # the agent label's slug, as before models were told apart
DAY = re.compile(re.escape(SLUG) + r"-\d{4}-\d{2}-\d{2}(-\d+)?")  # a run's own page


def _run(path) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        run_id, sha = con.execute("SELECT run_id, model_sha256 FROM runs").fetchone()
    finally:
        con.close()
    return {"run_id": run_id, "sha": sha}


@pytest.fixture(scope="module")
def two_models_site(tmp_path_factory):
    """Model a collected, then model b, then a again (one label, one file name); built into one site."""
    from stable_baselines3 import PPO

    d = tmp_path_factory.mktemp("identity")
    for seed, folder in ((0, "a"), (1, "b")):
        model = PPO("MlpPolicy", "CartPole-v1", seed=seed, n_steps=64, batch_size=64, policy_kwargs={"net_arch": [16]})
        model.learn(128)
        (d / folder).mkdir()
        model.save(d / folder / "ppo_cartpole.zip")
    files = []
    for i, folder in enumerate("aba"):
        out = d / f"{i}-{folder}.duckdb"
        result = CliRunner().invoke(
            main,
            ["collect", "--quick", "--repeats", "0", "--quiet", "--env", "CartPole-v1", "--label", LABEL]
            + ["--model", str(d / folder / "ppo_cartpole.zip"), "--out", str(out), "--artifacts", str(d / "art")],
        )
        assert result.exit_code == 0, result.output
        files.append(out)
    site = d / "site"
    result = CliRunner().invoke(main, ["build", *map(str, files), "--out", str(site)])
    assert result.exit_code == 0, result.output
    a1, b, a2 = map(_run, files)
    assert a1["sha"] == a2["sha"] != b["sha"]
    return site, a1, b, a2


def _verdicts(site, slug) -> dict:
    return json.loads((site / "data" / slug / "verdicts.json").read_text())


def test_two_models_of_one_file_name_are_two_agents_each_with_its_own_answer(two_models_site):
    site, a1, b, a2 = two_models_site
    name_a, name_b = f"{BASE} · {a1['sha'][:8]}", f"{BASE} · {b['sha'][:8]}"
    # the agent measured first keeps the label's address; the other's is its own
    answer_a, answer_b = _verdicts(site, SLUG), _verdicts(site, f"{SLUG}-{b['sha'][:8]}")
    assert answer_a["run_id"] == a2["run_id"] and answer_a["machine"] == name_a
    assert answer_b["run_id"] == b["run_id"] and answer_b["machine"] == name_b
    for lang in ("en", "zh-tw"):
        home = (site / lang / "index.html").read_text()
        assert name_a in home and name_b in home and f"{BASE}<" not in home
        page_b = (site / lang / "hardware" / f"{SLUG}-{b['sha'][:8]}" / "index.html").read_text()
        assert name_b in page_b and b["sha"] in page_b and a1["sha"] not in page_b
        assert "history/" not in page_b  # b was measured once: no history
        page_a = (site / lang / "hardware" / SLUG / "index.html").read_text()
        assert name_a in page_a and a2["sha"] in page_a and b["sha"] not in page_a
        told = {"en": "Another model saved as ppo_cartpole.zip", "zh-tw": "另一個同樣存成 ppo_cartpole.zip 的模型"}
        assert told[lang] in page_a and told[lang] in page_b
        compare = (site / lang / "compare" / "index.html").read_text()
        assert name_a in compare and name_b in compare
    # every run keeps its own page, at the address it had when the two models were one agent
    hardware = site / "en" / "hardware"
    own = {p.name: _verdicts(site, p.name)["run_id"] for p in hardware.iterdir() if DAY.fullmatch(p.name)}
    assert sorted(own.values()) == sorted(r["run_id"] for r in (a1, b, a2)) and len(own) == 3


def test_the_same_model_collected_twice_is_one_agent_with_a_history_of_two_runs(two_models_site):
    site, a1, b, a2 = two_models_site
    assert [p.name for p in (site / "en" / "history").iterdir()] == [SLUG]
    for lang in ("en", "zh-tw"):
        history = (site / lang / "history" / SLUG / "index.html").read_text()
        assert f"{BASE} · {a1['sha'][:8]}" in history and f"{BASE} · {b['sha'][:8]}" not in history
        assert b["sha"][:12] not in history  # no model change between its runs: b's run is not among them
    en = (site / "en" / "history" / SLUG / "index.html").read_text()
    assert "2 runs of this" in en and "model (sha256)" not in en
    runs_of_a = {a1["run_id"], a2["run_id"]}
    for p in (site / "en" / "hardware").iterdir():
        page = (p / "index.html").read_text()
        has_history = f"history/{SLUG}/index.html" in page
        assert has_history == (_verdicts(site, p.name)["run_id"] in runs_of_a), p.name


def _run_dict(run_id, sha, started, preprocessing=None, label=BASE):
    protocol = {"family": "gymnasium", "gym_id": "CartPole-v1"}
    if preprocessing is not None:
        protocol["preprocessing"] = preprocessing
    return {
        "run_id": run_id,
        "label": label,
        "machine_label": LABEL,
        "model_sha256": sha,
        "protocol": protocol,
        "started_at": started,
    }


def _normalized(sha, file):
    return {"normalization": {"applied": True, "file": file, "sha256": sha, "source": "beside the model"}}


def test_an_agent_is_what_it_plays_not_where_its_files_were():
    moved = _run_dict("r1", "a" * 64, "1", _normalized("c" * 64, "/home/me/a/vecnormalize.pkl"))
    assert identity(moved) == identity(_run_dict("r2", "a" * 64, "2", _normalized("c" * 64, "/srv/vecnormalize.pkl")))
    assert identity(moved) != identity(_run_dict("r3", "a" * 64, "3", _normalized("d" * 64, "/srv/x.pkl")))
    assert identity(moved) != identity(_run_dict("r4", "b" * 64, "4", _normalized("c" * 64, "/srv/x.pkl")))
    # one model behind two normalisations: the names say the preprocessing's digest too
    runs = [moved, _run_dict("r3", "a" * 64, "3", _normalized("d" * 64, "/srv/x.pkl"))]
    tell_apart(runs)
    assert runs[0]["label"] != runs[1]["label"] and all(r["label"].count(" · ") == 2 for r in runs)
    assert runs[0]["slug_label"] == BASE and runs[1]["slug_label"] != BASE


def test_files_that_do_not_say_which_model_keep_the_label():
    old = [_run_dict("r1", None, "1"), _run_dict("r2", "a" * 64, "2")]
    tell_apart(old)
    assert [r["label"] for r in old] == [BASE, BASE] and not any("slug_label" in r for r in old)
    mixed = [_run_dict("r1", None, "1"), _run_dict("r2", "a" * 64, "2"), _run_dict("r3", "b" * 64, "3")]
    tell_apart(mixed)
    assert [r["label"] for r in mixed] == [f"{BASE} · aaaaaaaa", f"{BASE} · aaaaaaaa", f"{BASE} · bbbbbbbb"]
