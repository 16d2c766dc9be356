"""The HTML report opened in a real headless Chromium (Debian package ``chromium``, set up by
``scripts/install.sh --dev``): no script errors, every image decodes, the page is not blank, and the
tables hold the expected rows. The page's own load hook writes what it saw into a status element,
which ``--dump-dom`` returns after the load event."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.fixture
def needs_chromium(request) -> None:
    """Skip without Chromium in the fast loop; under --integration (CI) a missing browser is a failure."""
    if CHROMIUM is None:
        msg = "no chromium on PATH: run scripts/install.sh --dev (apt-get install chromium)"
        if request.config.getoption("--integration"):
            pytest.fail(msg)
        pytest.skip(msg)


def chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={tmp / 'profile'}",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", *extra, page.resolve().as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def page_status(page: Path, tmp: Path) -> tuple[dict[str, str], str]:
    res = chromium(page, tmp, "--dump-dom")
    m = re.search(r'<div id="vpo-status"([^>]*)>([^<]*)</div>', res.stdout)
    assert m, f"no status element in the dumped DOM (chromium rc={res.returncode}): {res.stderr[-2000:]}"
    attrs = {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', m.group(1))}
    attrs["text"] = m.group(2)
    return attrs, res.stderr


@pytest.fixture(scope="module")
def report(demo_like_runs, tmp_path_factory) -> Path:
    vpo, grpo = demo_like_runs
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert main(["report", str(grpo), str(vpo), "--labels", "GRPO,VPO", "--out", str(out),
                 "--resamples", "1000", "--n-problems", "3"]) == 0
    return out


def test_report_is_self_contained(report):
    text = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "@import" not in text and "url(http" not in text
    data = json.loads(re.search(r"<script type='application/json' id='vpo-data'>(.*?)</script>", text, re.S)
                      .group(1).replace("<\\/", "</"))
    assert [r["label"] for r in data["runs"]] == ["GRPO", "VPO"]
    assert len(data["runs"][0]["problem_ids"]) == 6
    assert data["comparison"]["shared_problems"] == {"maze-tiny-vpo": 6}


def test_report_renders_in_chromium_without_errors(report, tmp_path, needs_chromium):
    st, stderr = page_status(report, tmp_path)
    assert st["text"] == "loaded"
    assert st["data-errors"] == "0", st
    assert "Uncaught" not in stderr
    # curves, pass^k/Cover, bars, components and projections, all decoded by the browser
    assert st["data-images-total"] == st["data-images-loaded"] == "5"
    tables = json.loads(st["data-tables"])
    assert tables["summary"] == 2 and tables["problems"] == 6
    assert tables["selection"] == 2 * 3  # oracle, majority, random per run (no visible tests on maze)
    # best, pass, pass^k, 2 strategies x 4 ks, Cover at 3 taus, 4 token budgets (compute-matched best),
    # 3 summaries, 4 maze components, the authors' 10 pool metrics (union coverage, best individual,
    # pass@1..3 per solution and per chain, witness count and fraction)
    assert tables["comparison"] == 4 * 3 + 4 * 2 + 3 + 4 + 3 + 4 + 10
    assert tables["provenance-0"] >= 10 and tables["provenance-1"] >= 10

    shot = tmp_path / "shot.png"
    chromium(report, tmp_path, f"--screenshot={shot}", "--window-size=1300,2400")
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert img.shape == (2400, 1300)
    assert (img < 200).mean() > 0.03 and img.std() > 20  # text, axes and curves, not a blank page


def test_the_page_hook_reports_broken_scripts_and_images(report, tmp_path, needs_chromium):
    """Guard the guard: a throwing script and an undecodable image must show up in the status."""
    broken = tmp_path / "broken.html"
    text = report.read_text()
    text = text.replace("<h2>Summary</h2>", "<script>undefinedFunction();</script>"
                        "<img alt='bad' src='data:image/png;base64,AAAA'><h2>Summary</h2>", 1)
    broken.write_text(text)
    st, _ = page_status(broken, tmp_path)
    assert int(st["data-errors"]) >= 2
    assert st["data-images-total"] == "6" and st["data-images-loaded"] == "5"
