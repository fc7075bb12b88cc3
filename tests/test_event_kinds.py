"""One check of ``events`` for every reader (``traces.aggregate.event_kinds``): ``read_trace`` (notebook) and
``read_counts`` (CLI) accept and reject the same values."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctwm_cli.api import read_trace
from ctwm_cli.common.errors import UsageError
from ctwm_cli.traces.paths import read_counts

TRACE = str(Path(__file__).resolve().parents[1] / "sample_traces" / "lognormal_events.parquet")


@pytest.mark.parametrize("events", ["write", ["write"], ("retrieve", "write"), None, []])
def test_the_notebook_and_the_cli_readers_count_the_same_events(events):
    via_api = read_trace(TRACE, events=events)[0]
    via_cli = read_counts([TRACE], events=events)[0]
    assert via_api.n_events == via_cli.n_events and via_api.events == via_cli.events
    assert (via_api.counts == via_cli.counts).all()


@pytest.mark.parametrize("events", [[""], ["retrieve", 3], [None]])
def test_both_readers_reject_the_same_bad_events(events):
    for read in (lambda: read_trace(TRACE, events=events), lambda: read_counts([TRACE], events=events)):
        with pytest.raises(UsageError, match=r"^events must be event kinds") as exc:
            read()
        assert exc.value.params == ("events",)
