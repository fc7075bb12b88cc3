"""``AuditSettings.checked``: the audit's options validated once and normalised; ``audit_many(settings=)``
uses them as they are (the CLI no longer passes 18 arguments twice)."""

from __future__ import annotations

import numpy as np
import pytest

from ctwm_cli.common.errors import UsageError
from ctwm_cli.tail import audit_many
from ctwm_cli.tail.settings import AuditSettings

COUNTS = np.random.default_rng(4).zipf(2.1, 2500)


def test_checked_settings_give_the_same_audit_as_keywords():
    kw = {"bootstrap": 20, "min_tail": 50, "xmin_range": [2, 30], "seed": 11}
    s = AuditSettings.checked(**kw, jobs=1)
    assert s.xmin_range == (2, 30) and s.seed == 11 and s.bootstrap == 20
    by_settings = audit_many([COUNTS], settings=s, jobs=1)[0].to_dict()
    by_keywords = audit_many([COUNTS], jobs=1, **kw)[0].to_dict()
    by_settings.pop("timing", None), by_keywords.pop("timing", None)
    assert by_settings == by_keywords


def test_checked_draws_a_seed_and_names_bad_parameters():
    assert isinstance(AuditSettings.checked().seed, int)
    with pytest.raises(UsageError, match=r"^level must be in \(0, 0.5\), got 0.7$") as exc:
        AuditSettings.checked(level=0.7)
    assert exc.value.params == ("level",)
    with pytest.raises(UsageError, match=r"^jobs must be >= 1") as exc:
        AuditSettings.checked(jobs=0)
    assert exc.value.params == ("jobs",)


def test_settings_and_keywords_together_are_refused():
    with pytest.raises(UsageError, match="either as settings or as keywords") as exc:
        audit_many([COUNTS], settings=AuditSettings.checked(bootstrap=0), bootstrap=5)
    assert exc.value.params == ("settings",)
