"""The paper's store-retention coverage beside ctwm's prompt coverage (issue 45)."""

from __future__ import annotations

import numpy as np
import pytest

from ctwm_cli.replay import ReplayConfig, replay_compare
from ctwm_cli.replay.runner import store_coverage


class _Held:
    def __init__(self, held):
        self.held = held

    def retained(self):
        return self.held


class _World:
    tid_src = np.array([0, 0, 1, 2, 3])
    tid_dst = np.array([1, 2, 2, 3, 0])


def test_store_coverage_is_the_codes_closed_form():
    """Walked tids 0,1,2,2,3 (states 0,0,1,2,2 -> {0,1,2}); held {0, 3}: transitions 2/4; states held as
    ends {0,1,2,3} ∩ {0,1,2} = 3/3. Held {4} (3 -> 0, never walked): states {0} of 3, transitions 0."""
    tids = np.array([0, 1, 2, 2, 3])
    assert store_coverage(_Held({0, 3}), _World, tids) == pytest.approx((1.0, 0.5))
    assert store_coverage(_Held({4}), _World, tids) == pytest.approx((1 / 3, 0.0))
    assert store_coverage(_Held(None), _World, tids) == (None, None)


def test_the_paper_coverage_and_the_prompt_coverage_are_both_reported_and_differ():
    """Under the preset the five-feature ctwm store holds 200 entries: it keeps fewer transitions than
    the walk made, while every store that never evicts keeps all; prompt coverage is a different figure."""
    cfg = ReplayConfig(preset="artifact", seeds=(1, 2), steps=600, bootstrap=0)
    arms = {a.memory: a for a in replay_compare(cfg, memories=("flat", "graph", "ctwm", "none"), baseline="graph",
                                                seed=1).arms}
    for m in ("flat", "graph"):
        assert arms[m].store_state_coverage == arms[m].store_transition_coverage == 1.0
    assert arms["none"].store_transition_coverage == 0.0
    assert arms["ctwm"].store_transition_coverage < 1.0 < arms["ctwm"].store_transition_coverage * 3
    assert arms["ctwm"].store_transition_coverage != pytest.approx(arms["ctwm"].transition_coverage, abs=0.01)
