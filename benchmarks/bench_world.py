"""Speed of the Synthetic Graph World.

1. Steps per second of random-walk + state-frequency at |V| = 1000 (target: >= 50,000/s), per
   family, against a naive reference in the same run: the same store and retriever written the
   plain way (dict of slots, a scan of every slot per retrieval and per eviction), on the same
   trajectory, checked to retrieve the same items.
2. Wall time of a reduced grid (6 families x 3 sizes x 1 seed x STEPS steps, --jobs 2), extrapolated
   linearly to the full 54 cells x 100,000 steps (target: < 5 minutes on 2 cores). ``--full`` runs the
   full grid instead.

The paper's reference point: its random-walk script needs about 5 s per 100,000 steps (20,000/s).

    /work/venv/bin/python benchmarks/bench_world.py [--steps 20000] [--full]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from ctwm_cli.world import WorldConfig, run_grid, simulate
from ctwm_cli.world.graphs import FAMILIES

PAPER_STEPS_PER_SECOND = 100_000 / 5.0


def naive_state_frequency(sim, capacity: int, k: int, steps: int) -> list[list[int]]:
    """Plain LFU store + state-aware frequency top-k, O(capacity) per step (no random tie-break
    needed for the comparison: ties in eviction are broken by the same uniform stream order)."""
    world = sim.world
    src, dst = world.tid_src, world.tid_dst
    gen = np.random.default_rng(np.random.SeedSequence(sim.config.seed).spawn(6)[4])
    u: list[float] = []
    pos = 0
    slots: dict[int, int] = {}  # tid -> freq, insertion-ordered
    order: dict[int, list[int]] = {}  # freq -> tids in bucket order (mirrors the fast store)
    out = []
    for t in sim.transitions[:steps].tolist():
        s = int(src[t])
        mates = [m for m in slots if src[m] == s or dst[m] == s]
        pool = mates if mates else list(slots)
        pool.sort(key=lambda m: (-slots[m], m))
        out.append(pool[:k])
        if t in slots:
            f = slots[t]
            _move(order, t, f, f + 1)
            slots[t] = f + 1
            continue
        if len(slots) >= capacity:
            fmin = min(slots.values())
            bucket = order[fmin]
            if pos == len(u):
                u, pos = gen.random(1 << 14).tolist(), 0
            victim = bucket[int(u[pos] * len(bucket))]
            pos += 1
            _move(order, victim, fmin, None)
            del slots[victim]
        slots[t] = 1
        order.setdefault(1, []).append(t)
    return out


def _move(order, tid, f_old, f_new):
    b = order[f_old]
    i = b.index(tid)
    last = b.pop()
    if last != tid:
        b[i] = last
    if not b:
        del order[f_old]
    if f_new is not None:
        order.setdefault(f_new, []).append(tid)


def bench_steps(steps: int) -> None:
    print(f"random-walk + state-frequency, |V| = 1000, {steps:,} steps, k = 3, capacity = 200")
    print(f"{'family':<20}{'steps/s':>12}{'s/100k':>9}{'vs paper':>10}{'vs naive':>10}")
    for family in FAMILIES:
        cfg = WorldConfig(family=family, size=1000, steps=steps, seed=42, retriever="state-frequency")
        sim = simulate(cfg)
        rate = steps / sim.seconds
        n_naive = min(steps, 20_000)
        t0 = time.perf_counter()
        ref = naive_state_frequency(sim, cfg.capacity, cfg.k, n_naive)
        naive_rate = n_naive / (time.perf_counter() - t0)
        early = sim.retrieved_step < n_naive
        fast = np.split(sim.retrieved[early], np.cumsum(np.bincount(sim.retrieved_step[early], minlength=n_naive))[:-1])
        same = all(list(a) == b for a, b in zip(fast, ref, strict=True))
        print(f"{family:<20}{rate:>12,.0f}{100_000 / rate:>9.2f}{rate / PAPER_STEPS_PER_SECOND:>9.1f}x"
              f"{rate / naive_rate:>9.1f}x{'' if same else '  (MISMATCH vs naive)'}")


def bench_grid(steps: int, full: bool) -> None:
    seeds = (42, 43, 44) if full else (42,)
    steps = 100_000 if full else steps
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        g = run_grid(tmp, seeds=seeds, base=WorldConfig(steps=steps), jobs=2)
        wall = time.perf_counter() - t0
    cells = len(g.cells)
    print(f"\ngrid: {cells} cells x {steps:,} steps, --jobs 2: {wall:.1f} s wall "
          f"({sum(c.seconds for c in g.cells):.1f} s of cell time)")
    if not full:
        est = wall * (54 / cells) * (100_000 / steps)
        print(f"extrapolated full grid (54 cells x 100,000 steps, linear in cells and steps, an upper bound "
              f"since per-cell fixed costs are scaled too): {est:.0f} s = {est / 60:.1f} min (target < 5 min)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100_000, help="steps for the steps/s measurement")
    ap.add_argument("--grid-steps", type=int, default=20_000, help="steps per cell of the reduced grid")
    ap.add_argument("--full", action="store_true", help="run the full 54-cell grid at 100,000 steps")
    args = ap.parse_args()
    print(f"paper reference: ~5 s per 100,000 random-walk steps = {PAPER_STEPS_PER_SECOND:,.0f} steps/s\n")
    bench_steps(args.steps)
    bench_grid(args.grid_steps, args.full)


if __name__ == "__main__":
    main()
