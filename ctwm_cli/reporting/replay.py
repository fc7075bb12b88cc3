"""The section of a replay: the saved JSON result of ``ctwm replay`` / ``replay compare`` / ``replay ablation`` /
``replay pareto`` (``--json``), alone or inside the run directory it wrote (beside ``manifest.json``).

A replay directory holds the trace, the step log and the manifest, not the metrics; the metrics, the reference
rows and the paired deltas are what the command printed, so the page reads them from that output (the command's
own JSON, saved: ``ctwm replay compare ... -o run/ --json > result.json && mv result.json run/``) rather than
re-running the episodes. The figures are the command's own ``--plot`` figures (``plots.replay``,
``plots.pareto``), drawn from a read-only view of that JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..common.errors import InputError
from ..common.inert import visible
from ..common.upgrade import upgrade
from ..plots.pareto import plot_pareto
from ..plots.replay import plot_replay
from ..replay.output import MANIFEST_FILE
from .glossary import header
from .model import Block, Card, Estimate, Figure, Section, Table
from .svg import draw_svg

ARM_COLUMNS = ("arm", "tokens_mean", "tokens_p95", "state_coverage", "transition_coverage", "tail_error",
               "overall_error", "answerable_steps", "answerable_tail_error", "answerable_overall_error",
               "evidence_in_prompt")
CLOSED_COLUMNS = ("decision_tokens_mean", "tasks_reached", "tasks_started", "steps_per_task")
REFERENCE_COLUMNS = ("name", "on", "tail_error", "overall_error", "answerable_steps", "answerable_tail_error",
                     "answerable_overall_error")
#: the columns of one comparison's table (treatment against baseline, one row per metric and group)
DELTA_COLUMNS = (
    "metric", "group", "baseline_value", "treatment_value", "delta_interval", "relative", "interval_status",
)
PARETO_COLUMNS = ("arm", "budget", "tokens_interval", "answerable_tail_error_interval", "evidence_in_prompt")


def is_replay_result(doc: Any) -> bool:
    return isinstance(doc, dict) and str(doc.get("command", "")).split(" ")[0] == "replay"


def _read_json(path: Path) -> Any:
    try:
        return upgrade(json.loads(path.read_text(encoding="utf-8")))  # version 2: in version 3's names
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not readable JSON ({exc})") from None


def replay_manifest(path: str | Path) -> dict[str, Any] | None:
    """The manifest of a replay run directory, or None when ``path`` is not one."""
    p = Path(path) / MANIFEST_FILE
    if not p.is_file():
        return None
    doc = _read_json(p)
    return doc if is_replay_result(doc) else None


def find_result(directory: str | Path) -> Path:
    """The saved result JSON inside a replay run directory (the one ``*.json`` other than the manifest)."""
    found = [p for p in sorted(Path(directory).glob("*.json")) if p.name != MANIFEST_FILE
             and is_replay_result(_read_json(p))]
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise InputError(f"{directory}: {what} saved replay result found beside {MANIFEST_FILE}; the directory holds "
                         "the trace, not the metrics. Save the command's --json output there (`ctwm replay compare ... "
                         f"-o {directory} --json > result.json && mv result.json {directory}`) or pass that file")
    return found[0]


def load_result(path: str | Path) -> dict[str, Any]:
    doc = _read_json(Path(path))
    if not is_replay_result(doc):
        raise InputError(f"{path}: not the JSON of a replay command (its 'command' field is "
                         f"{doc.get('command') if isinstance(doc, dict) else None!r})")
    return doc


def view(value: Any) -> Any:
    """A read-only attribute view of a JSON value (what the figures read off a result object); its strings made
    :func:`visible` (a saved result may come from a pull request)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{str(k): view(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(view(v) for v in value)
    return visible(value) if isinstance(value, str) else value


def _get(d: dict, column: str) -> Any:
    for part in column.split("."):
        d = d.get(part) if isinstance(d, dict) else None
    return d


def _rows(items: list[dict], columns: tuple[str, ...]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(_get(d, c) for c in columns) for d in items)


def _estimate(value: Any, ci: Any, *, signed: bool) -> Estimate:
    ci = ci if isinstance(ci, dict) else {}
    return Estimate(value=value, low=ci.get("low"), high=ci.get("high"), signed=signed)


def _pareto_rows(points: list[dict]) -> tuple[tuple[Any, ...], ...]:
    return tuple((p.get("arm"), p.get("budget"),
                  _estimate(p.get("tokens_mean"), p.get("tokens_confidence_interval"), signed=False),
                  _estimate(p.get("answerable_tail_error"), p.get("answerable_tail_error_confidence_interval"),
                            signed=False),
                  p.get("evidence_in_prompt")) for p in points)


def _excludes_zero(d: dict) -> bool:
    ci = d.get("confidence_interval") or {}
    return ci.get("low") is not None and ci.get("high") is not None and (ci["low"] > 0 or ci["high"] < 0)


def _delta_tables(doc: dict, level: Any) -> tuple[Table, ...]:
    """One table per comparison (treatment against its baseline), a row per metric (and group): the change with
    its interval written ``+0.016 [+0.010, +0.023]``; the group column only when a comparison has groups."""
    comps = list(doc.get("comparisons") or [])
    boot = doc.get("bootstrap") or {}
    extra = tuple(dict.fromkeys(k for d in comps for k in d if k == "mde"))
    grouped = any(d.get("group") is not None for d in comps)
    unformed = any(d.get("interval_status") not in (None, "formed") for d in comps)
    shown = [c for c in DELTA_COLUMNS if (grouped or c != "group") and (unformed or c != "interval_status")]
    columns = (*shown, *extra)
    pairs: dict[tuple[str, str], list[dict]] = {}
    for d in comps:
        pairs.setdefault((str(d.get("treatment")), str(d.get("baseline"))), []).append(d)
    tables = []
    for (treatment, baseline), rows in pairs.items():
        cells = []
        for d in rows:
            cell = {"metric": header(str(d.get("metric"))), "group": d.get("group"),
                    "baseline_value": d.get("baseline_value"), "treatment_value": d.get("treatment_value"),
                    "interval_status": d.get("interval_status"), "mde": d.get("mde"),
                    "delta_interval": _estimate(d.get("delta"), d.get("confidence_interval"), signed=True),
                    "relative": _estimate(d.get("relative"), d.get("relative_confidence_interval"), signed=True)}
            cells.append(tuple(cell[c] for c in columns))
        n_excl = sum(_excludes_zero(d) for d in rows)
        tables.append(Table(
            caption=f"{treatment} against {baseline}: change (treatment − baseline) with its {level} "
                    f"block-bootstrap interval",
            columns=columns, rows=tuple(cells),
            summary=f"{n_excl} of {len(rows)} intervals exclude zero (B = {boot.get('replicates')}, block "
                    f"{boot.get('block')}, seed {boot.get('seed')})."))
    return tuple(tables)


def _delta_alt(doc: dict) -> str:
    cis = [d["confidence_interval"] for d in doc.get("comparisons") or [] if d.get("confidence_interval")]
    excl = [ci for ci in cis if ci["low"] > 0 or ci["high"] < 0]
    return f"{len(excl)} of {len(cis)} paired deltas have an interval that excludes zero."


def replay_section(path: str, *, key: str, result_path: str | Path, manifest: dict[str, Any] | None) -> Section:
    doc = load_result(result_path)
    try:
        return _section(path, doc, key, result_path, manifest)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InputError(f"{result_path}: not a complete replay result ({type(exc).__name__}: {exc})") from None


def _section(path: str, doc: dict, key: str, result_path, manifest) -> Section:
    cfg = doc["config"]
    command, loop = str(doc["command"]), str(doc.get("loop"))
    level = f"{round(100 * float(cfg.get('level', 0.95)))}%"
    res = view(doc)
    blocks: list[Block] = []
    fields: list[tuple[str, Any]] = [
        ("command", command), ("loop", loop), ("world", f"{cfg.get('family')}, |V| = {cfg.get('size')}"),
        ("episodes", f"{len(cfg.get('seeds', []))} × {cfg.get('steps')} steps"), ("budget", cfg.get("budget")),
        ("tokenizer", doc.get("tokenizer")), ("predictor", doc.get("predictor")), ("seed", doc.get("seed")),
    ]
    if command == "replay pareto":
        points = list(doc["points"])
        alt = str(doc.get("finding") or "Prompt tokens against answerable tail error per policy over the budgets.")
        table = Table(caption=f"Points of the Pareto sweep (mean with its {level} interval)", columns=PARETO_COLUMNS,
                      rows=_pareto_rows(points))
        if any(p.get("answerable_tail_error") is not None for p in points):
            blocks.append(Block(title="Cost against tail error over the budgets (Pareto)", figures=(Figure(
                key=f"{key}-pareto", title="Prompt tokens against answerable tail error", alt=alt, table=table,
                svg=draw_svg(lambda: plot_pareto(res), key=f"{key}-pareto", alt=alt)),)))
        else:  # nothing to draw: no answerable tail step in these episodes
            blocks.append(Block(title="Cost against tail error over the budgets (Pareto)", text=alt + " No point has "
                                "an answerable tail error (no answerable tail step): no figure.", tables=(table,)))
        headline = alt
    else:
        arms = list(doc["arms"])
        cols = ARM_COLUMNS + (CLOSED_COLUMNS if loop == "closed" else ())
        best = min((a for a in arms if a.get("answerable_tail_error") is not None),
                   key=lambda a: (a["answerable_tail_error"], a["tokens_mean"]), default=None)
        cheapest = min(arms, key=lambda a: (a["tokens_mean"], a["arm"]))
        headline = (f"lowest answerable tail error: {best['arm']} ({best['answerable_tail_error']:.3f}); "
                    if best else "") + f"cheapest: {cheapest['arm']} ({cheapest['tokens_mean']:.0f} tokens/step)"
        alt = f"Tokens per step and tail error per arm: {headline}."
        blocks.append(Block(title="Arms (paper Tables 3/4 layout)", figures=(Figure(
            key=f"{key}-arms", title="Cost and tail error per arm", alt=alt,
            table=Table(caption=f"Arms ({loop} loop)", columns=cols, rows=_rows(arms, cols)),
            svg=draw_svg(lambda: plot_replay(res), key=f"{key}-arms", alt=alt)),),
            tables=(Table(caption="Reference rows (what a memory could reach)", columns=REFERENCE_COLUMNS,
                          rows=_rows(list(doc.get("references") or []), REFERENCE_COLUMNS)),)))
    if doc.get("comparisons"):
        blocks.append(Block(title="Paired deltas", text=_delta_alt(doc), tables=_delta_tables(doc, level)))
        fields.append(("paired deltas", _delta_alt(doc)))
    if manifest is not None:
        files = manifest.get("files") or {}
        blocks.append(Block(title="Run directory", text=f"{MANIFEST_FILE} of {path}: the files and their SHA-256.",
                            tables=(Table(caption="Files", columns=("file", "sha256"),
                                          rows=tuple((str(k), str(v)) for k, v in files.items())),)))
    return Section(kind="replay", source=path if manifest is None else f"{path} ({Path(result_path).name})",
                   title=f"Replay {Path(path).name or path}", card=Card(headline=headline, verdict=None,
                                                                         fields=tuple(fields)),
                   blocks=tuple(blocks), seed=doc.get("seed") if isinstance(doc.get("seed"), int) else None)
