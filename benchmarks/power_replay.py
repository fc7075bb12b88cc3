"""How much can a replay run detect? Planted differences measured over repeated runs.

    python benchmarks/power_replay.py memory-off --episodes 12 --reps 20   # closed loop, ~5 min
    python benchmarks/power_replay.py topk1 --episodes 12 --reps 10        # closed loop, graph k=1 vs k=5
    python benchmarks/power_replay.py persist --reps 200                   # false positives, synthetic
    python benchmarks/power_replay.py pool --pool 240 --subsamples 300      # power at 20/30/40/60 episodes

``pool``: memory off vs Graph Memory in closed loop (as ``memory-off``), but each episode seed is run
once per arm into a pool (``--pool`` seeds 1, 2, ...; each pair of logs pickled under ``--out`` as it
finishes, so a rerun resumes); then, for each size E in ``--sizes``, ``--subsamples`` sets of E episodes
are drawn from the pool with replacement (fresh runs from the pool's empirical law: the power estimate) and
without (the pool itself, conditional: with E a large share of the pool the subsample means vary less than
fresh runs would, which flatters the power) (generator seeded by ``--seed``) and tested by the replay's own
paired test (``paired_deltas``: the cluster bootstrap over episodes for ``tasks_per_episode``, B =
``--bootstrap``): power = share whose ``none − graph`` interval lies below 0, with its Wilson interval over
subsamples (the Monte Carlo error of the subsampling; the pool's own sampling error is not in it, and a
size close to the pool's overlaps heavily). Sizes above the pool are reported as not formed.

``memory-off``: ``ctwm replay compare --agent reader --memory graph,none`` on the default world
(scale-free, |V| = 500, 2,000 steps per episode), ``--reps`` independent runs (seeds 1000·r ...); the
share of runs whose ``none − graph`` interval of ``tasks_per_episode`` lies below 0 (memory off
detected, right sign), with its Wilson 95% interval, and the same for answerable tail error regret.
This is the measurement behind the closed-loop default of ``--episodes``.

``topk1``: Graph Memory with top-k = 1 against top-k = 5 (the default) in closed loop, each arm on its
own trajectory: the share of runs where the answerable-tail-error *regret* difference is significant
and positive (k = 1 is worse, the right sign), beside the share where the *raw* error difference
says k = 1 is better (the wrong sign that raw closed-loop errors gave).

``persist``: a synthetic loss difference with mean 0 that persists for 200 steps (the sign of the
difference drawn afresh every 200 steps), 2,000-step episodes: the false-positive rate of the 95%
interval with a fixed 50-step block, the Politis–White block, and the Student-t cluster bootstrap
over episodes, at 3, 5 and 12 episodes.

Every number is reproducible from the seeds printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from ctwm_cli.replay import Arm, ReplayConfig, episode, paired_deltas, replay_compare, run_episode, tail_states
from ctwm_cli.replay.agents import make_agent
from ctwm_cli.replay.metrics import REGRET
from ctwm_cli.stats.blocklength import politis_white_block
from ctwm_cli.stats.intervals import wilson_interval
from ctwm_cli.stats.paired import BlockResample, EpisodeResample, paired_delta


def _rate(hits: int, n: int) -> str:
    lo, hi = wilson_interval(hits, n)
    return f"{hits}/{n} = {hits / n:.2f} [{lo:.2f}, {hi:.2f}]"


def _d(d) -> str:
    """A delta with its interval, or why it has none."""
    if d.confidence_interval is None:
        return f"{d.delta:+.4f} ({d.interval_status})"
    return f"{d.delta:+.4f} [{d.confidence_interval.low:+.4f}, {d.confidence_interval.high:+.4f}]"


def _above(d) -> bool:
    """The interval lies above zero."""
    return d.confidence_interval is not None and d.confidence_interval.low > 0


def _below(d) -> bool:
    """The interval lies below zero."""
    return d.confidence_interval is not None and d.confidence_interval.high < 0


def memory_off(args) -> None:
    detect = err = 0
    for r in range(args.reps):
        seed = 1000 * r + args.seed
        cfg = ReplayConfig(agent="reader", steps=args.steps, seeds=tuple(seed + i for i in range(args.episodes)),
                           bootstrap=args.bootstrap)
        res = replay_compare(cfg, memories=("graph", "none"), baseline="graph", seed=seed)
        d = {c.metric: c for c in res.comparisons}
        t = d["tasks_per_episode"]
        e = d[f"answerable_tail_error{REGRET}"]
        detect += _below(t)
        err += _above(e)
        print(f"run {r} (seeds {seed}..{seed + args.episodes - 1}): tasks/episode none {t.treatment_value:.2f} graph "
              f"{t.baseline_value:.2f} delta {_d(t)} mde {t.mde:.3g} ± {t.mde_mc_error:.2g}; answerable tail error "
              f"regret {_d(e)}", flush=True)
    print(f"memory off detected by tasks/episode (interval below 0): {_rate(detect, args.reps)}")
    print(f"memory off detected by answerable tail error regret (interval above 0): {_rate(err, args.reps)}")


def topk1(args) -> None:
    metrics = ("answerable_tail_error", "answerable_overall_error")
    right = dict.fromkeys(metrics, 0)
    wrong_raw = dict.fromkeys(metrics, 0)
    agent = make_agent("reader", {})
    for r in range(args.reps):
        seed = 1000 * r + args.seed
        cfg = ReplayConfig(agent="reader", steps=args.steps, seeds=tuple(seed + i for i in range(args.episodes)),
                           bootstrap=args.bootstrap).checked()
        small = dataclasses.replace(cfg, k=1)
        arm = Arm(memory="graph", encoding="compact")
        logs = {}
        for name, c in (("k5", cfg), ("k1", small)):
            logs[name] = []
            for s in cfg.seeds:
                ep = episode(c, s)
                g = run_episode(ep, arm, c, agent=agent)
                g.tail = tail_states(g.states, ep.world.size)[g.states]
                logs[name].append(g)
        rng = np.random.default_rng(seed)
        kw = dict(replicates=cfg.bootstrap, block="auto", level=0.95, rng=rng, metrics=metrics)
        reg = paired_deltas(logs["k1"], logs["k5"], None, regret=True, **kw)
        raw = paired_deltas(logs["k1"], logs["k5"], None, regret=False, **kw)
        for m, g, w in zip(metrics, reg, raw, strict=True):
            right[m] += _above(g)
            wrong_raw[m] += _below(w)
            print(f"run {r} {m}: regret delta {_d(g)}; raw delta {_d(w)}", flush=True)
    for m in metrics:
        print(f"{m}: k=1 worse by regret (right sign, significant): {_rate(right[m], args.reps)}; "
              f"k=1 'better' by raw error (wrong sign, significant): {_rate(wrong_raw[m], args.reps)}")


def _persistent(rng: np.random.Generator, n: int = 2000, run: int = 200, p: float = 0.3, d: float = 0.1):
    """Two arms' losses whose difference has mean 0 but keeps its sign for ``run`` steps."""
    reg = (np.arange(n) + rng.integers(run)) // run
    sign = rng.choice([-1, 1], size=int(reg.max()) + 1)[reg]
    return (rng.random(n) < p + d * sign).astype(float), (rng.random(n) < p - d * sign).astype(float)


