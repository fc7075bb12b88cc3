"""Write the Mem0 examples in this directory with a real Mem0 run offline (needs ``pip install 'ctwm[mem0]'``).

    python sample_traces/telemetry/generate_mem0.py

A real ``mem0.Memory`` (mem0ai) with ``infer=False`` (no LLM call), Qdrant in local mode in a temporary
directory, the MiniLM ONNX model through Mem0's ``langchain`` embedder provider and a dummy OpenAI key
(Mem0 builds an OpenAI client even with ``infer=False``; it is never called), wrapped in
:class:`ctwm_cli.integrations.mem0.TracedMemory`. Alice adds three memories and Bob (with the agent
``planner``) one; Alice edits one, one of hers gets an expiry in the past, one is deleted; searches
before and after. Written:

* ``mem0_history.json``  Mem0's own ``history()`` of every memory (what its ``history.db`` holds: no
                         owner, no search; an UPDATE with unchanged text for the expiry)
* ``mem0_get_all.json``  ``get_all(show_expired=True)`` of both users (owners, expiry; the deleted
                         memory is gone)
* ``mem0_trace.jsonl``   the wrapper's trace of the same run (searches, owners, the expiry)

Memory ids (uuid4) and times are Mem0's, so a rerun writes different ids and times with the same
structure; the tests check the structure.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ctwm-mem0-"))
    os.environ.setdefault("MEM0_DIR", str(tmp / "home"))
    os.environ["MEM0_TELEMETRY"] = "False"
    from mem0 import Memory

    from ctwm_cli.integrations.mem0 import TracedMemory
    from ctwm_cli.integrations.minilm import DIMS, MiniLMEmbeddings
    from ctwm_cli.memory.tokens import count_tokens

    memory = Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp / "qdrant"), "collection_name": "sample",
                                                          "embedding_model_dims": DIMS}},
        "embedder": {"provider": "langchain", "config": {"model": MiniLMEmbeddings()}},
        "llm": {"provider": "openai", "config": {"api_key": "never-used-with-infer-False"}},
        "history_db_path": str(tmp / "history.db"),
    })
    trace = HERE / "mem0_trace.jsonl"
    trace.unlink(missing_ok=True)
    m = TracedMemory(memory, trace, count_tokens=count_tokens)

    def add(text, **who):
        return m.add(text, infer=False, **who)["results"][0]["id"]

    tea = add("Likes green tea", user_id="alice")
    lyon = add("Lives in Lyon", user_id="alice")
    dog = add("Has a dog named Rex", user_id="alice")
    add("Works on the billing service", user_id="bob", agent_id="planner")
    m.search("what does alice drink?", filters={"user_id": "alice"}, top_k=2)
    m.search("where does bob work?", filters={"user_id": "bob"}, top_k=2)
    m.update(tea, text="Likes oolong tea")
    m.update(lyon, expiration_date="2020-01-01")  # in the past: hidden from now on
    m.delete(dog)
    m.search("where does alice live?", filters={"user_id": "alice"}, top_k=2)
    m.close()
    ids = [r["item"] for r in map(json.loads, trace.read_text().splitlines()) if r["event"] == "write"]
    history = sorted((h for mid in ids for h in memory.history(mid)), key=lambda h: (h["updated_at"], h["event"]))
    everything = [r for u in ("alice", "bob")
                  for r in memory.get_all(filters={"user_id": u}, show_expired=True)["results"]]
    (HERE / "mem0_history.json").write_text(json.dumps(history, indent=1) + "\n")
    (HERE / "mem0_get_all.json").write_text(json.dumps({"results": everything}, indent=1) + "\n")
    memory.close()
    print(f"mem0_history.json: {len(history)} rows; mem0_get_all.json: {len(everything)} memories; "
          f"mem0_trace.jsonl: {len(trace.read_text().splitlines())} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
