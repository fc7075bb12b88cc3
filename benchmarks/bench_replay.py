"""Speed of the replay engine.

1. Steps per second of ``ctwm`` at a 512-token budget, with serialisation, exact token counting
   and the prompt-only reader (target: >= 2,000/s), per encoding; reference in the same run: the
   same replay with every whole prompt encoded as well (``verify_tokens``), i.e. what counting
   without the per-line cache costs.
2. Wall time of a full ``ctwm replay compare`` (full, flat, graph, ctwm x 3 seeds x 2,000 steps,
   1,000 bootstrap replicates, files written) (target: < 60 s), with the answerable metrics and the
   oracle/counts reference rows.
3. Closed loop: steps per second of ``ctwm`` driven by the offline ``reader`` agent (two prompts per
   step: the decision prompt and the prediction prompt), for scale.

    /work/venv/bin/python benchmarks/bench_replay.py [--steps 10000] [--size 500]
    /work/venv/bin/python benchmarks/bench_replay.py --against /work/main   # ratios against another checkout

``--against DIR`` runs parts 1 and 2 again with ``DIR``'s code (``PYTHONPATH=DIR``, a child process,
alternating with this checkout's) and prints this checkout's speed as a ratio of that one's: on a
shared, loaded machine a ratio measured in the same run is what can be compared, not a steps/s figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from ctwm_cli.memory.tokens import token_counter
from ctwm_cli.replay import ReplayConfig, episode, make_agent, replay_compare, run_episode
from ctwm_cli.replay.runner import Arm


def steps_per_second(cfg: ReplayConfig, arm: Arm, ep, repeats: int = 3) -> tuple[float, float]:
    """Best of ``repeats`` runs (the machine is shared: the best run is the least disturbed)."""
    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        log = run_episode(ep, arm, cfg)
        best = max(best, len(ep.tids) / (time.perf_counter() - started))
    return best, float(log.tokens.mean())


def quick(steps: int, size: int) -> dict:
    """Part 1 (compact, best of 3) and part 2 (wall) only, as numbers: what ``--against`` compares."""
    token_counter("cl100k_base")
    cfg = ReplayConfig(size=size, steps=steps, seeds=(1,), budget=512)
    fast, _ = steps_per_second(cfg, Arm(memory="ctwm", encoding="compact", tau=1.0), episode(cfg, 1))
    cfg = ReplayConfig(size=500, steps=2000, seeds=(42, 43, 44), bootstrap=1000)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        replay_compare(cfg, memories=("full", "flat", "graph", "ctwm"), out=f"{tmp}/run", seed=42)
        wall = time.perf_counter() - started
    return {"steps_per_s": fast, "compare_wall": wall}


def against(other: str, steps: int, size: int, rounds: int = 2) -> None:
    env_other = {**os.environ, "PYTHONPATH": other}
    env_here = {**os.environ, "PYTHONPATH": os.getcwd()}
    cmd = [sys.executable, __file__, "--quick", "--steps", str(steps), "--size", str(size)]
    got: dict[str, list[dict]] = {"here": [], "other": []}
    for _ in range(rounds):  # alternate, so both see the same load
        for key, env in (("here", env_here), ("other", env_other)):
            got[key].append(json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True,
                                                      check=True).stdout))
    here_sps = max(g["steps_per_s"] for g in got["here"])
    other_sps = max(g["steps_per_s"] for g in got["other"])
    here_wall = min(g["compare_wall"] for g in got["here"])
    other_wall = min(g["compare_wall"] for g in got["other"])
    print(f"against {other} ({rounds} alternating rounds, best of each):")
    print(f"   ctwm compact steps/s: here {here_sps:,.0f}, there {other_sps:,.0f} -> ratio {here_sps / other_sps:.2f}")
    print(f"   compare 4 x 3 x 2,000 wall: here {here_wall:.1f} s, there {other_wall:.1f} s -> ratio "
          f"{here_wall / other_wall:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10_000, help="steps of the single-episode measurement")
    ap.add_argument("--size", type=int, default=500)
    ap.add_argument("--against", metavar="DIR", help="also run parts 1-2 on DIR's code and print ratios")
    ap.add_argument("--quick", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        print(json.dumps(quick(args.steps, args.size)))
        return
    if args.against:
        against(args.against, args.steps, args.size)
        return
    token_counter("cl100k_base")  # load the vocabulary outside the timings
    print(f"1. ctwm steps/s at budget 512 (scale-free, |V|={args.size}, random walk, {args.steps:,} steps, "
          "cl100k_base)")
    cfg = ReplayConfig(size=args.size, steps=args.steps, seeds=(1,), budget=512)
    ep = episode(cfg, 1)
    for enc in ("compact", "verbose"):
        arm = Arm(memory="ctwm", encoding=enc, tau=1.0)
        fast, tok = steps_per_second(cfg, arm, ep)
        ref, _ = steps_per_second(ReplayConfig(size=args.size, steps=args.steps, seeds=(1,), budget=512,
                                               verify_tokens=True), arm, ep)
        print(f"   {enc:8s} {fast:9,.0f} steps/s  (mean prompt {tok:6.1f} tokens; target >= 2,000: "
              f"{'met' if fast >= 2000 else 'NOT met'})  reference with whole-prompt encoding: {ref:8,.0f} steps/s "
              f"-> per-line cache x{fast / ref:.2f}")
    print("2. ctwm replay compare: full, flat, graph, ctwm x 3 seeds x 2,000 steps (|V|=500, files written)")
    cfg = ReplayConfig(size=500, steps=2000, seeds=(42, 43, 44), bootstrap=1000)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        res = replay_compare(cfg, memories=("full", "flat", "graph", "ctwm"), out=f"{tmp}/run", seed=42)
        wall = time.perf_counter() - started
    print(f"   wall {wall:.1f} s (target < 60 s: {'met' if wall < 60 else 'NOT met'})")
    for a in res.arms:
        print(f"   {a.arm:22s} tokens/step {a.tokens_mean:9.1f}  tail error {a.tail_error:.3f}  "
              f"answerable tail error {a.answerable_tail_error:.3f}  evidence in prompt {a.evidence_in_prompt:.3f}")
    for r in res.references:
        print(f"   {r.name:22s} {'':20s}  tail error {r.tail_error:.3f}  answerable tail error "
              f"{r.answerable_tail_error:.3f}")
    print(f"3. closed loop: ctwm driven by the reader agent (|V|={args.size}, {args.steps:,} steps)")
    cfg = ReplayConfig(size=args.size, steps=args.steps, seeds=(1,), budget=512, agent="reader")
    ep = episode(cfg, 1)
    started = time.perf_counter()
    log = run_episode(ep, Arm(memory="ctwm", encoding="compact", tau=1.0), cfg, agent=make_agent("reader"))
    wall = time.perf_counter() - started
    print(f"   {args.steps / wall:9,.0f} steps/s; tasks reached {log.tasks_reached} of {log.tasks_started}")


if __name__ == "__main__":
    main()
