"""Issue 43 for replay, world, health and simulate: their options are declared settings fields, a ctwm.toml sets
each one under its flag's name (or says why not), a library caller uses the same names, and simulate's per-τ list
is ``results``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctwm_cli.cli.check_config import Confine, _flags, _refusal, command_options, entry_argv
from ctwm_cli.cli.cmd_health import HealthFlags
from ctwm_cli.cli.cmd_simulate import SimulateSettings
from ctwm_cli.cli.replay_options import CompareFlags, EncodingsFlags, FrozenFlags, ParetoFlags, ReplaySettings
from ctwm_cli.cli.world_options import GridFlags, GridRun, LadderFlags, LadderRun, RunFlags, WorldSettings
from ctwm_cli.common.errors import UsageError
from ctwm_cli.runtime.confine import Confinement

ROOT = Path(__file__).parents[1]
CONFINE = Confine(Confinement(".", allow_remote=False), False)
TRUSTED = Confine(Confinement(".", allow_remote=False), True)

#: each command ctwm check runs -> the declared classes its options come from (later classes win a name)
DECLARED = {
    "replay": (ReplaySettings, EncodingsFlags),
    "replay compare": (ReplaySettings, CompareFlags),
    "replay ablation": (ReplaySettings,),
    "replay pareto": (ReplaySettings, ParetoFlags),
    "world run": (WorldSettings, RunFlags),
    "world grid": (WorldSettings, GridFlags, GridRun),
    "world ladder": (WorldSettings, LadderFlags, LadderRun),
    "health": (HealthFlags,),
    "simulate": (SimulateSettings,),
}


@pytest.mark.parametrize("command", list(DECLARED))
def test_every_declared_option_is_a_config_key_or_refused_with_its_declared_reason(command):
    known = command_options(command)
    decls = {d.name: d for cls in DECLARED[command] for d in cls.declarations() if d.flag}
    offered = {p.name for p, _ in known.values()}
    missing = {"replay pareto": {"out", "overwrite"}, "world ladder": {"writes"}}.get(command, set())
    assert set(decls) - offered == missing, command
    for d in decls.values():
        if d.name in missing:
            continue
        p, meaning = known[d.flag[2:].replace("-", "_")]
        assert meaning and p.name == d.name
        why = _refusal(p)
        assert (why is None) == d.spec.config, (command, d.name, why)
        if not d.spec.config:
            assert why, (command, d.name)


def test_frozen_options_are_declared_too():
    """replay frozen reads a run directory, not a config's traces: not a ctwm check command, its options declared."""
    names = {d.name for d in FrozenFlags.declarations()}
    assert names == {"encoding", "run", "predictor", "base_url", "model", "timeout", "out", "overwrite"}
    with pytest.raises(UsageError, match="--base-url, --model and --timeout apply to --predictor endpoint only"):
        FrozenFlags.checked(model="m")


@pytest.mark.parametrize(("command", "options", "why"), [
    ("replay compare", {"memory": "mypkg.mod:Policy"}, "which runs that code"),
    ("replay compare", {"base-url": "http://127.0.0.1:1/v1"}, "it contacts another machine"),
    ("replay", {"out": "run/"}, "it writes files"),
    ("replay pareto", {"plot": "p.png"}, "it writes a file"),
    ("world run", {"out": "run/"}, "it writes files"),
    ("world grid", {"resume": True}, "it writes files"),
    ("health", {"junit_xml": "j.xml"}, "it writes a file"),
    ("simulate", {"trace": "t.parquet"}, "traces key"),
])
def test_unsafe_options_are_refused_by_name_with_the_reason(command, options, why):
    with pytest.raises(UsageError, match=rf"is not allowed in a config: .*{why}"):
        _flags(options, "check #1", command, CONFINE)


def test_a_trusted_config_may_set_them():
    assert _flags({"out": "run/", "overwrite": True}, "check #1", "world run", TRUSTED) == ["--out=run/",
                                                                                           "--overwrite"]


