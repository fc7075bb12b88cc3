"""``ctwm health`` (memory-health metrics) and ``ctwm import otel|mem0`` (telemetry to Parquet)."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from rich.table import Table

from ..common.settings import Declared, option
from ..common.vocabulary import INPUT_FORMATS
from ..plots import check_plot_path
from .declared import declared_flags
from .health_tables import health_tables, hot_tables, scope_hot_tables, scope_table
from .options import FAIL_ON_HELP, JUNIT_HELP, PLOT_HELP, Format, ReadFlags, output_flags, read_flags
from .output import check_output_path, check_outputs, conclude, emit, fmt_num, message, progress_bar
from .registry import result

HEALTH_HELP = """Memory-health metrics of an agent's memory trace (the article's section 8).

\b
Trace: event rows (item, step, run, event, tokens, ts) plus optional columns task, outcome and by.
Event kinds: write, update, supersede (item superseded by the item in `by`), invalidate, archive,
evict, restore (an expired item live again), retrieve, inject, read (a key read: get()), maintain;
and search (a retrieval query), context (tokens = prompt size of a model call), task_outcome
(outcome = success/failure). Each kind's transition: docs/lifecycle.md. OTLP JSON spans and Mem0 history exports are
read directly (--input-format). The trace is one memory store; rows are processed in time order
(ts if every row has one, else step); the live store grows on write and shrinks on supersede,
invalidate, archive and evict. Revocation = supersede or invalidate (the entry was wrong); archive
(routine consolidation) and evict (capacity) retire an entry without judging it: counted apart.

\b
Metrics (names usable in --fail-on):
  context_usage            mean prompt tokens per step / --budget (steps with a context row)
  memory_token_share       mean injected memory tokens per step (inject tokens, else retrieve) / --budget
  memory_share_of_context  injected memory tokens / prompt tokens
  steps_over_budget        share of steps whose prompt (else memory) tokens exceed --budget
  maintenance_ratio        steps with a maintain row / all (run, step) steps; warning above 10%
  net_new_per_task         change of the live store size over a task's rows, mean over tasks
  retrieval_hit_rate       queries (steps with search/retrieve rows) whose results were used: >= 1
                           retrieved item injected at the same step / queries (hit_definition
                           "used"). Without inject rows beside the retrieve rows: queries that
                           retrieved >= 1 item / queries ("returned"; needs search rows)
  used_result_share        retrieved results injected at their step / retrieved results
  stale_hit_share          retrieve hits on items then superseded, invalidated, archived or past
                           valid_until / hits
  failure_attribution      failed_revoked_use - succeeded_revoked_use, with a Newcombe 95% interval
                           (not formed without both failed and successful tasks). A task used a
                           revoked entry if it used (retrieve/inject) an entry superseded or
                           invalidated at any time, or one past valid_until when used. Shows whether
                           failures go with such use more than successes; cannot show cause (harder
                           tasks may read more memory and fail more). failures_attributed: count of
                           such failed tasks. A task's outcome is the last non-null `outcome` of its
                           rows (a task_outcome row or an outcome column): success/pass/ok/true/1 or
                           failure/fail/error/false/0
  failed_revoked_use, succeeded_revoked_use
                           share of failed (successful) tasks that used a revoked or expired entry
  revoked_share            items superseded or invalidated by the end / all memory items (archived
                           and evicted items are reported apart)
  growth_slope             OLS slope of the live store size per step (or second)
  growth class             converging / linear / accelerating: OLS of the growth rate in (up to 20)
                           equal time bins on time; the 95% interval of this trend above (below) 0
                           and the last-quarter rate at least 25% above (below) the first-quarter
                           rate -> accelerating (converging); a store that does not grow is
                           converging; otherwise linear. growth_rate_change = last/first - 1
  store_size               live store size at the end
  success_rate, inflection_volume
                           success rate of tasks, and the store size at task start where a continuous
                           two-segment least-squares fit of success (0/1) on it bends
  supersede_cycles, max_chain_length, superseded_but_retrieved
                           cycles of the supersede graph (from `by` and the objects' supersedes),
                           items on its longest chain, items retrieved after being superseded
  dead_weight_share        live memories with no retrieve, inject or read (key lookup) row in the window
                           (--window, default the whole trace) / live memories. Live at the window's end: written (or in
                           the store when the trace began), not superseded, invalidated, archived or
                           evicted since, not past valid_until. Not available when the trace
                           records no reads (no search, retrieve, inject or read row)
  dead_token_share         the same by tokens (a memory's tokens: its last write/update row with
                           tokens), when every live memory's size is known. The oldest
                           never-retrieved memories are listed. A read row (get()) is a use
  stale_above_current_share
                           queries whose results rank a stale (superseded, invalidated, archived,
                           expired) memory above a live one on the same subject (the objects'
                           subject, else the supersede chain) / queries that returned anything

