"""The CLI's one seed resolver: the seed given, or a fresh one drawn (:func:`ctwm_cli.common.seeds.new_seed`)
and printed on stderr, so the run can be repeated."""

from __future__ import annotations

from ..common.seeds import new_seed
from .output import announce_seed


def resolve_seed(seed: int | None) -> int:
    """``seed``, or a fresh seed announced as ``seed: N`` on stderr."""
    if seed is None:
        seed = new_seed()
        announce_seed(seed)
    return seed
