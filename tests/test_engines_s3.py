"""s3:// traces through an fsspec filesystem registered with DuckDB, against a real S3 API (moto in
server mode on 127.0.0.1), credentials and endpoint from the environment. Skipped without the s3 extra."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from ctwm_cli.common.errors import InputError  # noqa: E402
from ctwm_cli.traces import item_counts, open_trace, scan_trace  # noqa: E402
from ctwm_cli.traces.readers import TornLineWarning  # noqa: E402

ROWS = {"a": ["x", "y", "x", "z"], "b": ["x", "x", "w"]}


@pytest.fixture(scope="module")
def s3_endpoint():
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("FSSPEC_S3_ENDPOINT_URL", s3_endpoint)  # fsspec reads FSSPEC_<PROTOCOL>_<KWARG>
    import fsspec.config

    monkeypatch.setattr(fsspec.config, "conf", {})
    fsspec.config.set_conf_env(fsspec.config.conf)
    s3 = boto3.client("s3", endpoint_url=s3_endpoint)
    name = f"traces-{len(s3.list_buckets()['Buckets'])}"
    s3.create_bucket(Bucket=name)
    for run, items in ROWS.items():
        buf = io.BytesIO()
        pq.write_table(pa.table({"item": items, "step": list(range(len(items)))}), buf)
        s3.put_object(Bucket=name, Key=f"ds/run={run}/part-0.parquet", Body=buf.getvalue())
    s3.put_object(Bucket=name, Key="ds/_SUCCESS", Body=b"")
    s3.put_object(Bucket=name, Key="log.jsonl",
                  Body=b'{"item": "a"}\n{"item": "b"}\n{"item": "a", "step": \n{"item": "c"}\n')
    s3.put_object(Bucket=name, Key="torn.jsonl", Body=b'{"item": "a"}\n{"item": "b"}\n{"item": "a", "step": ')
    return name


def test_partitioned_dataset_on_s3(bucket):
    scan = scan_trace(open_trace(f"s3://{bucket}/ds"), group_by="run")
    assert scan.n_rows == 7 and scan.format == "parquet-dataset"
    got = {c.group: dict(zip(c.items.to_pylist(), c.counts.tolist(), strict=True)) for c in item_counts(scan)}
    assert got == {run: dict(Counter(items)) for run, items in ROWS.items()}


def test_s3_glob_and_jsonl_errors_name_the_line(bucket):
    scan = scan_trace(open_trace(f"s3://{bucket}/ds/*/*.parquet"))
    assert scan.n_rows == 7 and scan.runs == 2
    with pytest.raises(InputError, match=rf"s3://{bucket}/log\.jsonl: line 3: malformed JSON"):
        scan_trace(open_trace(f"s3://{bucket}/log.jsonl"))
    with pytest.warns(TornLineWarning, match=rf"s3://{bucket}/torn\.jsonl: line 3: incomplete final line"):
        assert scan_trace(open_trace(f"s3://{bucket}/torn.jsonl")).n_rows == 2  # a torn last line is named (issue 25)
    with pytest.raises(InputError, match="no such file or directory"):
        open_trace(f"s3://{bucket}/missing.parquet")


def test_cli_audit_reads_s3(bucket, run_cli):
    res = run_cli(["inspect", f"s3://{bucket}/ds", "--json"])
    assert res.code == 0, res.err
    (doc,) = json.loads(res.out)["results"]
    assert (doc["n_rows"], doc["runs"], doc["n_items"]) == (7, 2, 4)
