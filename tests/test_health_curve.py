"""Success-vs-volume curve: the hinge fit recovers a known knee exactly."""

from __future__ import annotations

import numpy as np
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.health import success_volume_curve


def tent():
    """10 tasks at each volume 10..100; successes 2,4,..,10,8,..,0: piecewise linear, knee at 50."""
    volumes, outcomes = [], []
    for v, k in zip(range(10, 101, 10), [2, 4, 6, 8, 10, 8, 6, 4, 2, 0], strict=True):
        volumes += [v] * 10
        outcomes += [1] * k + [0] * (10 - k)
    return np.array(volumes, float), np.array(outcomes, float)


def test_knee_of_a_tent_is_found_exactly():
    v, y = tent()
    c = success_volume_curve(v, y)
    assert c.inflection_volume == 50
    assert c.slope_before == pytest.approx(0.02) and c.slope_after == pytest.approx(-0.02)
    assert c.success_rate == pytest.approx(0.5) and c.tasks == 100
    assert [b.success_rate for b in c.bins] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0, 0.8, 0.6, 0.4, 0.2, 0.0])
    assert 0 < c.improvement <= 1


def test_order_of_tasks_does_not_matter():
    v, y = tent()
    perm = np.random.default_rng(3).permutation(v.size)
    assert success_volume_curve(v[perm], y[perm]).to_dict() == success_volume_curve(v, y).to_dict()


def test_a_straight_line_gains_nothing_from_a_knee():
    v = np.repeat(np.arange(10, 110, 10), 10).astype(float)
    y = np.concatenate([[1] * k + [0] * (10 - k) for k in range(1, 11)]).astype(float)
    c = success_volume_curve(v, y)
    assert c.improvement == pytest.approx(0, abs=1e-9)
    assert c.slope_before == pytest.approx(c.slope_after)


def test_too_few_tasks_or_volumes():
    assert success_volume_curve([1, 2, 3], [1, 0, 1]).inflection_volume is None
    c = success_volume_curve([5] * 20, [1, 0] * 10)
    assert c.inflection_volume is None and "distinct volumes" in c.reason
    with pytest.raises(UsageError, match="0 \\(failure\\) or 1"):
        success_volume_curve([1, 2], [0.5, 1])