def test_episodes_from_is_admitted_like_a_trace(tmp_path):
    confine = Confine(Confinement(str(tmp_path), allow_remote=False), False)
    (tmp_path / "episodes.jsonl").write_text("", encoding="utf-8")
    entry = {"command": "replay compare", "options": {"episodes-from": "episodes.jsonl", "steps": 5}}
    made = entry_argv(entry, 0, confine)
    assert made.argv == ["replay", "compare", "--episodes-from=episodes.jsonl", "--steps=5", "--format=json"]
    assert made.inputs == ["episodes.jsonl"] and made.command == "replay compare"
    entry["options"] = {"episodes_from": "../elsewhere.jsonl"}
    with pytest.raises(UsageError, match="option 'episodes_from'"):
        entry_argv(entry, 0, confine)


def test_replay_and_world_entries_take_no_traces_and_no_gates(tmp_path):
    confine = Confine(Confinement(str(tmp_path), allow_remote=False), False)
    (tmp_path / "t.parquet").write_bytes(b"")
    with pytest.raises(UsageError, match="replay reads no traces"):
        entry_argv({"command": "replay", "traces": ["t.parquet"]}, 0, confine)
    with pytest.raises(UsageError, match="world ladder has no --fail-on; drop fail_on"):
        entry_argv({"command": "world ladder", "fail_on": ["gini>0.5"]}, 0, confine)


def test_a_config_entry_runs_what_the_same_flags_typed_by_hand_run(run_cli, tmp_path, monkeypatch):
    """The argv a config makes from the flags' names (kebab, snake, booleans, lists, choices, the deprecated
    spelling) gives the very JSON the hand-typed command gives."""
    monkeypatch.chdir(tmp_path)
    options = {"steps": 80, "episodes": 2, "size": 40, "seed": 3, "bootstrap": 20, "encoding": "verbose",
               "max-candidates": 40, "tail_on": "next", "verify-tokens": True, "tau": ["0.5", "1"], "level": 0.9}
    entry = entry_argv({"command": "replay compare", "options": options}, 0, CONFINE)
    by_hand = ["replay", "compare", "--steps", "80", "--episodes", "2", "--size", "40", "--seed", "3",
               "--bootstrap", "20", "--encoding", "verbose", "--max-candidates", "40", "--tail-on", "next",
               "--verify-tokens", "--tau", "0.5", "--tau", "1", "--confidence", "0.9", "--json"]
    configured, typed = run_cli(entry.argv), run_cli(by_hand)
    assert configured.code == typed.code == 0, configured.err
    assert json.loads(configured.out) == json.loads(typed.out)
    doc = json.loads(typed.out)
    assert doc["config"]["steps"] == 80 and doc["config"]["level"] == 0.9 and doc["config"]["tail_on"] == "next"