def persist(args) -> None:
    rng = np.random.default_rng(args.seed)
    for e in (3, 5, 12):
        for how in ("block 50", "block auto", "episodes"):
            hits = 0
            for _ in range(args.reps):
                eps = [_persistent(rng) for _ in range(e)]
                a, b = np.concatenate([x[0] for x in eps]), np.concatenate([x[1] for x in eps])
                if how == "episodes":
                    res = EpisodeResample([2000] * e, args.bootstrap, rng)
                else:
                    size = 50 if how == "block 50" else politis_white_block([x[0] - x[1] for x in eps]).block
                    res = BlockResample([2000] * e, size, args.bootstrap, rng)
                one = np.ones(a.size)
                d = paired_delta((a, one), (b, one), res, level=0.95, treatment="a", baseline="b", metric="m")
                hits += _above(d) or _below(d)
            print(f"{e} episodes, {how}: false positives {_rate(hits, args.reps)}" if res.status == "formed"
                  else f"{e} episodes, {how}: {res.status}", flush=True)


def _pool_logs(args) -> list[tuple[int, list]]:
    """Run (or read back) the pool: per seed, the logs of the graph and none arms in closed loop."""
    import pickle
    from pathlib import Path

    from ctwm_cli.memory.predictor import make_predictor
    from ctwm_cli.memory.tokens import token_counter
    from ctwm_cli.replay.experiments import check_arms, replay_logs

    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    base = ReplayConfig(agent="reader", steps=args.steps, seeds=(1,), bootstrap=args.bootstrap).checked()
    arms = check_arms(base, [Arm(memory="graph", encoding="compact"), Arm(memory="none", encoding="compact")])
    counter, predictor = token_counter(base.tokenizer), make_predictor(base.predictor, base.predictor_params)
    agent = make_agent(base.agent, base.agent_params)
    out = []
    for s in range(1, args.pool + 1):
        f = folder / f"seed{s:04d}_steps{args.steps}.pkl"
        if f.exists():
            out.append((s, pickle.loads(f.read_bytes())))
            continue
        if args.minutes is not None and time.perf_counter() - started > 60 * args.minutes:
            continue
        t0 = time.perf_counter()
        cfg = dataclasses.replace(base, seeds=(s,))
        _eps, logs = replay_logs(cfg, arms, counter=counter, predictor=predictor, agent=agent)
        pair = [logs[(0, s)], logs[(1, s)]]
        f.write_bytes(pickle.dumps(pair))
        out.append((s, pair))
        print(f"  pool seed {s} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return out


def pool(args) -> None:
    import json
    from pathlib import Path

    from ctwm_cli.replay.metrics import arm_metrics

    logs = _pool_logs(args)
    k = len(logs)
    graph, none = [p[0] for _s, p in logs], [p[1] for _s, p in logs]
    tg = [arm_metrics([g]).tasks_per_episode for g in graph]
    tn = [arm_metrics([g]).tasks_per_episode for g in none]
    eff = float(np.mean(tn) - np.mean(tg))
    sd = float(np.std(np.subtract(tn, tg), ddof=1)) if k > 1 else float("nan")
    print(f"pool: {k} episodes per arm (seeds {[s for s, _ in logs][:3]}...), tasks/episode none {np.mean(tn):.3f} "
          f"graph {np.mean(tg):.3f}, effect {eff:+.3f} (sd of the paired difference {sd:.3f})")
    rng = np.random.default_rng(args.seed)
    rows = []
    for e in args.sizes:
        for replace in (True, False):
            how = "with replacement" if replace else "without replacement"
            if e > k and not replace:
                print(f"{e} episodes, {how}: not formed (pool of {k})")
                rows.append({"episodes": e, "draw": how, "status": f"not formed: pool of {k}"})
                continue
            hits = 0
            for _ in range(args.subsamples):
                pick = rng.choice(k, size=e, replace=replace)
                d = paired_deltas([none[i] for i in pick], [graph[i] for i in pick], None, replicates=args.bootstrap,
                                  block="auto", level=0.95, rng=rng, metrics=("tasks_per_episode",), regret=True)[0]
                hits += _below(d)
            lo, hi = wilson_interval(hits, args.subsamples)
            rows.append({"episodes": e, "draw": how, "detected": hits, "subsamples": args.subsamples,
                         "power": hits / args.subsamples, "wilson95": [lo, hi], "share_of_pool": e / k})
            print(f"{e} episodes, {how}: memory off detected {_rate(hits, args.subsamples)} ({e}/{k} of the pool)",
                  flush=True)
    res = {"study": "closed-loop power by episode subsampling (issue 45 item 4)", "pool_episodes": k,
           "steps": args.steps, "bootstrap": args.bootstrap, "subsamples": args.subsamples, "seed": args.seed,
           "effect_tasks_per_episode": eff, "sd_paired_difference": sd, "rows": rows}
    stem = Path(args.out)
    stem.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    md = [f"pool {k} episodes per arm, {args.steps} steps, B = {args.bootstrap}, {args.subsamples} subsamples, "
          f"seed {args.seed}; effect none − graph {eff:+.3f} tasks/episode", "",
          "| episodes | draw from the pool | memory off detected (power) |", "|---|---|---|"]
    md += [f"| {r['episodes']} | {r['draw']} | "
           f"{_rate(r['detected'], r['subsamples']) if 'detected' in r else r['status']} |" for r in rows]
    stem.with_suffix(".md").write_text("\n".join(md) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", choices=("memory-off", "topk1", "persist", "pool"))
    ap.add_argument("--episodes", type=int, default=12)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--bootstrap", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pool", type=int, default=60, help="pool: episode seeds 1..POOL, each run once per arm")
    ap.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=[20, 30, 40, 60])
    ap.add_argument("--subsamples", type=int, default=400)
    ap.add_argument("--minutes", type=float, default=None, help="pool: start no new episode after this long")
    ap.add_argument("--out", default="benchmarks/results/power_pool", help="pool: folder of the pickled logs "
                    "(and OUT.json / OUT.md, the summary)")
    args = ap.parse_args()
    started = time.perf_counter()
    print(f"study {args.study}, seed {args.seed}, episodes {args.episodes} x {args.steps} steps, reps {args.reps}")
    {"memory-off": memory_off, "topk1": topk1, "persist": persist, "pool": pool}[args.study](args)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
