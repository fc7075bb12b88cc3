"""The tables of ``ctwm replay``: arms (the layout of the paper's Table 3) and paired deltas, with the
words each cell is read by (:func:`reading`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from ..common.inert import visible
from .output import fmt_num

if TYPE_CHECKING:
    from ..replay import ReplayResult

METRIC_LABELS = {"tokens_mean": "tokens/step", "user_tokens_mean": "user msg tokens/step", "tail_error": "tail error",
                 "overall_error": "overall error",
                 "state_coverage": "state cov.", "transition_coverage": "transition cov.",
                 "answerable_tail_error": "answerable tail err.", "answerable_overall_error": "answerable err.",
                 "evidence_in_prompt": "evidence in prompt", "majority_evidence_in_prompt": "majority in prompt",
                 "tasks_per_episode": "tasks/episode",
                 "steps_per_task": "steps/task"}
METRIC_LABELS.update({f"{k}{kind}": f"{v} {word}" for k, v in list(METRIC_LABELS.items()) if k.endswith("error")
                      for kind, word in (("_regret", "regret vs counts"), ("_oracle_regret", "regret"))})
REGRET_TEXT = ("error metrics as regret: the arm's error minus the oracle's (the argmax of the true P(s'|s,a)) on the "
               "arm's own steps; it does not say whether an arm walked into easier steps (see tasks/episode)")


def ci_text(ci, digits: int = 3) -> str:
    return "–" if ci is None else f"[{fmt_num(ci.low, digits)}, {fmt_num(ci.high, digits)}]"


def pct_text(v) -> str:
    return "–" if v is None else f"{100 * v:+.1f}%"


def arms_table(res: ReplayResult, title: str) -> Table:
    cfg = res.config
    closed = res.loop == "closed"
    # recorded episodes are the user's file, not a synthetic world: name the file, not the world's settings
    episodes = (f"episodes from {escape(visible(cfg.episodes_from))}" if cfg.episodes_from is not None else
                f"{cfg.family}, |V|={cfg.size}, agent {cfg.agent}, {len(cfg.seeds)} x {cfg.steps:,} steps")
    t = Table(title=f"{title} ({res.loop} loop): {episodes}, budget {cfg.budget} tokens ({res.tokenizer}), "
                    f"predictor {res.predictor}",
              title_justify="left",
              caption="tokens: the whole request a model receives per step (system prompt, user message, chat "
                      f"template of {res.tokenizer}); user msg: the memory prompt alone (what the budget binds); "
                      "prompt cov.: state/transition, of the steps whose evidence was stored, the share whose prompt "
                      "showed it (ctwm's); store cov.: state/transition, of the episode's distinct ones, the share "
                      "its store holds at the end (the paper's coverage); answerable: an "
                      "outcome of (s, a) was seen earlier, so a memory could hold it; evidence: share of answerable "
                      "steps whose evidence "
                      "reached the prompt; majority: ... whose most often seen outcome did; tail: steps at the "
                      "least-visited half of the visited states"
                      + ("; each arm drives its own trajectory (closed loop)." if closed else "."),
              caption_justify="left")
    cols = ["method", "tokens/step", "p95", "user msg", "prompt cov.", "store cov.", "tail err", "overall err",
            "answerable", "ans. tail err", "ans. err", "evidence", "majority"]
    if closed:
        cols += ["decision tokens", "tasks reached", "steps/task"]
    for col in cols:
        t.add_column(col, justify="left" if col == "method" else "right", no_wrap=col == "method")
    for a in res.arms:
        row = [a.arm, fmt_num(a.tokens_mean, 5), fmt_num(a.tokens_p95, 5), fmt_num(a.user_tokens_mean, 5),
               f"{fmt_num(a.state_coverage, 3)}/{fmt_num(a.transition_coverage, 3)}",
               f"{fmt_num(a.store_state_coverage, 3)}/{fmt_num(a.store_transition_coverage, 3)}",
               fmt_num(a.tail_error, 3), fmt_num(a.overall_error, 3), f"{a.answerable_steps:,}",
               fmt_num(a.answerable_tail_error, 3), fmt_num(a.answerable_overall_error, 3),
               fmt_num(a.evidence_in_prompt, 3), fmt_num(a.majority_evidence_in_prompt, 3)]
        if closed:
            row += [fmt_num(a.decision_tokens_mean, 5), f"{a.tasks_reached}/{a.tasks_started}",
                    fmt_num(a.steps_per_task, 4)]
        t.add_row(*row)
    for r in res.references:
        label = r.name if r.on is None else f"{r.name} on {r.on}"
        row = [f"{label} (reference)", "–", "–", "–", "–", "–", fmt_num(r.tail_error, 3), fmt_num(r.overall_error, 3),
               f"{r.answerable_steps:,}", fmt_num(r.answerable_tail_error, 3), fmt_num(r.answerable_overall_error, 3),
               "–", "–"]
        t.add_row(*([*row, "–", "–", "–"] if closed else row))
    return t


def mde_text(d) -> str:
    err = getattr(d, "mde_mc_error", None)
    return fmt_num(d.mde, 3) + ("" if d.mde is None or err is None else f" ±{fmt_num(err, 1)}")


def reading(d) -> str:
    """What a paired delta says, in words: significant, bounded by its MDE, or why there is no interval."""
    if d.interval_status != "formed":
        return d.interval_status
    ci = d.confidence_interval
    if ci is None:
        return "–"
    capped = " (the dependence may outlast the block: try --resample episodes)" if d.block_capped else ""
    if ci.low > 0 or ci.high < 0:
        return ("higher" if ci.low > 0 else "lower") + capped
    return ("no difference larger than ±" + fmt_num(d.mde, 2) if d.mde is not None else "interval includes 0") + capped


def resampled_text(d) -> str:
    if d.resampling == "episodes":
        return "episodes"
    if d.block is None:
        return "–"
    return f"{d.block}" + ("" if d.lag1_autocorrelation is None else f" / {d.lag1_autocorrelation:+.2f}")


def deltas_table(res: ReplayResult, seed: int) -> Table:
    cfg = res.config
    on = f"; {REGRET_TEXT}" if res.loop == "closed" else ""
    c = Table(title=f"paired deltas (treatment - baseline), {int(100 * cfg.level)}% CIs, MDE at 80% power "
                    f"(B={cfg.bootstrap}, resample {cfg.resampling}, block {cfg.block}, seed={seed}){on}",
              title_justify="left",
              caption="block / ρ1: the bootstrap block (steps) and the lag-1 autocorrelation of the per-step "
                      "difference it was chosen from; episodes: whole episodes resampled (Student-t interval); MDE: "
                      "the smallest difference this run detects 80% of the time, read off its own bootstrap "
                      "replicates (± its Monte Carlo error)", caption_justify="left")
    for col in ("treatment - baseline", "metric", "treatment", "baseline", "delta [CI]", "MDE", "block / ρ1",
                "reading", "relative [CI]"):
        c.add_column(col, justify="left" if col in ("treatment - baseline", "metric", "reading") else "right")
    last = None
    for d in res.comparisons:
        pair = f"{d.treatment} - {d.baseline}"
        rci = d.relative_confidence_interval
        rel = "–" if d.relative is None else pct_text(d.relative) + (
            "" if rci is None else f" [{pct_text(rci.low)}, {pct_text(rci.high)}]")
        delta = fmt_num(d.delta, 3) + ("" if d.confidence_interval is None else f" {ci_text(d.confidence_interval)}")
        c.add_row(pair if pair != last else "", METRIC_LABELS.get(d.metric, d.metric),
                  fmt_num(d.treatment_value, 4), fmt_num(d.baseline_value, 4), delta, mde_text(d),
                  resampled_text(d), reading(d), rel)
        last = pair
    return c
