"""One seed resolver (``ctwm_cli.common.seeds``, ``ctwm_cli.cli.seeding``): a fresh seed is drawn one way, printed,
and replays the run."""

from __future__ import annotations

import json
import re

from ctwm_cli.common.seeds import SEED_BITS, new_seed, resolve_seed


def test_fresh_seeds_are_31_bit_and_vary():
    drawn = {new_seed() for _ in range(64)}
    assert all(0 <= s < 2**SEED_BITS for s in drawn) and len(drawn) > 60
    assert resolve_seed(7) == 7 and resolve_seed(None) >= 0


def test_a_printed_seed_replays_the_run(run_cli):
    """Without --seed the command prints the seed it drew; --seed with it gives the same output."""
    args = ["xmin-path", "--sweep", "1:2:2", "--items", "200", "--events", "2000", "--replicates", "2", "--json"]
    first = run_cli(args)
    assert first.code == 0, first.err
    seed = int(re.fullmatch(r"seed: (\d+)", first.err.strip().splitlines()[0]).group(1))
    again = run_cli([*args, "--seed", str(seed)])
    assert again.code == 0 and json.loads(again.out) == json.loads(first.out)
