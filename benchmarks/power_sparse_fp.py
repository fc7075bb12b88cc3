"""False positives of the replay's intervals on a sparse persistent difference planted in its own logs.

A pool of Graph Memory logs is replayed once (``ctwm replay compare`` internals, open loop, the default
world at ``--size``, ``--steps`` per episode). Each repetition draws ``--episodes`` of them and builds a
treatment that differs from them only at a few answerable tail steps, with a sign that persists for
``--run`` steps: in a "+" window a correct prediction becomes wrong with probability ``p``, in a "-"
window a wrong one becomes right with probability ``p * acc / (1 - acc)`` (``acc`` the pool's accuracy
on those steps), so the expected difference is 0 at every step — a true null whose dependence outlasts
what a lag-1 autocorrelation shows. The study prints, per headline error metric and per resampling
(``--resample auto``, the default: whole episodes from 5 on; and ``steps``, the circular block
bootstrap), the share of 95% intervals that exclude 0 (false positives) with a Wilson interval, and
how often ``block_capped`` warned under ``steps``. It also checks that no formed interval excludes its
own estimate.

Reduced (a few minutes on a shared machine)::

    nice -n 10 python benchmarks/power_sparse_fp.py --pool 12 --episodes 5 --reps 100 --size 100 --steps 2000

Full size (issue 45's case; about an hour)::

    python benchmarks/power_sparse_fp.py --pool 60 --episodes 5 --reps 1000 --size 500 --steps 2000
    python benchmarks/power_sparse_fp.py --pool 60 --episodes 12 --reps 1000 --size 500 --steps 2000

Every number is reproducible from ``--seed``.
"""

from __future__ import annotations

import argparse
import copy

import numpy as np

from ctwm_cli.replay import Arm, ReplayConfig, episode, paired_deltas, run_episode, tail_steps
from ctwm_cli.replay.metrics import ERROR_METRICS
from ctwm_cli.stats.intervals import wilson_interval


def _rate(hits: int, n: int) -> str:
    lo, hi = wilson_interval(hits, n)
    return f"{hits}/{n} = {100 * hits / max(n, 1):.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def pool_logs(size: int, steps: int, n: int, seed: int) -> list:
    cfg = ReplayConfig(size=size, steps=steps, seeds=tuple(range(seed, seed + n))).checked()
    arm = Arm(memory="graph", encoding="compact")
    out = []
    for s in cfg.seeds:
        ep = episode(cfg, s)
        g = run_episode(ep, arm, cfg)
        g.tail = tail_steps(g.states, ep.world.tid_dst[g.tids], ep.world.size, cfg.tail_rule)
        out.append(g)
    return out


def plant(log, rng: np.random.Generator, *, run: int, p: float, acc: float):
    """A copy of ``log`` whose correctness differs at answerable tail steps, sign persisting ``run`` steps."""
    t = copy.copy(log)
    n = log.correct.size
    window = (np.arange(n) + rng.integers(run)) // run
    sign = rng.choice([-1, 1], size=int(window.max()) + 1)[window]
    at = log.transition_evidence & log.tail
    u = rng.random(n)
    c = log.correct.copy()
    c[at & (sign > 0) & c & (u < p)] = False
    c[at & (sign < 0) & ~log.correct & (u < p * acc / (1 - acc))] = True
    t.correct = c
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", type=int, default=12, help="episodes replayed once (drawn from in every repetition)")
    ap.add_argument("--episodes", type=int, default=5, help="episodes per repetition")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--run", type=int, default=200, help="steps the planted sign persists")
    ap.add_argument("--p", type=float, default=0.1,
                    help="share of the correct answerable tail steps made wrong in a '+' window (at most (1-acc)/acc)")
    ap.add_argument("--bootstrap", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    logs = pool_logs(args.size, args.steps, args.pool, args.seed)
    at = np.concatenate([g.transition_evidence & g.tail for g in logs])
    acc = float(np.concatenate([g.correct for g in logs])[at].mean())
    if args.p * acc / (1 - acc) > 1:
        raise SystemExit(f"--p {args.p} cannot be balanced: a '-' window would need to right "
                         f"{args.p * acc / (1 - acc):.2f} of the wrong steps (use --p <= {(1 - acc) / acc:.3f})")
    print(f"pool: {args.pool} graph episodes x {args.steps} steps, |V|={args.size}; accuracy on answerable tail "
          f"steps {acc:.3f}; {args.reps} repetitions of {args.episodes} episodes; sign persists {args.run} steps; "
          f"p={args.p}; B={args.bootstrap}; seed {args.seed}", flush=True)
    rng = np.random.default_rng(args.seed)
    fp = {(m, r): 0 for m in ERROR_METRICS for r in ("auto", "steps")}
    formed = dict.fromkeys(fp, 0)
    capped = dict.fromkeys(ERROR_METRICS, 0)
    off = 0
    resample_auto = "episodes" if args.episodes >= 5 else "steps"
    for _ in range(args.reps):
        pick = rng.choice(len(logs), size=args.episodes, replace=False)
        base = [logs[i] for i in pick]
        treat = [plant(g, rng, run=args.run, p=args.p, acc=acc) for g in base]
        for r, how in (("auto", resample_auto), ("steps", "steps")):
            for d in paired_deltas(treat, base, None, replicates=args.bootstrap, block="auto", level=0.95, rng=rng,
                                   metrics=ERROR_METRICS, resample=how):
                ci = d.confidence_interval
                if ci is None:
                    continue
                formed[d.metric, r] += 1
                fp[d.metric, r] += ci.low > 0 or ci.high < 0
                off += not ci.low <= d.delta <= ci.high
                if r == "steps":
                    capped[d.metric] += bool(d.block_capped)
    for m in ERROR_METRICS:
        print(f"{m}: false positives, auto ({resample_auto}) {_rate(fp[m, 'auto'], formed[m, 'auto'])}; "
              f"steps (circular blocks) {_rate(fp[m, 'steps'], formed[m, 'steps'])}; "
              f"block_capped warned {_rate(capped[m], formed[m, 'steps'])}", flush=True)
    print(f"formed intervals excluding their estimate: {off}")


if __name__ == "__main__":
    main()
