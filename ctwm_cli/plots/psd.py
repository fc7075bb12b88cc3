"""Power spectral density of a per-step access series, with the fitted power law and its band."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import figure_axes, series_label


def plot_psd(res: Any, *, ax: Any = None) -> Any:
    """Welch PSD of a :class:`~ctwm_cli.diagnostics.PsdResult` on log-log axes, fit band shaded."""
    f, p, mask = res.frequencies, res.power, res.fit_mask
    pos = (f > 0) & (p > 0)
    fig, ax = figure_axes(ax, 7.5, 5.0)
    ax.plot(f[pos], p[pos], color="tab:blue", linewidth=1, label="Welch PSD (Hann window, 50% overlap)")
    lo, hi = res.band
    ax.axvspan(lo, hi, color="tab:orange", alpha=0.12, label=f"fit band {lo:.3g}–{hi:.3g} cycles/step")
    fx = f[mask]
    if fx.size:
        fy = 10 ** (res.intercept - res.beta * np.log10(fx))
        ax.plot(fx, fy, color="tab:red", linewidth=2,
                label=f"fit P ∝ f^-β, β = {res.beta:.3f} ± {res.beta_se:.3f} (R² {res.r2:.3f})")
    b0, b1 = res.beta_band
    verdict = "inside" if res.in_beta_band else "outside"
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("frequency (cycles per step)")
    ax.set_ylabel("power spectral density")
    name = series_label(res.source, res.run)
    ax.set_title(f"PSD of the '{res.series}' series of {name}\nβ {verdict} the 1/f band [{b0:g}, {b1:g}]; "
                 f"{res.n_steps:,} steps, nperseg {res.nperseg}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower left", fontsize="small")
    return fig
