"""Frozen-trajectory replay (paper Theorem A.7).

``frozen_replay(RUN_DIR, encoding)`` reads a replay's manifest and step log, rebuilds each seed's
world from the recorded configuration, and replays every recorded run along its recorded
state–action trajectory through the same deterministic retrieval map ρ, serialising under
``encoding``. It checks at every step that ρ returns exactly the recorded item ids (and that the
rebuilt world has the recorded transitions), and reports the replay loss beside the live loss.

Under the run's own encoding and the deterministic reader the replay reproduces the live losses
exactly. Under another encoding, any difference is the encoding's effect on what the reader sees
at a fixed trajectory (which items fit the budget, how they read); the retrieval is unchanged.

**Trajectory term** (Theorem A.7). When the directory also holds the *live* run of the same memory
policy, τ and seed under the replay encoding E2 (``ctwm replay`` records both encodings), the live
loss difference splits into ``L(E2 live) − L(E1 live) = [L(E2 live) − L(E2 on E1's trajectory)] +
[L(E2 on E1's trajectory) − L(E1 live)]``: the first bracket is ``trajectory_term`` (overall error;
``trajectory_term_tail`` on each trajectory's tail steps), the second the encoding term at a fixed
trajectory. In open loop the agent does not read the prompt, both live runs share one trajectory
and the trajectory term is exactly zero; in closed loop (``--agent reader`` or ``endpoint``) the
encodings drive different trajectories and it is not.

Across episodes the trajectory term varies (in closed loop it flips sign from seed to seed), so
``trajectory_terms`` summarises it per memory policy, τ and live encoding over the recorded episodes:
the mean and its Student-t interval over episodes at ``level`` (the episodes are independent: each
seed is its own world and environment), or why none is formed (fewer than two episodes, or the same
value in every episode).

A run recorded under ``match_tokens`` (``ctwm(tau=1)[<=graph]``) is replayed at the configured
budget: its retrieval is checked as for any run, but its tokens are not the matched ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from ..common.errors import InputError, UsageError
from ..common.results import ToDict, result
from ..memory.encodings import ENCODINGS
from ..memory.predictor import make_predictor
from ..memory.tokens import token_counter
from ..stats.intervals import ConfidenceInterval, confidence_interval
from .metrics import tail_steps
from .output import MANIFEST_FILE, STEPS_FILE, prepare_dir, write_outputs
from .runner import Arm, Episode, ReplayConfig, episode, run_episode


@result
class FrozenRow(ToDict):
    """One recorded run replayed under another encoding."""

    run: str
    memory: str
    tau: float | None
    seed: int
    live_encoding: str
    replay_encoding: str
    steps: int
    retrieval_identical: bool
    mismatched_steps: int
    first_mismatch: int | None
    live_tail_error: float | None
    replay_tail_error: float | None
    tail_error_difference: float | None  # replay - live
    live_overall_error: float
    replay_overall_error: float
    overall_error_difference: float
    max_step_loss_difference: int  # max over steps of |replay loss - live loss|
    live_tokens_mean: float
    replay_tokens_mean: float
    trajectory_run: str | None  # the live run under the replay encoding (same memory, τ, seed), if recorded
    trajectory_identical: bool | None  # its states equal the recorded run's
    trajectory_term: float | None  # its live overall error - the replay's overall error
    trajectory_term_tail: float | None


@result
class TrajectoryTerm(ToDict):
    """The trajectory term of one memory policy, τ and live encoding over the recorded episodes."""

    memory: str
    tau: float | None
    live_encoding: str
    replay_encoding: str
    episodes: int
    mean: float | None
    confidence_interval: ConfidenceInterval | None  # of mean; None unless formed
    tail_mean: float | None
    tail_confidence_interval: ConfidenceInterval | None
    level: float
    interval_status: str  # "formed (Student t over episodes)", or why not


@result
class FrozenReplay(ToDict):
    """``ctwm replay frozen`` result."""

    run_dir: str
    encoding: str
    results: tuple[FrozenRow, ...]  # one per recorded run
    trajectory_terms: tuple[TrajectoryTerm, ...]
    all_identical: bool
    tokenizer: str
    predictor: str
    out: str | None
    files: dict[str, str]


def _load(run_dir: Path) -> tuple[dict[str, Any], Any]:
    import pyarrow.parquet as pq

    mpath = run_dir / MANIFEST_FILE
    if not mpath.is_file():
        raise InputError(f"{run_dir}: no {MANIFEST_FILE} "
                         "(not a replay run directory; replay writes one into its output directory)")
    try:
        manifest = json.loads(mpath.read_text())
        manifest["config"]  # a replay manifest has one
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{mpath}: not a replay manifest (no 'config')") from None
    spath = run_dir / STEPS_FILE
    if not spath.is_file():
        raise InputError(f"{run_dir}: no {STEPS_FILE}")
    try:
        steps = pq.read_table(spath)
    except Exception as exc:
        raise InputError(f"{spath}: cannot read ({type(exc).__name__}: {exc})") from None
    need = {"run", "memory", "encoding", "tau", "seed", "step", "state", "action", "next_state", "item", "correct",
            "tail_state", "prompt_tokens", "retrieved"}
    missing = sorted(need - set(steps.column_names))
    if missing:
        raise InputError(f"{spath}: missing column(s) {', '.join(missing)}")
    return manifest, steps


def _entry_id(name: str) -> int:
    m = _ENTRY.match(name)
    if m is None:
        raise KeyError(name)
    return int(m.group(1))


_ENTRY = re.compile(r"[a-z]+(\d+):")


def _config(raw: dict[str, Any], predictor: str | None, predictor_params: dict[str, Any] | None) -> ReplayConfig:
    fields = {f for f in ReplayConfig.__dataclass_fields__}
    try:
        kw = {k: v for k, v in raw.items() if k in fields}
        kw["seeds"] = tuple(kw.get("seeds", (0,)))
        cfg = ReplayConfig(**kw)
    except TypeError as exc:
        raise InputError(f"replay manifest config does not fit this version: {exc}") from None
    if predictor is not None:
        cfg = ReplayConfig(**{**{f: getattr(cfg, f) for f in fields}, "predictor": predictor,
                              "predictor_params": dict(predictor_params or {})})
    return cfg.checked()


def frozen_replay(run_dir: str | Path, encoding: str, *, runs: Sequence[str] | None = None,
                  predictor: str | None = None, predictor_params: dict[str, Any] | None = None,
                  out: str | Path | None = None, overwrite: bool = False) -> FrozenReplay:
    """Replay the runs recorded in ``run_dir`` under ``encoding`` on their recorded trajectories."""
    if encoding not in ENCODINGS:
        raise UsageError(f"unknown encoding {encoding!r} (choose from: {', '.join(ENCODINGS)})", params=("encoding",))
    rd = Path(run_dir)
    manifest, steps = _load(rd)
    cfg = _config(manifest["config"], predictor, predictor_params)
    if out is not None and Path(out).resolve() == rd.resolve():  # before prepare_dir clears its files
        raise UsageError("out must not be the recorded run directory", params=("out",))
    outdir = prepare_dir(out, overwrite) if out is not None else None
    counter = token_counter(cfg.tokenizer)
    pred = make_predictor(cfg.predictor, cfg.predictor_params)
    cols = steps.to_pydict()
    by_run: dict[str, list[int]] = {}
    for i, r in enumerate(cols["run"]):
        by_run.setdefault(r, []).append(i)
    names = list(by_run)
    if runs:
        unknown = [r for r in runs if r not in by_run]
        if unknown:
            raise UsageError(f"run {unknown[0]!r} is not in {rd / STEPS_FILE} (runs: {', '.join(names)})",
                             params=("run",))
        names = list(dict.fromkeys(runs))
    worlds: dict[int, Any] = {}
    rows: list[FrozenRow] = []
    logs = []
    eps: list[Episode] = []
    tails: list[np.ndarray] = []
    for name in names:
        idx = by_run[name]
        idx = sorted(idx, key=lambda i: cols["step"][i])
        seed = int(cols["seed"][idx[0]])
        memory = cols["memory"][idx[0]]
        tau = cols["tau"][idx[0]]
        live_enc = cols["encoding"][idx[0]]
        if [cols["step"][i] for i in idx] != list(range(len(idx))):
            raise InputError(f"{rd / STEPS_FILE}: run {name} does not hold steps 0..{len(idx) - 1} once each")
        if seed not in worlds:
            worlds[seed] = episode(cfg, seed).world  # rebuilt from the recorded configuration and seed
        ep, recorded = _recorded_episode(cols, idx, name, memory, worlds[seed], seed, rd / STEPS_FILE)
        world = ep.world
        log = run_episode(ep, Arm(memory=memory, encoding=encoding, tau=tau), cfg, counter=counter, predictor=pred,
                          recorded=recorded)
        tail = tail_steps(ep.states, ep.next_states, world.size, cfg.tail_rule)
        live = np.asarray([cols["correct"][i] for i in idx], dtype=bool)
        live_tok = np.asarray([cols["prompt_tokens"][i] for i in idx], dtype=np.float64)
        lw, rw = ~live, ~log.correct
        lt = float(lw[tail].mean()) if tail.any() else None
        rt = float(rw[tail].mean()) if tail.any() else None
        traj = _trajectory_term(cols, by_run, idx, name, encoding, rw, rt)
        rows.append(FrozenRow(
            run=name, memory=memory, tau=tau, seed=seed, live_encoding=live_enc, replay_encoding=encoding,
            steps=len(idx), retrieval_identical=log.mismatches == 0, mismatched_steps=log.mismatches,
            first_mismatch=log.first_mismatch, live_tail_error=lt, replay_tail_error=rt,
            tail_error_difference=None if lt is None else rt - lt,
            live_overall_error=float(lw.mean()), replay_overall_error=float(rw.mean()),
            overall_error_difference=float(rw.mean() - lw.mean()),
            max_step_loss_difference=int(np.max(np.abs(rw.astype(int) - lw.astype(int)))),
            live_tokens_mean=float(live_tok.mean()), replay_tokens_mean=float(log.tokens.mean()), **traj,
        ))
        logs.append(log)
        eps.append(ep)
        tails.append(tail)
    files: dict[str, str] = {}
    if outdir is not None:
        files = write_outputs(outdir, "replay frozen", logs, eps, tails, {
            "config": cfg.to_dict(), "source": str(rd), "encoding": encoding,
            "tokenizer": {"name": counter.name, "package": counter.package}, "predictor": cfg.predictor,
        }, names=[f"{r.run}@{encoding}" for r in rows])
    return FrozenReplay(run_dir=str(rd), encoding=encoding, results=tuple(rows),
                        trajectory_terms=trajectory_terms(rows),
                        all_identical=all(r.retrieval_identical for r in rows), tokenizer=counter.name,
                        predictor=cfg.predictor, out=str(outdir) if outdir is not None else None, files=files)


def _t_interval(values: Sequence[float], level: float) -> tuple[float | None, float | None, float | None, str]:
    x = np.asarray(values, dtype=np.float64)
    if not x.size:
        return None, None, None, "not formed: no episode has a trajectory term"
    mean = float(x.mean())
    if x.size < 2:
        return mean, None, None, "not formable: 1 episode (an interval over episodes needs at least 2)"
    if np.all(x == x[0]):
        return mean, None, None, "not formed: the same value in every episode"
    half = float(student_t(x.size - 1).ppf(1 - (1 - level) / 2) * x.std(ddof=1) / np.sqrt(x.size))
    return mean, mean - half, mean + half, FORMED_T


FORMED_T = "formed (Student t over episodes)"


def trajectory_terms(rows: Sequence[FrozenRow], level: float = 0.95) -> tuple[TrajectoryTerm, ...]:
    """Per (memory, τ, live encoding): the trajectory term's mean over episodes with a t interval."""
    groups: dict[tuple, list[FrozenRow]] = {}
    for r in rows:
        if r.trajectory_term is not None:
            groups.setdefault((r.memory, r.tau, r.live_encoding, r.replay_encoding), []).append(r)
    out = []
    for (memory, tau, live, replay), got in groups.items():
        mean, lo, hi, status = _t_interval([r.trajectory_term for r in got], level)
        tails = [r.trajectory_term_tail for r in got if r.trajectory_term_tail is not None]
        tmean, tlo, thi, _ = _t_interval(tails, level)
        out.append(TrajectoryTerm(memory=memory, tau=tau, live_encoding=live, replay_encoding=replay,
                                  episodes=len(got), mean=mean, confidence_interval=confidence_interval(lo, hi, level),
                                  tail_mean=tmean, tail_confidence_interval=confidence_interval(tlo, thi, level),
                                  level=level, interval_status=status))
    return tuple(out)


