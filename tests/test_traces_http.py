"""An http(s) trace typed on the command line reads (it used to be opened as ``http://http://...``), against
a real HTTP server on 127.0.0.1 (``http.server`` in a thread, with byte ranges so Parquet can be read)."""

from __future__ import annotations

import io
import json
import re
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("aiohttp")  # fsspec's HTTP filesystem

from ctwm_cli.traces.sources import resolve

SEED = 20261204


class _RangeHandler(SimpleHTTPRequestHandler):
    """A static file server that honours ``Range: bytes=a-b`` (Parquet's footer is read by range)."""

    def log_message(self, *args):
        pass

    def send_head(self):
        rng = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")
        if m is None:
            return super().send_head()
        path = self.translate_path(self.path)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            self.send_error(404)
            return None
        lo = int(m.group(1))
        hi = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {lo}-{hi}/{len(data)}")
        self.send_header("Content-Length", str(hi - lo + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        return io.BytesIO(data[lo:hi + 1])


@pytest.fixture
def served(tmp_path):
    """(base URL, folder): the folder's files served on 127.0.0.1; a Zipf trace in CSV and Parquet."""
    rng = np.random.default_rng(SEED)
    items = [f"i{v}" for v in rng.zipf(1.8, size=3000)]
    (tmp_path / "x.csv").write_text("item\n" + "\n".join(items) + "\n")
    pq.write_table(pa.table({"item": items}), tmp_path / "x.parquet")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), partial(_RangeHandler, directory=str(tmp_path)))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", tmp_path
    finally:
        srv.shutdown()
        srv.server_close()


def test_an_http_url_resolves_to_itself_not_a_doubled_scheme(served):
    base, _ = served
    layout = resolve(f"{base}/x.csv")
    assert layout.files == (f"{base}/x.csv",)
    assert layout.format == "csv"


@pytest.mark.parametrize("name", ["x.csv", "x.parquet"])
def test_audit_reads_an_http_trace_like_the_same_local_file(served, run_cli, name):
    base, folder = served
    remote = run_cli(["audit", f"{base}/{name}", "-b", "0", "--seed", "1", "--json"])
    assert remote.code == 0, remote.err
    local = run_cli(["audit", folder / name, "-b", "0", "--seed", "1", "--json"])
    assert local.code == 0, local.err
    got, want = json.loads(remote.out)["results"][0], json.loads(local.out)["results"][0]
    assert got.pop("source") == f"{base}/{name}"
    want.pop("source")
    assert got.pop("summary").replace(f"{base}/{name}", "TRACE") == want.pop("summary").replace(str(folder / name),
                                                                                                 "TRACE")
    assert got == want  # the same counts, fits and verdict as reading the file itself


def test_a_missing_http_file_is_one_line_input_error(served, run_cli):
    base, _ = served
    res = run_cli(["audit", f"{base}/nope.csv", "-b", "0"])
    assert res.code == 3
    assert res.err.count("\n") == 1 and "nope.csv" in res.err and "Traceback" not in res.err


def test_a_server_without_byte_ranges_gives_a_one_line_error_with_no_python_in_it(tmp_path, run_cli):
    """Python's plain http.server ignores Range, so Parquet's footer cannot be read: DuckDB's message is then the
    traceback of fsspec's callback, and the error must carry its last line, not "Traceback (most recent ...)"."""
    items = [f"i{v}" for v in np.random.default_rng(SEED).zipf(1.8, size=500)]
    pq.write_table(pa.table({"item": items}), tmp_path / "x.parquet")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        res = run_cli(["audit", f"http://127.0.0.1:{srv.server_address[1]}/x.parquet", "-b", "0"])
    finally:
        srv.shutdown()
        srv.server_close()
    if res.code == 0:
        pytest.skip("this fsspec reads Parquet without ranges")
    assert res.code == 3 and res.err.count("\n") == 1, res.err
    assert "Traceback" not in res.err and "x.parquet" in res.err


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
