"""A memory engineer's own policy (a class in a file outside the package) and own recorded episodes,
run by ``ctwm replay compare`` beside the built-in policies."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

POLICY = '''
from ctwm_cli.memory import MemoryPolicy, Retrieval


class LatestOutcomes(MemoryPolicy):
    """The stored outcomes of (s, a), most written first: nothing but the evidence."""

    name = "latest"

    def __init__(self, memory, *, budget, k, **kwargs):
        super().__init__(memory, budget=budget, k=k)
        self.calls = 0

    def retrieve(self, state, action):
        self.calls += 1
        g = self.memory.act_ptr[state] + action
        outs = sorted(self.memory.by_action.get(g, []), key=lambda t: (-self.memory.freq[t], t))[: self.k]
        return Retrieval(tids=tuple(outs), scores=tuple(float(self.memory.freq[t]) for t in outs))


class Forgetful(MemoryPolicy):
    def retrieve(self, state, action):
        return Retrieval(tids=(), scores=())


class NoRetrieve:
    def render(self, *args):
        return None
'''


def _episodes(path, *, episodes=5, steps=150, seed=0):
    """A small random MDP walked by a random policy, written in the --episodes-from format (string labels)."""
    rng = np.random.default_rng(seed)
    n, acts = 12, ("open door", "go north")
    probs = rng.dirichlet(np.full(4, 0.5), size=(n, len(acts)))
    dests = rng.integers(0, n, size=(n, len(acts), 4))
    rows = []
    for e in range(episodes):
        s = int(rng.integers(n))
        for t in range(steps):
            a = int(rng.integers(len(acts)))
            o = int(dests[s, a, rng.choice(4, p=probs[s, a])])
            rows.append({"run": f"ep{e}", "step": t, "state": f"room {s}", "action": acts[a],
                         "observation": f"room {o}"})
            s = o
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


@pytest.fixture()
def files(tmp_path):
    pol = tmp_path / "elsewhere" / "my_policy.py"
    pol.parent.mkdir()
    pol.write_text(textwrap.dedent(POLICY))
    eps = tmp_path / "episodes.jsonl"
    _episodes(eps)
    return pol, eps


def test_a_users_policy_runs_beside_the_built_in_ones_on_recorded_episodes(run_cli, files):
    pol, eps = files
    mine, forgetful = f"{pol}:LatestOutcomes", f"{pol}:Forgetful"
    res = run_cli(["replay", "compare", "--memory", f"graph,ctwm,{mine},{forgetful}", "--episodes-from", str(eps),
                   "--seed", "3", "--bootstrap", "200", "--json"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["config"]["episodes_from"].endswith("episodes.jsonl") and doc["config"]["seeds"] == [0, 1, 2, 3, 4]
    arms = {a["memory"]: a for a in doc["arms"]}
    assert set(arms) == {"graph", "ctwm", mine, forgetful}
    assert all(a["steps"] == 750 for a in arms.values())
    # the user's class was called: it shows the evidence on every answerable step, the forgetful one on none
    assert arms[mine]["evidence_in_prompt"] == 1.0 and arms[mine]["majority_evidence_in_prompt"] == 1.0
    assert arms[forgetful]["evidence_in_prompt"] == 0.0
    # the same answerable steps for every arm (open loop on the recorded trajectories)
    assert len({a["answerable_steps"] for a in arms.values()}) == 1
    comps = {(c["treatment"], c["metric"]): c for c in doc["comparisons"]}
    d = comps[(f"{forgetful}/compact", "answerable_overall_error")]
    assert d["baseline"] == "graph/compact" and d["interval_status"] == "formed" and d["resampling"] == "episodes"
    assert d["confidence_interval"]["low"] > 0  # a memory that forgets is worse, and the run can tell
    oracle = next(r for r in doc["references"] if r["name"] == "oracle")
    assert oracle["overall_error"] <= arms[mine]["overall_error"]


def test_the_table_names_the_recorded_file_not_a_synthetic_world(run_cli, files):
    """The arms table's title said "scale-free, |V|=500, agent random-walk, 5 x 40 steps" for a recorded file:
    the synthetic world's defaults, which were not what ran."""
    _, eps = files
    res = run_cli(["replay", "compare", "--memory", "graph,ctwm", "--episodes-from", str(eps), "--seed", "1",
                   "--bootstrap", "0"])
    assert res.code == 0, res.err
    title = next(line for line in res.out.splitlines() if "open loop" in line)
    assert "episodes from" in title and "episodes.jsonl" in title
    assert "|V|=" not in title and "agent " not in title