def _recorded_episode(cols: dict[str, list], idx: list[int], name: str, memory: str, world: Any, seed: int,
                      path: Path) -> tuple[Episode, list[tuple[int, ...]]]:
    """Run ``name``'s recorded trajectory as an episode of the rebuilt world, and its recorded ρ per step."""
    tid_of = {item: t for t, item in enumerate(world.items)}
    try:
        tids = np.asarray([tid_of[cols["item"][i]] for i in idx], dtype=np.int64)
        if memory == "tiered":  # entries "<tier><id>:...": ids are fixed by the trajectory, not the encoding
            recorded = [tuple(_entry_id(x) for x in cols["retrieved"][i]) for i in idx]
        else:
            recorded = [tuple(tid_of[x] for x in cols["retrieved"][i]) for i in idx]
    except KeyError as exc:
        raise InputError(f"{path}: run {name} names transition {exc.args[0]} that the rebuilt world "
                         "does not have (different version or configuration)") from None
    states = np.asarray([cols["state"][i] for i in idx], dtype=np.int64)
    if not (np.array_equal(world.tid_src[tids], states)
            and np.array_equal(world.tid_dst[tids], np.asarray([cols["next_state"][i] for i in idx]))):
        raise InputError(f"{path}: run {name}'s states do not match its transitions in the rebuilt world")
    ep = Episode(seed=seed, world=world, tids=tids, states=world.tid_src[tids], actions=world.tid_local[tids],
                 next_states=world.tid_dst[tids])
    return ep, recorded