@pytest.mark.slow  # five entries, five ctwm processes
def test_ctwm_check_runs_replay_world_health_and_simulate_entries(run_cli, tmp_path, monkeypatch):
    """A real ctwm.toml: one entry per command, each option under its flag's name; replay's --min-effect makes an
    entry fail (exit 1 in the entry, status fail), so its options reached the command."""
    telemetry = ROOT / "sample_traces" / "telemetry"
    shutil.copy(telemetry / "mem0_trace.jsonl", tmp_path / "mem0.jsonl")
    shutil.copy(telemetry / "mem0_get_all.json", tmp_path / "objects.json")
    shutil.copy(ROOT / "sample_traces" / "tpl_events.parquet", tmp_path / "t.parquet")
    small = "steps = 80, episodes = 2, size = 40, seed = 1, bootstrap = 20"
    (tmp_path / "ctwm.toml").write_text(f"""
[[check]]
name = "replay"
command = "replay compare"
options = {{ {small}, tail-on = "next" }}

[[check]]
name = "too small to detect"
command = "replay"
options = {{ {small}, min-effect = ["1e-9"] }}

[[check]]
command = "world ladder"
options = {{ family = "scale-free", retriever = "state-frequency,none", size = 60, steps = 300, seed = 1 }}

[[check]]
command = "health"
traces = ["mem0.jsonl"]
options = {{ objects = "objects.json", group-by = "user", budget = 8000, input_format = "auto" }}
fail_on = ["dead_weight_share>1"]

[[check]]
command = "simulate"
traces = ["t.parquet"]
options = {{ tau = "0.5:2:4", core = 5, budget = 64, ranking = "counts" }}
fail_on = ["access_share_dropped>1"]
""", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = run_cli(["check", "ctwm.toml", "--format", "json"])
    status = {e["check"]: (e["command"], e["status"]) for e in json.loads(res.out)["entries"]}
    assert status == {"replay": ("replay compare", "pass"), "too small to detect": ("replay", "fail"),
                      "world ladder": ("world ladder", "pass"), "health mem0.jsonl": ("health", "pass"),
                      "simulate t.parquet": ("simulate", "pass")}, res.err
    assert res.code == 1


def test_library_callers_use_the_flags_names():
    cfg = ReplaySettings.checked(steps=300, episodes=3, k=4, tail_on="next", block="7").config(seed=10)
    assert (cfg.steps, cfg.seeds, cfg.k, cfg.tail_on) == (300, (10, 11, 12), 4, "next")
    assert ReplaySettings.checked(agent="reader").config(seed=0).seeds == tuple(range(30))  # closed-loop default
    with pytest.raises(UsageError, match=r"unknown replay option 'episode' \(did you mean 'episodes'\?\)"):
        ReplaySettings.checked(episode=2)
    with pytest.raises(UsageError, match=r"^episodes must be >= 1, got 0$") as exc:
        ReplaySettings.checked(episodes=0)
    assert exc.value.params == ("episodes",)
    with pytest.raises(UsageError, match="family must be one of"):
        ReplaySettings.checked(family="ring")
    with pytest.raises(UsageError, match="--episodes-from replays the file's episodes; drop --episodes"):
        ReplaySettings.checked(episodes=2, episodes_from="e.jsonl")
    world = WorldSettings.checked(steps=50, store="lfu").config(family="uniform", size=40, retriever="none", seed=2)
    assert (world.steps, world.store, world.family) == (50, "lfu", "uniform")
    with pytest.raises(UsageError, match=r"out is required"):
        RunFlags.checked(family="uniform")
    with pytest.raises(UsageError, match=r"^core must be >= 1, got 0$"):
        SimulateSettings.checked(core=0)
    with pytest.raises(UsageError, match="give either --tau or --sweep, not both"):
        SimulateSettings.checked(tau=["1"], sweep="0.5:1:2")


@pytest.mark.parametrize(("args", "text"), [
    (["world", "grid", "--out", "g", "--replicates", "0"], "--replicates must be >= 1, got 0"),
    (["simulate", "--core", "0"], "--core must be >= 1, got 0"),
    (["simulate", "--show", "-1"], "--show must be >= 0, got -1"),
    (["replay", "--episodes", "0"], "--episodes must be >= 1, got 0"),
    (["replay", "compare", "--steps", "5", "--episodes", "2", "--episodes-from", "e.jsonl"],
     "--episodes-from replays the file's episodes; drop --episodes"),
])
def test_the_declared_checks_name_the_flag(run_cli, args, text):
    res = run_cli(args)
    assert res.code == 2 and f"ctwm: error: {text}" in res.err, res.err


def test_simulate_results_keep_rows_as_a_library_alias():
    from ctwm_cli.allocation import tau_sweep

    sweep = tau_sweep(100, [0.5, 1.0], core=5, budget=64)
    assert sweep.rows is sweep.results and "rows" not in sweep.to_dict() and len(sweep.to_dict()["results"]) == 2
