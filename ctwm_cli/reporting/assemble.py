"""``ctwm report``'s assembly: which section each source gets, in order, and the rendered page (the package's
docstring says what the page holds)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..allocation import parse_sweep
from ..baseline import parse_tolerances, saved_result
from ..common.errors import UsageError
from ..common.seeds import new_seed
from ..traces.engine import ReadOptions, as_read_options
from .diff import diff_section
from .grid import grid_manifest, grid_section
from .model import Report, Section
from .page import render
from .replay import find_result, replay_manifest, replay_section
from .trace import trace_section

#: τ sweep of the allocation view (paper Section 5.6's range, as ``ctwm simulate --sweep 0.25:2:7``)
DEFAULT_SWEEP = "0.25:2:7"


def _kind(source: str) -> str:
    p = Path(source)
    if p.is_dir():
        if grid_manifest(p) is not None:
            return "grid"
        if replay_manifest(p) is not None:
            return "replay-dir"
        return "trace"
    if p.suffix.lower() == ".json" and p.is_file() and looks_like_replay_result(p):
        return "replay"
    return "trace"  # any format ctwm audit reads (OTLP JSON spans and Mem0 exports among them)


def looks_like_replay_result(path: Path) -> bool:
    """The JSON a replay command printed: its envelope names the command within the first few hundred bytes."""
    with open(path, "rb") as fh:
        head = fh.read(1024)
    return re.search(rb'"command"\s*:\s*"replay( |")', head) is not None


def _diff_page(paths: list[str], read: ReadOptions, *, events, tol, bootstrap: int, level: float,
               seed: int | None, title: str | None, say: Callable[[str], None]) -> Report:
    if len(paths) != 2:
        raise UsageError(f"a diff page compares two sources, BASE and HEAD; got {len(paths)}", params=("sources",))
    traces = all(saved_result(p) is None for p in paths)
    if traces:
        seed = new_seed() if seed is None else int(seed)
        say(f"seed: {seed}")
    else:
        seed = None
    say(f"diff {paths[0]} -> {paths[1]}")
    section = diff_section(paths[0], paths[1], read, key="s0", tolerances=parse_tolerances(tol), events=events,
                           bootstrap=bootstrap, level=level, seed=seed)
    page = Report(title=title or f"ctwm report --diff: {Path(paths[0]).name} → {Path(paths[1]).name}", seed=seed,
                  sections=(section,))
    say("rendering the page")
    return dataclasses.replace(page, html=render(page))


def report(
    sources: str | Path | Sequence[str | Path],
    *,
    read: ReadOptions | None = None,
    group_by: str | None = None,
    events: Sequence[str] | None = None,
    objects: str | None = None,
    budget: int | None = None,
    bootstrap: int = 1000,
    seed: int | None = None,
    jobs: int | None = None,
    sweep: str | Sequence[float] | None = DEFAULT_SWEEP,
    core: int = 10,
    slots: int = 512,
    psd_run: str | None = None,
    title: str | None = None,
    stage: Callable[[str], None] | None = None,
    diff: bool = False,
    tol: Mapping[str, float] | Sequence[str] | None = None,
    diff_bootstrap: int = 200,
    level: float = 0.95,
) -> Report:
    """One page for ``sources`` (traces, ``world grid`` directories, replay results or run directories).

    ``read`` (column map, ``where``, engine), ``group_by``, ``events``, ``objects`` and ``budget`` (prompt tokens,
    for memory health) are those of ``ctwm audit`` / ``ctwm health``; ``bootstrap`` and ``seed`` those of the audit
    (``seed=None`` draws one, recorded on the page); ``sweep`` the τ values of the allocation view (``START:STOP:N``
    or a list; ``None`` leaves the view out) with ``core`` K and ``slots`` B of ``ctwm simulate``. ``stage`` is called
    with a line of text as each part starts (the CLI prints it on stderr). The page is ``result.html``.

    ``diff=True``: the pull-request page of ``sources`` = (BASE, HEAD), two saved results or two traces, gated as
    ``ctwm diff`` gates them (``tol``: ``{metric: allowance}`` or ``METRIC=VALUE`` strings; ``diff_bootstrap``
    replicates and ``level`` of the traces' intervals and permutation test).
    """
    paths = [str(sources)] if isinstance(sources, (str, Path)) else [str(s) for s in sources]
    if not paths:
        raise UsageError("give at least one source", params=("sources",))
    if "-" in paths:
        raise UsageError("a report reads each trace several times (audit, PSD, health, allocation): give a file, "
                         "not standard input", params=("sources",))
    read = as_read_options(read)
    if diff:
        return _diff_page(paths, read, events=events, tol=tol, bootstrap=diff_bootstrap, level=level, seed=seed,
                          title=title, say=stage or (lambda _: None))
    if tol:
        raise UsageError("tolerances gate a diff: give diff=True with two sources (ctwm report --diff BASE HEAD)",
                         params=("tol",))
    taus: tuple[float, ...] = ()
    if sweep is not None:
        taus = parse_sweep(sweep, "sweep") if isinstance(sweep, str) else tuple(float(t) for t in sweep)
    kinds = [_kind(p) for p in paths]
    say = stage or (lambda _: None)
    drawn = any(k in ("grid", "trace") for k in kinds)  # a replay page re-runs nothing: it draws no seed
    if seed is None and drawn:
        seed = new_seed()
    seed = None if seed is None else int(seed)
    if seed is not None:
        say(f"seed: {seed}")
    sections: list[Section] = []
    for i, (path, kind) in enumerate(zip(paths, kinds, strict=True)):
        key = f"s{i}"
        if kind == "grid":
            sections.append(grid_section(path, read, grid_manifest(path) or {}, key=key, seed=seed,
                                         bootstrap=bootstrap, jobs=jobs, stage=say))
        elif kind == "replay-dir":
            sections.append(replay_section(path, key=key, result_path=find_result(path),
                                           manifest=replay_manifest(path)))
        elif kind == "replay":
            sections.append(replay_section(path, key=key, result_path=path, manifest=None))
        else:
            sections.append(trace_section(
                path, read, key=key, seed=seed, group_by=group_by, events=events, objects=objects, budget=budget,
                bootstrap=bootstrap, jobs=jobs, taus=taus, core=core, slots=slots, psd_run=psd_run, stage=say))
    names = ", ".join(Path(p).name or p for p in paths)
    page = Report(title=title or f"ctwm report: {names}", seed=seed if drawn else None, sections=tuple(sections))
    say("rendering the page")
    return dataclasses.replace(page, html=render(page))
