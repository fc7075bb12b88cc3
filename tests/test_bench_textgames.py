"""Text-game episodes (TextWorld): generated games, the paired Graph Memory / CTWM replay, ALFWorld
discovery. Skipped when the optional ``textworld`` package is absent."""

from __future__ import annotations

import itertools
import json

import pytest

textworld = pytest.importorskip("textworld")

from ctwm_cli.bench.textgames import (  # noqa: E402
    discover_games,
    make_games,
    memory_items,
    play_game,
    run_textgames,
    step_prompts,
)
from ctwm_cli.common.errors import InputError, UsageError  # noqa: E402
from ctwm_cli.memory.tokens import token_counter  # noqa: E402


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    return make_games(tmp_path_factory.mktemp("games"), n=2, seed=11, rooms=3, objects=6, quest_length=3)


def test_walkthrough_wins_the_generated_game(games):
    ep = play_game(games[0], agent="walkthrough")
    assert ep.won and not ep.lost
    assert ep.steps and all(s.action for s in ep.steps)
    # the observation before step t is the feedback of step t - 1
    for a, b in itertools.pairwise(ep.steps):
        assert b.observation == a.feedback


def test_random_agent_is_seeded(games):
    a = play_game(games[1], agent="random", seed=4, max_steps=12)
    b = play_game(games[1], agent="random", seed=4, max_steps=12)
    assert [s.action for s in a.steps] == [s.action for s in b.steps]
    assert len(a.steps) <= 12


def test_memory_holds_only_what_was_observed(games):
    ep = play_game(games[0], agent="explore", seed=2, max_steps=10)
    for t in range(len(ep.steps)):
        texts, groups = memory_items(ep, t)
        assert groups.count("step") == t  # one episodic entry per past step
        seen = " ".join([ep.steps[0].observation] + [f"{s.action} {s.feedback}" for s in ep.steps[:t]]).lower()
        for text, g in zip(texts, groups, strict=True):
            if g == "fact":
                args = text[text.index("(") + 1:-1].split(", ")
                assert all(x == "P" or x.split(":")[0].strip().lower() in seen for x in args)


def test_paired_tokens_same_steps_same_tokenizer(games):
    res = run_textgames(games, agent="explore", explore_steps=4, max_steps=20, seed=9, bootstrap=200, budget=900)
    counter = token_counter()
    for row, path in zip(res.games, games, strict=True):
        assert len(row.graph_tokens) == len(row.ctwm_tokens) == row.steps
        # replaying the same episode rebuilds the same prompts; every count is a whole-prompt count
        ep = play_game(path, agent="explore", explore_steps=4, max_steps=20, seed=_seed_of(res, path))
        for t in range(len(ep.steps)):
            g, c = step_prompts(ep, t, budget=900, k=16, core=8, tau=1.0, max_candidates=64, counter=counter)
            assert (g.tokens, c.tokens) == (row.graph_tokens[t], row.ctwm_tokens[t])
            assert g.tokens == counter.count(g.text) <= 900 and c.tokens == counter.count(c.text) <= 900
    total_g = sum(sum(r.graph_tokens) for r in res.games)
    total_c = sum(sum(r.ctwm_tokens) for r in res.games)
    assert res.reduction == pytest.approx(1 - total_c / total_g)
    ci = res.reduction_confidence_interval
    assert ci.low <= res.reduction <= ci.high and ci.level == res.bootstrap["level"]
    assert res.success_graph == res.success_ctwm == sum(r.won for r in res.games)
    json.dumps(res.to_dict())


def _seed_of(res, path):
    import numpy as np

    rng = np.random.default_rng(9)
    seeds = rng.spawn(len(res.games))
    i = [g.game for g in res.games].index(str(path))
    return int(seeds[i].integers(2**31))


def test_discover_games_walks_a_directory_like_alfworld(games, tmp_path):
    # ALFWorld layout: <split>/<task>/<trial>/game.tw-pddl (+ traj_data.json, which is not a game)
    trial = tmp_path / "valid_seen" / "pick_and_place-Apple-None-Fridge-1" / "trial_T0"
    trial.mkdir(parents=True)
    (trial / "game.tw-pddl").write_text("{}")
    (trial / "traj_data.json").write_text("{}")
    found = discover_games(tmp_path / "valid_seen")
    assert found == [trial / "game.tw-pddl"]
    z8 = discover_games(games[0].parent)
    assert z8 == sorted(games)  # a .json beside its .z8 is the same game
    assert discover_games(games[0].parent, limit=1) == sorted(games)[:1]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no game files"):
        discover_games(tmp_path / "empty")
    with pytest.raises(InputError, match="no such file or directory"):
        discover_games(tmp_path / "missing")


def test_bad_arguments(games):
    with pytest.raises(UsageError, match="unknown agent"):
        play_game(games[0], agent="oracle")
    with pytest.raises(UsageError, match="block must be >= 1"):
        run_textgames(games, block=0)


def test_cli_textworld_json(run_cli, games):
    res = run_cli(["bench", "textworld", str(games[0].parent), "--seed", "1", "--bootstrap", "50", "--json",
                   "--label", "TextWorld walkthrough"])
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["command"] == "bench textworld" and doc["label"] == "TextWorld walkthrough"
    assert len(doc["games"]) == 2 and doc["success_graph"] == 2
