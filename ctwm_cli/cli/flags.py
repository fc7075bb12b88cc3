"""The one place that maps the library's parameter names to the CLI's flags.

Library errors name parameters as the library spells them (``input_format must be one of …``) and list
them in ``exc.params``; :func:`flag_message` rewrites those names into the flags the user typed
(``--input-format must be one of …``) before :func:`ctwm_cli.cli.main` prints the one-line error.
"""

from __future__ import annotations

import re

from ..errors import CtwmError

FLAGS: dict[str, str] = {
    "input_format": "--input-format",
    "base_url": "--base-url",
    "model": "--model",
    "out": "--out",
    "run": "--run",
    "tau": "--tau",
    "memory": "--memory",
    "baseline": "--baseline",
    "budget": "--budget",
    "family": "--family",
    "group_by": "--group-by",
    "size_col": "--size-col",
    "item_col": "--item-col",
    "series": "--series",
    "step_col": "--step-col",
    "run_col": "--run-col",
    "events": "--event",
    "band": "--band",
    "beta_band": "--beta-band",
    "sweep": "--sweep",
    "relax_tau": "--relax-tau",
    "memories": "--memory",
    "synthetic": "--synthetic",
    "bootstrap": "--bootstrap",
    "block": "--block",
    "level": "--level",
    "limit": "--limit",
    "relax_core": "--relax-core",
    "max_steps": "--max-steps",
    "n_ctx": "--n-ctx",
    "threads": "--threads",
    "agent": "--agent",
    "overwrite": "--overwrite",
    "resume": "--resume",
    "output": "-o/--output",
    "owners": "--owners",
    "window": "--window",
    "retriever": "--retriever",
    "policy": "--policy",
    "steps": "--steps",
    "k": "--k",
    "capacity": "--capacity",
    "core": "--core",
    "max_candidates": "--max-candidates",
    "engine": "--engine",
    "where": "--where",
    "ranking": "--ranking",
    "seed": "--seed",
    "jobs": "--jobs",
    "xmin": "--xmin",
    "xmax": "--xmax",
    "xmin_range": "--xmin-range",
    "min_tail": "--min-tail",
    "scan_floor": "--scan-floor",
    "p_star": "--p-star",
    "fit_level": "--fit-level",
    "z_star": "--z-star",
    "calibrate": "--calibrate",
    "power": "--power",
    "uncertainty": "--uncertainty",
    "cross_check": "--cross-check",
    "walk": "--walk",  # world options after the paper's code (issue 30)
    "order": "--order",
    "store": "--store",
    "preset": "--preset",
    "sigma": "--sigma",
    "tail_on": "--tail-on",  # replay options after the paper's code (issue 30)
    "flat_retrieval": "--flat-retrieval",
    "graph_retrieval": "--graph-retrieval",
    "ctwm_store": "--ctwm-store",
}


def flag_message(exc: CtwmError) -> str:
    """``str(exc)`` with each of ``exc.params`` replaced by its flag: whole words only, never inside a path
    or a quoted value (``out 'out': …`` -> ``--out 'out': …``)."""
    text = str(exc)
    for param in getattr(exc, "params", ()):
        flag = FLAGS.get(param)
        if flag is not None:
            text = re.sub(rf"(?<![\w./\x27\x22-]){re.escape(param)}(?![\w/\x27\x22-]|\.\w)", flag, text)
    return text