@pytest.mark.parametrize("spec,match", [
    ("{pol}:Missing", "has no Missing"),
    ("{pol}:NoRetrieve", "lacks the MemoryPolicy method(s) retrieve"),
    ("{dir}/nope.py:X", "no file"),
    ("no_such_package_xyz.mod:X", "importing no_such_package_xyz.mod failed: ModuleNotFoundError"),
    ("{bad}:X", "importing {bad} failed: ZeroDivisionError"),
])
def test_a_policy_that_does_not_load_is_one_line_naming_it(run_cli, files, tmp_path, spec, match):
    pol, eps = files
    bad = tmp_path / "bad.py"
    bad.write_text("1 / 0\n")
    spec = spec.format(pol=pol, dir=tmp_path, bad=bad)
    res = run_cli(["replay", "compare", "--memory", f"graph,{spec}", "--episodes-from", str(eps), "--seed", "1",
                   "--bootstrap", "0"])
    assert res.code == 2, res.err
    assert match.format(bad=bad) in res.err and spec in res.err
    assert "Traceback" not in res.err and len(res.err.strip().splitlines()) == 1


@pytest.mark.parametrize("lines,match", [
    (['{"state": "a", "action": "x"}'], "'observation' is required"),
    (['{"state": "a", "action": "x", "observation": "b"}'], "has 1 step(s)"),
    (['not json'], ":1: not valid JSON"),
    (['{"run": 1, "step": 0, "state": "a", "action": "x", "observation": "b"}',
      '{"run": 1, "step": 0, "state": "b", "action": "x", "observation": "a"}'], ":2: step 0 of run '1' is recorded"),
])
def test_a_bad_episode_file_is_exit_3_naming_the_line(run_cli, tmp_path, lines, match):
    eps = tmp_path / "eps.jsonl"
    eps.write_text("\n".join(lines) + "\n")
    res = run_cli(["replay", "compare", "--memory", "graph,ctwm", "--episodes-from", str(eps), "--seed", "1",
                   "--bootstrap", "0"])
    assert res.code == 3, res.err
    assert match in res.err and "Traceback" not in res.err


def test_recorded_world_and_oracle_are_the_files_own(tmp_path):
    """Closed forms on a hand-written file: states, actions per state, transitions, and the oracle's
    choice (the outcome seen most often over the whole file, ties to the first seen)."""
    from ctwm_cli.replay.recorded import read_episodes
    from ctwm_cli.replay.runner import oracle_outcomes

    rows = [("a", "x", "b"), ("b", "y", "a"), ("a", "x", "c"), ("c", "y", "a"), ("a", "x", "c"), ("c", "z", "c")]
    eps = tmp_path / "e.jsonl"
    eps.write_text("".join(json.dumps({"state": s, "action": a, "observation": o}) + "\n" for s, a, o in rows))
    rec = read_episodes(eps)
    w = rec.world
    assert w.places == ["a", "b", "c"] and w.action_names == ["x", "y", "y", "z"]
    assert w.n_transitions == 5 and rec.runs == ("",) and rec.tids[0].size == 6
    assert oracle_outcomes(w)[0] == 2  # a -x-> c twice, b once
    assert w.tid_prob[w.out_ptr[0]: w.out_ptr[1]].tolist() == pytest.approx([1 / 3, 2 / 3])
    assert [w.items[t] for t in rec.tids[0][:3]] == ["s0-a0->s1", "s1-a0->s0", "s0-a0->s2"]


def test_a_policy_importable_from_the_path_loads_by_module_name(run_cli, files, monkeypatch, tmp_path):
    pol, eps = files
    monkeypatch.syspath_prepend(str(pol.parent))
    res = run_cli(["replay", "compare", "--memory", "graph,my_policy:LatestOutcomes", "--episodes-from", str(eps),
                   "--seed", "1", "--bootstrap", "0", "--json"])
    assert res.code == 0, res.err
    arm = next(a for a in json.loads(res.out)["arms"] if a["memory"] == "my_policy:LatestOutcomes")
    assert arm["evidence_in_prompt"] == 1.0