def _trajectory_term(cols: dict[str, list], by_run: dict[str, list[int]], idx: list[int], name: str, encoding: str,
                     replay_wrong: np.ndarray, replay_tail_error: float | None) -> dict[str, Any]:
    """The live run of the same memory, τ and seed under ``encoding`` and the trajectory term against it."""
    first = idx[0]
    key = (cols["memory"][first], cols["tau"][first], cols["seed"][first])
    other = next((r for r, ix in by_run.items() if r != name and cols["encoding"][ix[0]] == encoding
                  and (cols["memory"][ix[0]], cols["tau"][ix[0]], cols["seed"][ix[0]]) == key), None)
    if other is None:
        return {"trajectory_run": None, "trajectory_identical": None, "trajectory_term": None,
                "trajectory_term_tail": None}
    oix = sorted(by_run[other], key=lambda i: cols["step"][i])
    o_wrong = ~np.asarray([cols["correct"][i] for i in oix], dtype=bool)
    o_tail = np.asarray([cols["tail_state"][i] for i in oix], dtype=bool)
    same = [cols["state"][i] for i in oix] == [cols["state"][i] for i in idx]
    o_tail_err = float(o_wrong[o_tail].mean()) if o_tail.any() else None
    tail_term = None if o_tail_err is None or replay_tail_error is None else o_tail_err - replay_tail_error
    return {"trajectory_run": other, "trajectory_identical": bool(same),
            "trajectory_term": float(o_wrong.mean() - replay_wrong.mean()), "trajectory_term_tail": tail_term}