\b
Hot and cold lists: the 10 memories with the most hits (with their reads, state at the end and
--objects content), and the live memories nothing hit or read in the window, oldest first.
A query is one search row; a retrieve row belongs to the search at its step whose scope (run)
contains the hit's (user_id=alice contains agent_id=planner&user_id=alice; a namespace prefix its
namespaces).

\b
--group-by COL: one report per scope (and a summary row each): run, a column of the trace, or any
scope key read from the scope text in run (user reads user or user_id: user_id=alice&agent_id=...);
--objects rows go to the scope their `scope` names (without one: to the scopes whose rows mention
them); --fail-on applies to the pooled report and to each scope.

\b
--objects: memory-object table (JSONL/Parquet): id, type, subject, content, source, created_at,
last_hit_at, hit_count, confidence, decay, valid_until, supersedes, scope. Times are ISO 8601
(compared with ts) or step numbers (compared with step).

\b
--fail-on: a metric that is not available fails the gate (exit 1, e.g. context_usage without
--budget: "not available: pass --budget"); METRIC? allows it to be missing (context_usage?>0.5).

\b
Examples:
  ctwm health agent_trace.jsonl --budget 8000
  ctwm health spans.otlp.json --budget 8000 --fail-on 'stale_hit_share>0.05' --junit-xml health.xml
  ctwm health trace.parquet --objects objects.jsonl --fail-on 'context_usage?>0.5' --format github
  ctwm health mem0_trace.jsonl --group-by user --objects get_all.json --fail-on 'dead_weight_share>0.8'
