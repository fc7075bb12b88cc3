"""Regenerate ``sample_traces/report_screenshot.png``, the README's picture of ``ctwm report``.

    python sample_traces/make_report_screenshot.py          # from the repository root; needs /usr/bin/chromium

It builds the page ``ctwm report sample_traces/tpl_events.parquet -o report.html --seed 1`` writes (the same
library call), opens it in headless Chromium (Debian's ``chromium``), screenshots the top of the page (the
verdict card, the CCDF and the concentration figures) and stores it as a 64-colour PNG (Pillow, which matplotlib
already requires) so the file stays small (< 300 KB).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "report_screenshot.png"
CHROMIUM = "/usr/bin/chromium"
WIDTH, HEIGHT = 1000, 1700


def main() -> None:
    os.chdir(HERE.parent)  # the page names the trace as the README's command does
    sys.path.insert(0, str(HERE.parent))
    import ctwm_cli
    from PIL import Image

    page = ctwm_cli.report("sample_traces/tpl_events.parquet", seed=1, stage=lambda line: print(line, file=sys.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        html.write_text(page.html, encoding="utf-8")
        shot = Path(tmp) / "shot.png"
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                        f"--user-data-dir={Path(tmp) / 'profile'}", f"--window-size={WIDTH},{HEIGHT}",
                        f"--screenshot={shot}", html.as_uri()], check=True, capture_output=True, timeout=180)
        img = Image.open(shot).convert("RGB")
        img.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(OUT, optimize=True)
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes; page {len(page.html):,} bytes, seed 1)")


if __name__ == "__main__":
    main()
