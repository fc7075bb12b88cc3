"""``--cross-check powerlaw``: the package the paper used, beside ours, each disagreement with its cause."""

from __future__ import annotations

import numpy as np
import pytest

from ctwm_cli.tail import audit, sample_power_law

powerlaw_data = pytest.importorskip("powerlaw.data")


def test_a_steep_power_law_flags_powerlaws_capped_alpha():
    x = sample_power_law(3.5, 1.0, 5000, np.random.default_rng(2), True)
    r = audit(x, bootstrap=0, seed=1, cross_check="powerlaw")
    c = r.cross_check
    assert abs(r.power_law.alpha - 3.5) < 3 * r.power_law.alpha_se
    assert c.theirs["alpha"] <= 3.0 + 1e-9  # its default range [0, 3]
    flagged = {d.quantity: d.cause for d in c.disagreements}
    assert "alpha" in flagged and "[0, 3]" in flagged["alpha"]
    # with the cap and the approximation removed, its exact fit at our x_min agrees with ours
    assert c.theirs["alpha_reconciled"] == pytest.approx(r.power_law.alpha, abs=1e-3)
    assert r.to_dict()["cross_check"]["package"] == "powerlaw"


def test_unknown_package_is_a_usage_error():
    with pytest.raises(ValueError, match="cross_check must be one of powerlaw"):
        audit(np.arange(1.0, 300.0), bootstrap=0, cross_check="plfit")


@pytest.mark.slow
def test_moby_dick_word_counts_agree_on_xmin_and_alpha():
    # Clauset, Shalizi & Newman 2009, Table 6.1: words, x_min = 7, α = 1.95
    x = powerlaw_data.load_test_dataset("words")
    r = audit(x, bootstrap=0, seed=1, cross_check="powerlaw")
    c = r.cross_check
    assert r.power_law.xmin == c.theirs["xmin"] == 7
    assert r.power_law.alpha == pytest.approx(c.theirs["alpha"], abs=1e-3)
    assert r.power_law.alpha == pytest.approx(1.95, abs=0.01)
    assert not {d.quantity for d in c.disagreements} & {"xmin", "alpha"}
    # R and p differ (approximate vs exact discrete alternatives) and say why
    for d in c.disagreements:
        assert "normalisation" in d.cause
