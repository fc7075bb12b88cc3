"""--fail-on parsing and evaluation."""

from __future__ import annotations

import pytest

from ctwm_cli.errors import UsageError
from ctwm_cli.health import METRICS, evaluate_checks, parse_check


@pytest.mark.parametrize(
    ("spec", "op", "value"),
    [("stale_hit_share>0.05", ">", 0.05), ("maintenance_ratio >= 0.1", ">=", 0.1), ("store_size<=1e3", "<=", 1000.0),
     ("net_new_per_task<-1", "<", -1.0)],
)
def test_parse(spec, op, value):
    c = parse_check(spec, list(METRICS))
    assert (c.op, c.value) == (op, value)


@pytest.mark.parametrize(
    ("spec", "match"),
    [("stale_hit_share", "expects METRIC>VALUE"), ("nope>1", "unknown metric 'nope'"),
     ("store_size>abc", "'abc' is not a number"), ("store_size>inf", "must be finite"), ("store_size=3", "expects")],
)
def test_parse_errors(spec, match):
    with pytest.raises(UsageError, match=match):
        parse_check(spec, list(METRICS))


def test_evaluate():
    m = {"a": 0.2, "b": None, "c": 5.0}
    checks = [parse_check(s, ["a", "b", "c"]) for s in ("a>0.1", "a<0.1", "b>0", "c>=5", "c<=4")]
    out = evaluate_checks(checks, m)
    assert [o.failed for o in out] == [True, False, False, True, False]
    assert out[2].note == "metric not available"
    assert out[0].note == "a = 0.2 > 0.1"
