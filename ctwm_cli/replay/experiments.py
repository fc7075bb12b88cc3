"""The replay experiments: encodings (``ctwm replay``), policies (``compare``, paper Table 3), the 2x2
ablation (``ablation``, Table 4), each optionally over a τ sweep (Section 5.6, on the episodes)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UsageError
from ..memory.policies import MEMORY_POLICIES
from ..memory.predictor import make_predictor
from ..memory.tokens import token_counter
from ..progress import ProgressCallback
from ..results import ToDict, result
from .metrics import ArmMetrics, PairedDelta, arm_metrics, paired_deltas, tail_states
from .output import prepare_dir, write_outputs
from .runner import Arm, Episode, EpisodeLog, ReplayConfig, episode, run_episode


@result
class TauRow(ToDict):
    """One τ of a sweep, measured on the episodes."""

    tau: float
    encoding: str
    tokens_mean: float
    tail_error: float | None
    overall_error: float
    items_in_prompt: float  # core lines per step
    items_summarised: float  # tail-summary entries per step
    tail_items: float  # tail items per step (listed or counted)
    state_coverage: float | None
    transition_coverage: float | None


@result
class ReplayResult(ToDict):
    """A replay experiment: pooled and per-seed metrics per arm, paired deltas, τ sweep, files."""

    command: str
    config: ReplayConfig
    arms: tuple[ArmMetrics, ...]
    per_seed: tuple[ArmMetrics, ...]
    comparisons: tuple[PairedDelta, ...]
    tau_sweep: tuple[TauRow, ...]
    tokenizer: str
    predictor: str
    bootstrap: dict[str, Any]
    out: str | None
    files: dict[str, str]
    predictor_stats: dict[str, Any]
    seconds: float


def parse_taus(spec: str | Sequence[float] | None) -> tuple[float, ...]:
    """``"1.0"``, ``"0.5,1,2"`` or ``"START:STOP:N"`` (N evenly spaced, inclusive) -> τ values."""
    from ..allocation.sweep import check_taus, parse_sweep

    if spec is None:
        return (1.0,)
    if not isinstance(spec, str):
        return check_taus(list(spec), "--tau")
    text = spec.strip()
    if ":" in text:
        return parse_sweep(text, "--tau")
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--tau expects a number, a comma list or START:STOP:N, got {spec!r}") from None
    return check_taus(values, "--tau")


def run_arms(cfg: ReplayConfig, arms: Sequence[Arm], comparisons: Sequence[tuple[int, int]], *, command: str,
             out: str | Path | None = None, overwrite: bool = False, seed: int | None = None,
             progress: ProgressCallback | None = None, manifest_extra: dict[str, Any] | None = None) -> ReplayResult:
    """Replay every arm on every seed's episode; metrics, paired deltas ``(treatment, baseline)``
    (indices into ``arms``) and, with several ctwm τ, the τ sweep. With ``out``, write the files."""
    cfg = cfg.checked()
    arms = [a.checked() for a in arms]
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise UsageError(f"the same arm is listed twice: {', '.join(names)}")
    outdir = prepare_dir(out, overwrite) if out is not None else None
    counter = token_counter(cfg.tokenizer)
    predictor = make_predictor(cfg.predictor, cfg.predictor_params)
    started = time.perf_counter()
    episodes: dict[int, Episode] = {}
    tails: dict[int, np.ndarray] = {}
    logs: dict[tuple[int, int], EpisodeLog] = {}
    total = len(cfg.seeds) * len(arms)
    done = 0
    for s in cfg.seeds:
        ep = episode(cfg, s)
        episodes[s] = ep
        tails[s] = tail_states(ep.states, ep.world.size)[ep.states]
        for i, arm in enumerate(arms):
            logs[(i, s)] = run_episode(ep, arm, cfg, counter=counter, predictor=predictor)
            done += 1
            if progress is not None:
                progress(done, total)
    tail_list = [tails[s] for s in cfg.seeds]
    pooled = tuple(arm_metrics([logs[(i, s)] for s in cfg.seeds], tail_list) for i in range(len(arms)))
    per_seed = tuple(arm_metrics([logs[(i, s)]], [tails[s]], seed=s) for i in range(len(arms)) for s in cfg.seeds)
    rng = np.random.default_rng(seed)
    comps: list[PairedDelta] = []
    for ti, bi in comparisons:
        comps.extend(paired_deltas([logs[(ti, s)] for s in cfg.seeds], [logs[(bi, s)] for s in cfg.seeds], tail_list,
                                   replicates=cfg.bootstrap, block=cfg.block, level=cfg.level, rng=rng))
    sweep = _sweep(arms, pooled)
    files: dict[str, str] = {}
    boot = {"replicates": cfg.bootstrap, "block": cfg.block, "level": cfg.level, "seed": seed,
            "method": "moving-block bootstrap over steps, stratified by seed, percentile interval"}
    if outdir is not None:
        manifest = {"config": cfg.to_dict(), "seed": seed, "arms": [a.to_dict() for a in arms],
                    "tokenizer": {"name": counter.name, "package": counter.package},
                    "predictor": cfg.predictor, "episodes": {
                        str(s): {"world_run": cfg.world_config(s).resolved().command(),
                                 "n_states": episodes[s].world.size,
                                 "n_transitions": episodes[s].world.n_transitions} for s in cfg.seeds},
                    "tail_states": "the floor(n/2) least visited of the n states visited at s_0..s_{T-1} "
                                   "(ties: smaller id)", **(manifest_extra or {})}
        keys = [(i, s) for i in range(len(arms)) for s in cfg.seeds]
        files = write_outputs(outdir, command, [logs[k] for k in keys], [episodes[s] for _, s in keys],
                              [tails[s] for _, s in keys], manifest)
    return ReplayResult(command=command, config=cfg, arms=pooled, per_seed=per_seed, comparisons=tuple(comps),
                        tau_sweep=sweep, tokenizer=counter.name, predictor=cfg.predictor, bootstrap=boot,
                        out=str(outdir) if outdir is not None else None, files=files,
                        predictor_stats=predictor.stats(), seconds=time.perf_counter() - started)


def _sweep(arms: Sequence[Arm], pooled: Sequence[ArmMetrics]) -> tuple[TauRow, ...]:
    ctwm = [(a, m) for a, m in zip(arms, pooled, strict=True) if a.memory == "ctwm"]
    if len({a.tau for a, _ in ctwm}) < 2:
        return ()
    rows = [TauRow(tau=a.tau, encoding=a.encoding, tokens_mean=m.tokens_mean, tail_error=m.tail_error,
                   overall_error=m.overall_error, items_in_prompt=m.items_injected,
                   items_summarised=m.items_summarised, tail_items=m.tail_items, state_coverage=m.state_coverage,
                   transition_coverage=m.transition_coverage) for a, m in ctwm]
    return tuple(sorted(rows, key=lambda r: (r.encoding, r.tau)))


def _arm_list(memory: str, encodings: Sequence[str], taus: Sequence[float]) -> list[Arm]:
    if memory == "ctwm":
        return [Arm(memory=memory, encoding=e, tau=t) for e in encodings for t in taus]
    return [Arm(memory=memory, encoding=e) for e in encodings]


def replay_encodings(cfg: ReplayConfig, *, memory: str = "ctwm", taus: Sequence[float] = (1.0,),
                     **kw: Any) -> ReplayResult:
    """Verbose vs compact for one memory policy on the same episodes (``ctwm replay``)."""
    if memory not in MEMORY_POLICIES:
        raise UsageError(f"unknown memory policy {memory!r} (choose from: {', '.join(MEMORY_POLICIES)})")
    taus = tuple(taus) if memory == "ctwm" else (1.0,)
    arms = []
    comps = []
    for t in taus:
        i = len(arms)
        arms += [Arm(memory=memory, encoding="verbose", tau=t if memory == "ctwm" else None),
                 Arm(memory=memory, encoding="compact", tau=t if memory == "ctwm" else None)]
        comps.append((i + 1, i))
    return run_arms(cfg, arms, comps, command="replay", **kw)


def replay_compare(cfg: ReplayConfig, *, memories: Sequence[str] = MEMORY_POLICIES, encoding: str = "compact",
                   baseline: str | None = "graph", taus: Sequence[float] = (1.0,), **kw: Any) -> ReplayResult:
    """Memory policies on the same episodes (``ctwm replay compare``, paper Table 3); paired deltas
    of every policy against ``baseline``."""
    mems = list(dict.fromkeys(memories))
    if not mems:
        raise UsageError("--memory needs at least one policy")
    for m in mems:
        if m not in MEMORY_POLICIES:
            raise UsageError(f"unknown memory policy {m!r} (choose from: {', '.join(MEMORY_POLICIES)})")
    if baseline is not None and baseline not in mems:
        raise UsageError(f"--baseline {baseline} is not among --memory {','.join(mems)}")
    arms: list[Arm] = []
    for m in mems:
        arms += _arm_list(m, [encoding], taus)
    comps = []
    if baseline is not None:
        b = next(i for i, a in enumerate(arms) if a.memory == baseline)
        comps = [(i, b) for i in range(len(arms)) if i != b]
    return run_arms(cfg, arms, comps, command="replay compare", **kw)


def replay_ablation(cfg: ReplayConfig, *, taus: Sequence[float] = (1.0,), **kw: Any) -> ReplayResult:
    """The 2x2 of paper Table 4: {verbose, compact} x {graph, ctwm}; paired deltas of every cell
    against graph/verbose, of ctwm against graph within each encoding (allocation effect) and of
    compact against verbose within each policy (encoding effect)."""
    arms = [Arm(memory="graph", encoding="verbose"), Arm(memory="graph", encoding="compact")]
    comps = [(1, 0)]
    for t in taus:
        i = len(arms)
        arms += [Arm(memory="ctwm", encoding="verbose", tau=t), Arm(memory="ctwm", encoding="compact", tau=t)]
        comps += [(i, 0), (i + 1, 0), (i + 1, 1), (i + 1, i)]
    return run_arms(cfg, arms, comps, command="replay ablation", **kw)
