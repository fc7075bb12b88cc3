"""Fresh seeds: the one place a seed is drawn when the caller gives none.

Every stochastic result records the seed it used, so any run can be repeated; the CLI prints it. A
seed is drawn from the operating system's entropy (``os.urandom``, what ``secrets`` reads, without
loading its OpenSSL bindings at every start), 31 bits so that it is a valid seed for
every consumer (numpy, Python's ``random``, TextWorld, a JSON integer anywhere). No numpy import: the
CLI draws seeds before it loads the library.
"""

from __future__ import annotations

import os

SEED_BITS = 31


def new_seed() -> int:
    """A fresh seed in [0, 2**31)."""
    return int.from_bytes(os.urandom(4), "big") >> (32 - SEED_BITS)


def resolve_seed(seed: int | None) -> int:
    """``seed`` as an int, or a fresh one when it is ``None``."""
    return new_seed() if seed is None else int(seed)
