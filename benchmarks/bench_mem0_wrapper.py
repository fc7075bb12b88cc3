"""What the Mem0 wrapper adds to Mem0's own calls, and what ctwm then says about the run.

    python benchmarks/bench_mem0_wrapper.py                  # 3 users, 60 memories each, 300 searches
    python benchmarks/bench_mem0_wrapper.py --searches 1000 --seed 3

A real ``mem0.Memory`` offline (``infer=False``, Qdrant local mode, MiniLM through Mem0's ``langchain``
embedder; needs the ``mem0`` extra). The same searches (Zipf-skewed topics, seeded) run on the bare
``Memory`` and on ``TracedMemory`` around it, in turn (A B, B A, ...), so drift in the machine's speed
hits both; printed: the median per-search time of each and the median of the per-round ratios. Then
``ctwm health --group-by user`` on the wrapper's trace: per-user store size, dead weight and stale hits.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TOPICS = ("tennis", "tea", "jazz", "hiking", "chess", "sushi", "python", "cats", "paris", "running", "opera",
          "cycling", "baking", "poetry", "sailing", "go", "ramen", "kayaks", "violin", "lisbon")
USERS = ("alice", "bob", "carol")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=60, help="memories per user")
    ap.add_argument("--searches", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ctwm-bench-mem0-"))
    os.environ.setdefault("MEM0_DIR", str(tmp / "home"))
    os.environ["MEM0_TELEMETRY"] = "False"
    from mem0 import Memory

    from ctwm_cli.cli import main as ctwm
    from ctwm_cli.integrations.mem0 import TracedMemory
    from ctwm_cli.integrations.minilm import DIMS, MiniLMEmbeddings

    memory = Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp / "q"), "embedding_model_dims": DIMS}},
        "embedder": {"provider": "langchain", "config": {"model": MiniLMEmbeddings()}},
        "llm": {"provider": "openai", "config": {"api_key": "never-used-with-infer-False"}},
        "history_db_path": str(tmp / "history.db"),
    })
    trace = tmp / "trace.jsonl"
    traced = TracedMemory(memory, trace)
    for u in USERS:
        for k in range(args.memories):
            traced.add(f"{u} likes {TOPICS[k % len(TOPICS)]} ({k})", user_id=u, infer=False)
    rng = np.random.default_rng(args.seed)
    w = 1.0 / np.arange(1, len(TOPICS) + 1) ** 1.1
    w /= w.sum()
    queries = [(USERS[rng.integers(3)], TOPICS[rng.choice(len(TOPICS), p=w)]) for _ in range(args.searches)]
    per = max(1, len(queries) // args.rounds)
    bare, wrapped, ratios = [], [], []
    for r in range(args.rounds):
        chunk = queries[r * per:(r + 1) * per]
        times = {}
        for name in (("bare", "traced") if r % 2 == 0 else ("traced", "bare")):  # which goes first alternates
            target = memory if name == "bare" else traced
            t0 = time.perf_counter()
            for u, topic in chunk:
                target.search(f"does {u} like {topic}?", filters={"user_id": u}, top_k=5)
            times[name] = (time.perf_counter() - t0) / len(chunk)
        times = [times["bare"], times["traced"]]
        bare.append(times[0])
        wrapped.append(times[1])
        ratios.append(times[1] / times[0])
    traced.close()
    print(f"seed {args.seed}; {len(USERS)} users x {args.memories} memories; {per * args.rounds} searches per arm",
          file=sys.stderr)
    print(f"per search: Memory {statistics.median(bare) * 1e3:.2f} ms, TracedMemory "
          f"{statistics.median(wrapped) * 1e3:.2f} ms; ratio (median of {args.rounds} rounds) "
          f"{statistics.median(ratios):.3f}")
    out = tmp / "health.json"
    old = sys.stdout
    with out.open("w") as fh:
        sys.stdout = fh
        try:
            ctwm(["health", str(trace), "--group-by", "user", "--json"])
        finally:
            sys.stdout = old
    for g in json.loads(out.read_text())["groups"]:
        s = g["summary"]
        print(f"{g['group']}: store {s['store_size']}, never retrieved {s['never_retrieved']} of {s['live']} "
              f"(dead_weight_share {s['dead_weight_share']:.3f}), stale_hit_share {s['stale_hit_share']}")


if __name__ == "__main__":
    main()
