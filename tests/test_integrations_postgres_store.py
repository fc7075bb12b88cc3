"""The LangGraph workload on a real ``PostgresStore`` with TTL (issue 42), on a PostgreSQL cluster this test
starts in a temporary directory on 127.0.0.1 (Debian's postgresql 15 binaries; as root, the cluster runs as
``nobody`` through ``runuser``, since initdb refuses root). Skipped, with the reason, without them."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
from lifecycle_workload import as_seconds, differing, per_tenant_figures, run_workload

pytest.importorskip("langgraph.store.postgres", reason="needs langgraph-checkpoint-postgres and psycopg[binary]")

BIN = Path(os.environ.get("CTWM_PG_BIN", "/usr/lib/postgresql/15/bin"))
USERS = ("alice", "bob", "carol")


def _as_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: initdb refuses root")
    return ["runuser", "-u", "nobody", "--", *cmd]


@pytest.fixture(scope="module")
def postgres_url():
    if not (BIN / "initdb").exists() or not (BIN / "pg_ctl").exists():
        pytest.skip(f"no PostgreSQL binaries in {BIN} (set CTWM_PG_BIN)")
    root = Path(tempfile.mkdtemp(prefix="ctwm-pg-"))  # not under pytest's root-only tmp dir: nobody reads it
    try:
        yield from _cluster(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _cluster(root: Path):
    if os.geteuid() == 0:
        shutil.chown(root, "nobody")
        os.chmod(root, 0o700)
    data = root / "data"
    init = subprocess.run(_as_user([str(BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]),
                          capture_output=True, text=True)
    if init.returncode:
        pytest.skip(f"initdb failed: {init.stderr.strip().splitlines()[-1:]}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctl = [str(BIN / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w"]
    start = subprocess.run(_as_user([*ctl, "-o", f"-h 127.0.0.1 -p {port} -k {root} -F", "start"]),
                           capture_output=True, text=True)
    if start.returncode:
        pytest.skip(f"pg_ctl start failed: {start.stderr.strip()}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_user([*ctl, "-m", "fast", "stop"]), capture_output=True)


def test_postgres_store_ttl_workload_matches_the_stores_own_table(postgres_url, tmp_path, run_cli):
    from langgraph.store.postgres import PostgresStore

    from ctwm_cli.integrations.langgraph import TracedStore

    # refresh_on_read off: a refresh would use ttl_minutes, an INT column (a 2.5 s TTL refreshes to 0 minutes)
    ttl = {"default_ttl": 2.5 / 60, "refresh_on_read": False}
    with PostgresStore.from_conn_string(postgres_url, ttl=ttl) as inner:
        inner.setup()
        with inner.conn.cursor() as cur:
            cur.execute("DELETE FROM store")
        store = TracedStore(inner, tmp_path / "t.jsonl", scope_keys=("kind", "user"))

        def snapshot():
            with inner.conn.cursor() as cur:
                cur.execute("SELECT prefix, key, expires_at FROM store")
                return {(r["prefix"].split(".")[1], r["key"]): as_seconds(r["expires_at"]) for r in cur.fetchall()}

        truth = run_workload(store, snapshot, users=USERS, total_ops=300, ttl=3 / 60, gap=3.6, seed=17,
                             phase_seconds=0.6, phase_ops=75, sweep=inner.sweep_ttl)
    assert truth.ops == 300 and truth.phases >= 4
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert {"write", "update", "archive", "invalidate", "read", "search", "retrieve"} <= {r["event"] for r in rows}
    want = truth.figures()
    assert sum(f["stale_hits"] for f in want.values()) > 0
    res = run_cli(["health", tmp_path / "t.jsonl", "--group-by", "user", "--json"])
    assert res.code == 0, res.err
    assert differing(per_tenant_figures(json.loads(res.out)), want) == []
