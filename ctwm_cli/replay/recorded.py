"""Your own episodes: ``ctwm replay compare --episodes-from FILE`` replays recorded trajectories through
every memory policy (open loop: the same steps for every arm, as on Synthetic Graph World episodes).

**The file** is JSON Lines (``.jsonl``, ``.ndjson``, ``.jsonl.gz``), one row per step, in the trace
schema's ``run`` / ``step`` columns plus what the agent saw and did::

    {"run": "ep-1", "step": 0, "state": "kitchen", "action": "open fridge", "observation": "kitchen"}
    {"run": "ep-1", "step": 1, "state": "kitchen", "action": "go north", "observation": "hall"}

* ``state`` (required): the state the agent was in at the step (a string or number);
* ``action`` (required): the action it took there;
* ``observation`` (required): the state the action led to (``s_{t+1}``, what the memory must predict);
* ``run`` (optional): the episode; rows without one are one episode. Episodes run in order of first
  appearance and each starts with an empty memory;
* ``step`` (optional): the order within the episode (file order when absent; two rows of one
  episode may not share a step).

Every episode needs at least two steps. The world the policies see is built from the file: its
states are the distinct states and observations (the label is the place name the encodings show),
each state's actions are the distinct actions taken there (in order of first appearance), and a
transition is a distinct (state, action, observation). The **oracle** row predicts, for each
(state, action), the observation seen most often *over the whole file* (ties: the first seen): the
recorded world's true probabilities are unknown, so its ceiling is the empirical one, which has seen
every episode, the future included. Errors name the file and line (exit 3).
"""

from __future__ import annotations

import dataclasses
import gzip
import itertools
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..common.errors import InputError
from ..world.arrays import TransitionArrays

__all__ = ["EPISODE_FIELDS", "RecordedEpisodes", "RecordedWorld", "read_episodes"]

EPISODE_FIELDS = ("state", "action", "observation")


@dataclasses.dataclass(frozen=True)
class RecordedGraph:
    family: str
    size: int


class RecordedWorld(TransitionArrays):
    """The world of a file of recorded episodes, with the attributes the memory policies read."""

    def __init__(self, states: list[str], actions: list[list[str]], triples: list[tuple[int, int, int]],
                 counts: list[int]):
        n = len(states)
        self.size = n
        self.graph = RecordedGraph(family="recorded", size=n)
        self.places = list(states)
        self.entities = [()] * n
        self.relations = [()] * n
        self.constraints = [()] * n
        vocab: dict[str, int] = {}
        self.word_mask = [sum(1 << vocab.setdefault(w, len(vocab)) for w in set(s.split())) for s in states]
        self.act_ptr = np.concatenate([[0], np.cumsum([len(a) for a in actions])]).astype(np.int64)
        self.action_names = [name for acts in actions for name in acts]
        order = sorted(range(len(triples)), key=lambda i: (self.act_ptr[triples[i][0]] + triples[i][1], i))
        src = np.array([triples[i][0] for i in order], dtype=np.int64)
        local = np.array([triples[i][1] for i in order], dtype=np.int64)
        self.tid_src, self.tid_local = src, local
        self.tid_dst = np.array([triples[i][2] for i in order], dtype=np.int64)
        self.tid_action = self.act_ptr[src] + local
        seen = np.array([counts[i] for i in order], dtype=np.float64)
        n_act = int(self.act_ptr[-1])
        self.out_ptr = np.searchsorted(self.tid_action, np.arange(n_act + 1)).astype(np.int64)
        totals = np.add.reduceat(seen, self.out_ptr[:-1]) if seen.size else seen
        self.tid_prob = seen / np.repeat(totals, np.diff(self.out_ptr))
        self.items = [f"s{s}-a{a}->s{d}" for s, a, d in zip(src.tolist(), local.tolist(), self.tid_dst.tolist(),
                                                             strict=True)]
        self.tid_of = {triples[i]: k for k, i in enumerate(order)}


@dataclasses.dataclass(frozen=True)
class RecordedEpisodes:
    """The file's world and, per episode (in order), its run id and transition ids."""

    path: str
    world: RecordedWorld
    runs: tuple[str, ...]
    tids: tuple[np.ndarray, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"episodes_from": self.path, "runs": list(self.runs), "steps": [int(t.size) for t in self.tids],
                "n_states": self.world.size, "n_transitions": self.world.n_transitions}


def _rows(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise InputError(f"{path}:{i}: not valid JSON ({exc.msg})") from None
                    if not isinstance(row, dict):
                        raise InputError(f"{path}:{i}: a row must be a JSON object")
                    yield i, row
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise InputError(f"{path}: cannot read recorded episodes ({type(exc).__name__}: {exc})") from None


def _label(path: Path, i: int, row: dict, key: str) -> str:
    v = row.get(key)
    if v is None or isinstance(v, (dict, list, bool)):
        raise InputError(f"{path}:{i}: {key!r} is required (a string or number), got {v!r}")
    return str(v)


@lru_cache(maxsize=8)
def _read(path_text: str, mtime_ns: int) -> RecordedEpisodes:
    path = Path(path_text)
    episodes: dict[str, list[tuple[Any, int, str, str, str]]] = {}
    for i, row in _rows(path):
        s, a, o = (_label(path, i, row, k) for k in EPISODE_FIELDS)
        step = row.get("step", len(episodes.get(str(row.get("run", "")), [])))
        if isinstance(step, bool) or not isinstance(step, int):
            raise InputError(f"{path}:{i}: 'step' must be an integer, got {step!r}")
        episodes.setdefault(str(row.get("run", "")), []).append((step, i, s, a, o))
    if not episodes:
        raise InputError(f"{path}: holds no recorded steps")
    state_id: dict[str, int] = {}
    actions: list[list[str]] = []
    action_id: list[dict[str, int]] = []
    triples: dict[tuple[int, int, int], int] = {}
    runs, paths = [], []
    for run, steps in episodes.items():
        steps.sort(key=lambda r: r[0])
        for (a, _, *_), (b, line, *_) in itertools.pairwise(steps):
            if a == b:
                raise InputError(f"{path}:{line}: step {b} of run {run!r} is recorded twice")
        if len(steps) < 2:
            raise InputError(f"{path}: run {run!r} has {len(steps)} step(s); an episode needs at least 2")
        keys = []
        for _, _, s, a, o in steps:
            for label in (s, o):
                if label not in state_id:
                    state_id[label] = len(state_id)
                    actions.append([])
                    action_id.append({})
            sv = state_id[s]
            if a not in action_id[sv]:
                action_id[sv][a] = len(actions[sv])
                actions[sv].append(a)
            key = (sv, action_id[sv][a], state_id[o])
            triples[key] = triples.get(key, 0) + 1
            keys.append(key)
        runs.append(run)
        paths.append(keys)
    states = list(state_id)
    world = RecordedWorld(states, actions, list(triples), list(triples.values()))
    tids = tuple(np.array([world.tid_of[k] for k in keys], dtype=np.int64) for keys in paths)
    return RecordedEpisodes(path=str(path), world=world, runs=tuple(runs), tids=tids)


def read_episodes(path: str | Path) -> RecordedEpisodes:
    """The recorded episodes of ``path`` (see the module docstring); cached while the file is unchanged."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"{p}: no such file (recorded episodes)")
    return _read(str(p.resolve()), p.stat().st_mtime_ns)
