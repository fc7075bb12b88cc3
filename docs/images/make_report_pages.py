"""Regenerate the screenshots of each ``ctwm report`` page kind in ``docs/guide/report.md``.

    python docs/images/make_report_pages.py        # from the repository root; needs /usr/bin/chromium

Builds the trace, replay, grid and diff pages with the commands the guide shows (seeds fixed), opens each in
headless Chromium at a 1,280 px window (the width the browser test checks), screenshots the top of the page and
stores it 900 px wide as a 64-colour PNG (Pillow, which matplotlib already requires), so each file stays small.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHROMIUM = "/usr/bin/chromium"
WIDTH, HEIGHT, SHOWN = 1280, 1500, 900


def _shot(html: str, out: Path, tmp: Path) -> None:
    from PIL import Image

    page = tmp / f"{out.stem}.html"
    page.write_text(html, encoding="utf-8")
    shot = tmp / f"{out.stem}-shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                    f"--user-data-dir={tmp / 'profile'}", f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}",
                    page.as_uri()], check=True, capture_output=True, timeout=180)
    img = Image.open(shot).convert("RGB")
    img = img.resize((SHOWN, round(img.height * SHOWN / img.width)), Image.LANCZOS)
    img.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size:,} bytes", file=sys.stderr)


def main() -> None:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    import ctwm_cli
    from ctwm_cli.cli import main as cli
    from ctwm_cli.world.config import WorldConfig
    from ctwm_cli.world.grid import run_grid

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        run_grid(tmp / "grid_out", families=["uniform", "scale-free"], sizes=[100, 500], seeds=[1, 2, 3, 4],
                 base=WorldConfig(steps=3000), jobs=1)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert cli(["replay", "compare", "--size", "100", "--steps", "300", "--bootstrap", "200", "--seed", "1",
                        "-o", str(tmp / "replay_run"), "--json"]) == 0
        (tmp / "result.json").write_text(buf.getvalue(), encoding="utf-8")
        pages = {
            "report_trace.png": ctwm_cli.report("sample_traces/tpl_events.parquet", seed=1, bootstrap=100),
            "report_replay.png": ctwm_cli.report(str(tmp / "result.json")),
            "report_grid.png": ctwm_cli.report(str(tmp / "grid_out"), seed=1, bootstrap=50),
            "report_diff.png": ctwm_cli.report(["sample_traces/tpl_events.parquet",
                                                "sample_traces/lognormal_events.parquet"], diff=True,
                                               tol={"gini": 0.02}, diff_bootstrap=100, seed=1),
        }
        for out, page in pages.items():
            _shot(page.html, HERE / out, tmp)


if __name__ == "__main__":
    main()
