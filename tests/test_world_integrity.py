"""World grids owned while they run (issue 25): a directory lock, no deleting or writing through a
symbolic link, corrupt or foreign manifests and full disks as exit 3 — real processes, a real tmpfs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GRID = ["world", "grid", "--family", "uniform", "--size", "100", "--replicates", "2", "--steps", "300",
        "--seed", "7", "--jobs", "1"]
ROOT = str(Path(__file__).resolve().parents[1])


@pytest.fixture
def grid(tmp_path, run_cli):
    out = tmp_path / "g"
    res = run_cli([*GRID, "--out", str(out)])
    assert res.code == 0, res.err
    return out


_HOLDER = """
    import sys
    from pathlib import Path
    from ctwm_cli.runtime.files import dir_lock
    with dir_lock(Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.readline()
"""


def test_a_second_run_on_a_locked_grid_exits_3_naming_the_holder(grid, run_cli):
    before = sorted(p.relative_to(grid) for p in grid.rglob("*"))
    with subprocess.Popen([sys.executable, "-c", textwrap.dedent(_HOLDER), str(grid)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT}) as holder:
        assert holder.stdout.readline().strip() == "held"
        for flag in ("--resume", "--overwrite"):
            res = run_cli([*GRID, "--out", str(grid), flag])
            assert res.code == 3
            assert f"another ctwm (pid {holder.pid}) is writing this directory" in res.err
        holder.stdin.write("\n")
        holder.stdin.flush()
    assert sorted(p.relative_to(grid) for p in grid.rglob("*")) == before  # nothing deleted meanwhile
    assert run_cli([*GRID, "--out", str(grid), "--resume"]).code == 0  # the lock went with its holder


def test_overwrite_never_deletes_through_a_symlink(grid, tmp_path, run_cli):
    victim = tmp_path / "elsewhere" / "size=100" / "seed=1"
    victim.mkdir(parents=True)
    (victim / "part-0.parquet").write_bytes(b"not ours")
    (grid / "family=modular").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    res = run_cli([*GRID, "--out", str(grid), "--overwrite"])  # the grid's own cells: family=uniform
    assert res.code == 0, res.err
    assert (victim / "part-0.parquet").read_bytes() == b"not ours"
    # a cell directory that is a link out of --out is refused before anything is written
    seed = grid / "family=uniform" / "size=100" / "seed=7"
    shutil.rmtree(seed)
    seed.symlink_to(victim, target_is_directory=True)
    res = run_cli([*GRID, "--out", str(grid), "--overwrite"])
    assert res.code == 3
    assert "family=uniform/size=100/seed=7 is or passes through a symbolic link" in res.err
    assert (victim / "part-0.parquet").read_bytes() == b"not ours"


CORRUPT = [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "not a JSON object (a list)"),
    (b'{"tool": "other", "command": "world grid", "cells": []}', "not a ctwm world grid manifest"),
    (b'{"tool": "ctwm", "command": "world grid", "cells": {"a": 1}}', "its cells are not a list"),
    (b'{"tool": "ctwm", "command": "world grid", "cells": [3]}', "cell 0 is not an object"),
    (b'{"tool": "ctwm", "command": "world grid", "cells": [{"family": "uniform"}]}',
     "cell 0: field 'size' is missing or not a int"),
]


@pytest.mark.parametrize(("text", "why"), CORRUPT, ids=[w for _, w in CORRUPT])
def test_a_corrupt_or_foreign_manifest_is_exit_3_with_the_reason(grid, run_cli, text, why):
    (grid / "_manifest.json").write_bytes(text)
    res = run_cli([*GRID, "--out", str(grid), "--resume"])
    assert res.code == 3, res.err
    assert why in res.err and "_manifest.json" in res.err and "Traceback" not in res.err


def test_a_manifest_cell_pointing_outside_the_grid_is_refused(grid, run_cli):
    man = json.loads((grid / "_manifest.json").read_text())
    man["cells"][0]["file"] = "../../etc/passwd"
    (grid / "_manifest.json").write_text(json.dumps(man))
    res = run_cli([*GRID, "--out", str(grid), "--resume"])
    assert res.code == 3 and "is outside the grid" in res.err


def test_resume_reads_a_manifest_written_before_n_rows(grid, run_cli):
    """A manifest of before issue 24 names each cell's count ``rows``: resume still verifies and reuses every
    cell, with its count, and writes the manifest back as ``n_rows``."""
    man = json.loads((grid / "_manifest.json").read_text())
    counts = [c["n_rows"] for c in man["cells"]]
    assert len(counts) == 2 and all(n > 0 for n in counts)
    for c in man["cells"]:
        c["rows"] = c.pop("n_rows")
    (grid / "_manifest.json").write_text(json.dumps(man))
    res = run_cli([*GRID, "--out", str(grid), "--resume", "--json"])
    assert res.code == 0, res.err
    cells = json.loads(res.out)["cells"]
    assert [c["reused"] for c in cells] == [True, True] and [c["n_rows"] for c in cells] == counts
    again = json.loads((grid / "_manifest.json").read_text())["cells"]
    assert [c["n_rows"] for c in again] == counts and not any("rows" in c for c in again)


_FULL = """
    import subprocess, sys
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", sys.argv[1]], check=True)
    from ctwm_cli.cli import main
    code = main(sys.argv[2:])
    print("exit", code)
"""


@pytest.mark.parametrize("command", ["run", "grid"])
def test_a_full_disk_is_exit_3(tmp_path, command):
    flags = ["--user", "--map-root-user", "--mount"]
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed")
    probe = subprocess.run(["unshare", *flags, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare {' '.join(flags)} is not permitted here: {probe.stderr.strip()}")
    args = ["world", "run", "--steps", "30000", "--seed", "3"] if command == "run" else [
        "world", "grid", "--family", "uniform", "--size", "100", "--replicates", "3", "--steps", "10000",
        "--seed", "3", "--jobs", "1"]
    res = subprocess.run(["unshare", *flags, sys.executable, "-c", textwrap.dedent(_FULL), str(tmp_path),
                          *args, "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert res.stdout.strip().endswith("exit 3"), res.stdout + res.stderr
    assert "No space left on device" in res.stderr and "Traceback" not in res.stderr
