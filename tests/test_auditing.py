"""``ctwm_cli.audit`` is the tail audit plus the concentration of the same counts, composed above both layers."""

from __future__ import annotations

import json

import numpy as np

import ctwm_cli
from ctwm_cli.diagnostics import concentration
from ctwm_cli.tail import audit as tail_audit


def test_the_composed_audit_is_the_tail_audit_plus_concentration():
    x = np.random.default_rng(5).zipf(2.1, 4000)
    alone = tail_audit(x, bootstrap=20, seed=3, jobs=1)
    both = ctwm_cli.audit(x, bootstrap=20, seed=3, jobs=1)
    assert alone.concentration is None
    assert both.concentration.to_dict() == concentration(x.astype(np.float64)).to_dict()
    assert {**alone.to_dict(), "concentration": both.concentration.to_dict()} == both.to_dict()
    # the JSON keeps the concentration where it was: after power_law_pass, before calibration
    keys = list(both.to_dict())
    assert keys.index("concentration") == keys.index("power_law_pass") + 1 == keys.index("calibration") - 1
    assert isinstance(both, type(alone)) and repr(both).startswith("AuditResult(")
    assert ctwm_cli.audit(x, bootstrap=0, seed=3, diagnostics=False).concentration is None


def test_groups_get_their_own_concentration():
    xs = [np.random.default_rng(s).zipf(2.3, 1500) for s in (1, 2)]
    many = ctwm_cli.audit_many(xs, labels=["a", "b"], bootstrap=0, seed=4)
    assert [r.concentration.gini for r in many] == [concentration(x.astype(float)).gini for x in xs]
    assert json.dumps([r.to_dict() for r in many])  # JSON-safe