"""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HealthFlags(Declared):
    """The options of ``ctwm health`` besides the reading ones (:class:`~.options.ReadFlags`)."""

    WHAT = "health option"

    objects: str | None = option(None, flags=("--objects",), path=True,
                                 help="Memory-object table (JSONL or Parquet) with valid_until, supersedes, "
                                 "created_at, type.")
    budget: int | None = option(None, flags=("--budget",),
                                help="Prompt budget in tokens for context usage and memory token share.")
    fail_on: list[str] | None = option(None, flags=("--fail-on",), metavar="METRIC>VALUE",  # noqa: RUF009
                                       config=False, reason="it is the entry's own fail_on key", help=FAIL_ON_HELP)
    junit_xml: str | None = option(None, flags=("--junit-xml",), metavar="FILE", config=False,
                                   reason="it writes a file", help=JUNIT_HELP)
    run: str | None = option(None, flags=("--run",), help="Use only the rows of this run.")
    group_by: str | None = option(None, flags=("--group-by",), metavar="COL",
                                  help="One report per scope: run, a trace column, or user / agent (also read from a "
                                  "Mem0 session scope in run); --objects is split by scope.")
    window: str | None = option(None, flags=("--window",), metavar="500steps|36h|7d",
                                help="Dead weight over the last N steps (500steps) or a duration (90s, 30m, 36h, 7d; "
                                "a trace timed by ts) [default: the whole trace]. A bare number is refused.")
    input_format: str = option("auto", flags=("--input-format",), choices=INPUT_FORMATS,
                               help="auto (sniff JSON content), otel (OTLP JSON spans), mem0 (history export) or "
                               "openinference (OTLP spans of OpenInference retrievers).")
    plot: str | None = option(None, flags=("--plot",), config=False, reason="it writes a file", help=PLOT_HELP)
    task_col: str | None = option(None, flags=("--task-col",),
                                  help="Source column holding the task id [default: task].")
    outcome_col: str | None = option(None, flags=("--outcome-col",),
                                     help="Source column holding a task's outcome [default: outcome].")
    by_col: str | None = option(None, flags=("--by-col",),
                                help="Source column holding the superseding item of a supersede row [default: by].")


@result("health", "ctwm_cli.health.HealthReport")
@output_flags
@read_flags()
@declared_flags(HealthFlags, name="flags")
def health(
    trace: Annotated[str, typer.Argument(
        metavar="TRACE", help="Event trace (.jsonl, .parquet, a Parquet directory, OTLP JSON, Mem0 history export).")],
    *,
    flags: HealthFlags,
    opts: ReadFlags,
    fmt: Format = Format.table,
) -> None:
    f = flags
    cmap = opts.read_options()
    from ..common.gates import parse_checks
    from ..health import METRICS, health_of_trace

    checks = parse_checks(f.fail_on, list(METRICS), parameter="--fail-on")
    junit = check_output_path(f.junit_xml, "--junit-xml")
    plot = f.plot
    check_plot_path(plot)
    check_outputs([trace, *([f.objects] if f.objects else [])], junit_xml=f.junit_xml, plot=plot)
    with progress_bar(f"reading {trace}") as progress:
        report = health_of_trace(
            trace, cmap, objects=f.objects, budget=f.budget, run=f.run, input_format=f.input_format, checks=checks,
            extra_columns={"task": f.task_col, "outcome": f.outcome_col, "by": f.by_col}, group_by=f.group_by,
            window=f.window, progress=progress,
        )
    for w in report.warnings:
        message(f"warning: {w}")
    if plot:
        from ..plots import save_figure
        from ..plots.health import plot_health

        message(f"figure: {save_figure(plot_health(report), plot)}")
    rows = [{"metric": k, "value": v, "definition": METRICS[k]} for k, v in report.metrics.items()]
    rows.append(
        {"metric": "growth_classification", "value": report.growth.classification, "definition": report.growth.reason}
    )
    tables = health_tables(report)
    tables += hot_tables(report)
    if report.groups:
        tables.append(scope_table(report))
        tables += scope_hot_tables(report)
    from ..common.vocabulary import SUMMARY_KEY
    from ..reporting.summary import health_summaries

    payload = health_summaries(report)  # the lead paragraph: JSON summary, and the table format's first lines
    emit("health", payload, rows, fmt, tables=tables, checks=report.checks, headline=payload[SUMMARY_KEY])
    conclude("health", report.checks, junit)


import_app = typer.Typer(
    name="import",
    help="Convert agent-memory telemetry into a Parquet trace (ctwm commands also read these files directly).",
    no_args_is_help=True,
)

OutOpt = Annotated[str, typer.Option(
    "--out", "--output", "-o", help="Parquet file to write (columns item, step, run, event, rank, score, tokens, ts, "
    "task, outcome, by).")]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace the --out file if it exists.")]


@import_app.command("otel")
@result("import otel", "ctwm_cli.traces.telemetry.ImportResult")
@output_flags
def import_otel(
    file: Annotated[str, typer.Argument(
        metavar="FILE", help="OTLP JSON export (one ExportTraceServiceRequest, or JSON lines of them).")],
    output: OutOpt,
    overwrite: OverwriteOpt = False,
    fmt: Format = Format.table,
) -> None:
    """OpenTelemetry GenAI spans (OTLP JSON) -> trace rows.

    search_memory / retrieval -> a search row and one retrieve row per record id of
    gen_ai.memory.records / gen_ai.retrieval.documents; create_memory -> write; update_memory ->
    update; upsert_memory -> write (first time) or update; delete_memory -> archive; chat etc. with
    gen_ai.usage.input_tokens -> context; the root or invoke_agent span's status (or a
    ctwm.task.outcome attribute) -> task_outcome. run = gen_ai.conversation.id else trace id; task =
    ctwm.task.id else trace id; step = inference spans of the run started before the span.

    \b
    Examples:
      ctwm import otel spans.otlp.json -o trace.parquet
      ctwm import otel spans.jsonl -o trace.parquet --json
    """
    _import(file, "otel", output, fmt, overwrite)


@import_app.command("mem0")
@result("import mem0", "ctwm_cli.traces.telemetry.ImportResult")
@output_flags
def import_mem0(
    file: Annotated[str, typer.Argument(
        metavar="FILE", help="Mem0's SQLite history.db, or history() output as JSON (array, {\"results\": [...]} "
        "or JSON lines).")],
    output: OutOpt,
    owners: Annotated[str | None, typer.Option(
        "--owners", help="Owners of the memories (Mem0's history records none): a get_all() JSON dump or the "
        "trace the ctwm Mem0 wrapper wrote.")] = None,
    overwrite: OverwriteOpt = False,
    fmt: Format = Format.table,
) -> None:
    """Mem0 history rows -> trace rows: ADD -> write, UPDATE -> update, DELETE -> archive.

    An UPDATE that leaves the text unchanged (Mem0 writes one when an expiry or metadata is set) is
    not an edit and is skipped (counted in a note). ts = updated_at (UPDATE, DELETE) or created_at;
    step = dense rank of ts; run = the owner as Mem0's session scope (user_id=alice&agent_id=...),
    from the row or from --owners; task = task_id / task (also in metadata). Mem0 records no
    searches: log them with ctwm_cli.integrations.mem0.

    \b
    Examples:
      ctwm import mem0 ~/.mem0/history.db -o trace.parquet --owners get_all.json
      ctwm import mem0 history.json -o trace.parquet && ctwm health trace.parquet
    """
    _import(file, "mem0", output, fmt, overwrite, owners=owners)


@import_app.command("openinference")
@result("import openinference", "ctwm_cli.traces.openinference.OpenInferenceImport")
@output_flags
def import_openinference_cmd(
    file: Annotated[str, typer.Argument(
        metavar="FILE", help="OTLP JSON export with OpenInference spans (Phoenix's LangChain / LlamaIndex "
            "instrumentations).",
    )],
    output: OutOpt,
    overwrite: OverwriteOpt = False,
    id_key: Annotated[str, typer.Option(
        "--id-key", help="Key of the JSON object retrieval.documents.N.document.metadata that holds a record's id.",
    )] = "id",
    fmt: Format = Format.table,
) -> None:
    """OpenInference retriever spans (openinference.span.kind = RETRIEVER) -> trace rows.

    A search row per retriever span and a retrieve row per retrieval.documents.N (rank N+1, score =
    document.score). Item id: document.id, else the --id-key of the JSON document.metadata, else
    the Document.id serialised in output.value, else a hash of document.content; the output says how
    many ids came from each. run = session.id else trace id; step = LLM spans of the run started
    before the span. Exits 3 (nothing written) when no retrieved record can be identified.

    \b
    Examples:
      ctwm import openinference sample_traces/telemetry/openinference_spans.json -o trace.parquet
      ctwm import openinference phoenix_spans.json -o trace.parquet --id-key doc_id --json
    """
    from ..traces.openinference import import_openinference

    check_outputs([file], output=output)
    res = import_openinference(file, output, id_key=id_key, overwrite=overwrite)
    d = res.to_dict()
    t = Table(title=f"{res.source} (openinference) -> {res.output}", title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    t.add_row("spans read", f"{res.spans:,} ({res.retriever_spans:,} retriever spans)")
    t.add_row("documents", f"{res.documents:,} retrieve rows; {res.n_rows:,} trace rows")
    sources = ", ".join(f"{k}: {v:,}" for k, v in res.id_sources.items())
    t.add_row("item ids from", f"{sources} (--id-key {res.id_key})")
    t.add_row("runs", f"{res.runs:,}")
    emit("import openinference", d, [d], fmt, tables=[t])


def _import(file: str, kind: str, output: str, fmt: Format, overwrite: bool, *,
            owners: str | None = None) -> None:
    from ..traces.telemetry import import_telemetry

    check_outputs([file, *([owners] if owners else [])], output=output)
    res = import_telemetry(file, kind, output, overwrite=overwrite, owners=owners)
    d = res.to_dict()
    t = Table(title=f"{res.source} ({kind}) -> {res.output}", title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    what = "spans" if kind == "otel" else "history rows"
    t.add_row(f"{what} read", f"{res.records:,} ({res.mapped:,} mapped to trace rows)")
    t.add_row("trace rows", fmt_num(res.n_rows))
    t.add_row("events", ", ".join(f"{k}: {v:,}" for k, v in res.events.items()))
    t.add_row("runs / tasks", f"{res.runs:,} / {res.tasks:,}")
    emit(f"import {kind}", d, [d], fmt, tables=[t])
    for note in res.notes:
        message(f"note: {note}")


def register(app: typer.Typer) -> None:
    app.command("health", help=HEALTH_HELP)(health)
    app.add_typer(import_app, name="import")
