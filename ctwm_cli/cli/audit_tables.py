"""The terminal tables of ``ctwm audit``: one trace's audit, its cross-check, power, alternative fits and tests."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..common.inert import visible
from .output import fmt_num

VERDICT_STYLE = {"tpl-compatible": "bold green", "lognormal-compatible": "bold cyan", "inconclusive": "bold yellow"}


def _power_table(pw) -> Table:
    needed = "; ".join(f"{rule} rule: " + (f"{m}x the data" if m else f"beyond {pw.multiples[-1]}x")
                       for rule, m in pw.needed.items())
    checked = " (fit check included, as in the verdict above)" if pw.fit_check else ""
    t = Table(title=f"How much more data? Power to reach the right verdict{checked} (R = {pw.replicates} per cell; "
                    f"needed for both families at {pw.target:.0%}: {needed})", title_justify="left")
    t.add_column("data drawn from")
    t.add_column("rule")
    for m in pw.multiples:
        t.add_column(f"{m}x n", justify="right")
    t.add_column("needed", justify="right")
    for c in pw.curves:
        t.add_row(c.generator, c.rule, *(f"{c.power[m]:.0%}" for m in pw.multiples),
                  f"{c.needed}x" if c.needed else f"> {pw.multiples[-1]}x")
    widths = [(hi - lo) / 2 for c in pw.curves for lo, hi in (c.interval or {}).values() if hi == hi and lo == lo]
    notes = [f"Monte Carlo 95% intervals of the cells up to ±{max(widths):.0%} (JSON: curves[].interval)"
             ] if widths else []
    for c in pw.curves:
        if c.falls:
            why = (": its TPL call needs the pure power law to pass p_gof, which more TPL data fail (Definition 3.4)"
                   if (c.rule, c.generator) == ("paper", "truncated_power_law") else "")
            notes.append(f"{c.generator}/{c.rule} falls at {', '.join(f'{m}x' for m in c.falls)}{why}")
    if notes:
        t.caption = "; ".join(notes)
        t.caption_justify = "left"
    return t


def _cross_check_table(c) -> Table:
    t = Table(title=f"Cross-check: {c.package} {c.version} with its defaults", title_justify="left")
    for name in ("quantity", "ctwm", c.package, "why they differ"):
        t.add_column(name)
    why = {d.quantity: d.cause for d in c.disagreements}
    for q in ("xmin", "alpha", "R", "p"):
        t.add_row(q, fmt_num(c.ours[q]), fmt_num(c.theirs[q]), why.get(q, "agree"))
    t.add_row("alpha at our x_min", fmt_num(c.ours["alpha"]), fmt_num(c.theirs["alpha_reconciled"]),
              "its exact estimator, α allowed in [1, 20]")
    return t


def audit_table(r) -> Group:
    """The audit of one trace as the terminal shows it: the summary, then any cross-check, power, fits and tests."""
    t = Table(title=Text(f"Tail audit: {r.label}"), title_justify="left", show_header=False)
    t.add_column("field", style="bold")
    t.add_column("value")
    _fit_rows(t, r)
    _uncertainty_rows(t, r.uncertainty)
    _verdict_rows(t, r)
    _calibration_rows(t, r.calibration)
    if r.concentration is not None:
        k = r.concentration
        t.add_row("concentration", f"Gini {fmt_num(k.gini)}, skew {fmt_num(k.skewness)}, "
                  f"max/median {fmt_num(k.max_over_median)}, top-10% share {fmt_num(k.top10_share)}, "
                  f"σ_top10 {fmt_num(k.sigma_top10)}")
    parts: list = [t]
    if r.cross_check is not None:
        parts.append(_cross_check_table(r.cross_check))
    if r.power is not None:
        parts.append(_power_table(r.power))
    if r.alternatives:
        parts.append(_fits_table(r))
    if r.comparisons:
        parts.append(_comparisons_table(r.comparisons))
    return Group(*parts)


def _fit_rows(t: Table, r) -> None:
    pl = r.power_law
    t.add_row("n (items) / distinct values", f"{r.n_items:,} / {r.distinct_values:,}")
    if pl is not None:
        t.add_row("x_min / n_tail", f"{fmt_num(pl.xmin)} / {pl.n_tail:,}  ({pl.candidates:,} candidate cutoffs)"
                  + (f"; doubly truncated at x_max {fmt_num(pl.xmax)}" if pl.xmax is not None else ""))
        t.add_row("α ± se", f"{pl.alpha:.4f} ± {pl.alpha_se:.4f}  (confirmatory; moves with x_min)")
        t.add_row("KS distance D", fmt_num(pl.ks))
    if r.constrained is not None:
        k = r.constrained
        t.add_row("constrained cutoff", f"x_min {fmt_num(k.xmin)} / n_tail {k.n_tail:,}, α {k.alpha:.4f}, "
                  f"D {fmt_num(k.ks)}  (best cutoff leaving --min-tail points; not used for the verdict)")


def _uncertainty_rows(t: Table, u) -> None:
    if u is not None:
        for q in ("xmin", "alpha", "n_tail"):
            iv = u.interval[q]
            span = ("interval not formed: every replicate agrees" if iv is None and q in u.constant
                    else f"interval not formed: the central {u.level:.0%} of replicates agree" if iv is None
                    else f"{u.level:.0%} interval [{fmt_num(iv.low)}, {fmt_num(iv.high)}]"
                    + (", excludes the estimate: the replicates lie on one side of it (an unstable cutoff)"
                       if q in u.excludes_estimate else ""))
            t.add_row(f"{q}: bootstrap se", f"{fmt_num(u.se[q])}  ({span}; B = {u.replicates}, {u.failed} failed)")
        if (b := u.alpha_band) is not None:
            t.add_row("α over cutoffs", f"[{b.low:.4f}, {b.high:.4f}]  (with α ± se at the {b.cutoffs} cutoffs in "
                      f"[{fmt_num(b.xmin_low)}, {fmt_num(b.xmin_high)}] that pass KS at {b.ks_level:g}; "
                      "the interval to quote when x_min is uncertain)")


def _verdict_rows(t: Table, r) -> None:
    c, gof = r.tpl_vs_lognormal, r.gof
    t.add_row("p_gof", "not computed" if gof is None
              else f"{gof.pvalue:.4f}  (B = {gof.replicates}, seed {r.settings.seed})")
    if c is not None:
        t.add_row("Λ_TPL,LN / σ / z", f"{fmt_num(c.statistic)} / {fmt_num(c.sigma)} / {fmt_num(c.z)}")
    v = r.verdict
    t.add_row("verdict", Text.assemble((v.verdict, VERDICT_STYLE[v.verdict]), f"  ({v.rule} rule)"))
    t.add_row("reason", v.reason)
    if (h := r.heterogeneity) is not None:  # group names come from the trace: plain text, control characters shown
        left = f"; left out (< 10 tail points): {', '.join(h.excluded)}" if h.excluded else ""
        t.add_row("groups share one law?", Text(visible(h.summary() + left)))
    t.add_row("Assumption 3.3", "holds" if v.assumption_3_3 else "fails")
    t.add_row("pure power law passes", fmt_num(r.power_law_pass))


def _calibration_rows(t: Table, cal) -> None:
    if cal is not None:
        cv = cal.verdict
        note = f"  (calibrated rule, level {cal.level:g}, R = {cal.replicates})"
        t.add_row("calibrated verdict", Text.assemble((cv.verdict, VERDICT_STYLE[cv.verdict]), note))
        t.add_row("calibrated reason", cv.reason)
        conf = cal.confusion
        if conf:
            ln, tpl = conf["lognormal"], conf["truncated_power_law"]
            t.add_row("paper rule on simulated data",
                      f"log-normal: TPL {ln['tpl-compatible']:.1%}, LN {ln['lognormal-compatible']:.1%}; "
                      f"TPL: TPL {tpl['tpl-compatible']:.1%}, LN {tpl['lognormal-compatible']:.1%}")


def _fits_table(r) -> Table:
    fits = Table(title="Alternative fits on the same tail (se from the Hessian)", title_justify="left")
    for name in ("family", "parameters", "log-likelihood", "converged", "at bound", "own fit: KS D, p"):
        fits.add_column(name)
    checks = r.fit_checks or {}
    for f in r.alternatives.values():
        se = f.se or {}
        params = ", ".join(f"{k} {fmt_num(v)}" + (f" ± {fmt_num(se[k])}" if k in se and se[k] == se[k] else "")
                           for k, v in f.params.items())
        bound = ", ".join(f"{k} = {fmt_num(b)}" for k, b in f.at_bound.items())
        bound += f" ({f.limit})" if f.limit else ""
        g = checks.get(f.family)
        own = _not_run(r) if g is None else f"{fmt_num(g.statistic)}, {g.pvalue:.4f}"
        fits.add_row(f.family, params, fmt_num(f.loglik), fmt_num(f.converged), bound or "no", own)
    return fits


def _not_run(r) -> str:
    """Why a family's own fit check is not in the table."""
    if r.fit_checks is None and not r.settings.fit_check:
        return "not run (--no-fit-check)"
    if r.fit_checks_skipped:
        return "not run (tail < --min-tail)"
    return "not run" if r.fit_checks is None or r.settings.check_all else "not run (--check-all-families)"


def _comparisons_table(comparisons) -> Table:
    lr = Table(title="Likelihood-ratio tests (Λ > 0 favours the first family)", title_justify="left")
    for name in ("first", "second", "Λ", "σ", "z", "p", "preferred"):
        lr.add_column(name, justify="left" if name in ("first", "second", "preferred") else "right")
    from ..tail.compare import pvalue_text  # loaded with the audit, not at start-up

    for cmp in comparisons:
        second = cmp.second + (f" (nested, {cmp.method})" if cmp.nested else "")
        lr.add_row(cmp.first, second, fmt_num(cmp.statistic),
                   fmt_num(cmp.sigma), fmt_num(cmp.z), pvalue_text(cmp.pvalue), cmp.preferred or "none")
    return lr
