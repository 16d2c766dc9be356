"""Progress off a terminal is plain lines: no carriage returns or escape codes in a redirected log,
one line per tenth of the work; on a terminal it stays a tqdm bar."""
from __future__ import annotations

import io
import re
import subprocess
import sys

from vpo_harness.harness.core.progress import PlainProgress, progress


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    bar = progress(total=24, desc="generate", unit="chain", file=out, min_gap_s=0)
    assert isinstance(bar, PlainProgress)
    for _ in range(24):
        bar.update(1)
        bar.set_postfix(best="0.500", refresh=False)
    bar.close()
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert 5 <= len(lines) <= 11 and all(ln.startswith("[vpo] generate: ") for ln in lines)
    assert lines[-1].startswith("[vpo] generate: 24/24 chain (100%)") and "best=0.500" in lines[-1]
    assert [int(re.search(r": (\d+)/24", ln).group(1)) for ln in lines] == sorted(
        int(re.search(r": (\d+)/24", ln).group(1)) for ln in lines)


def test_a_quick_job_prints_its_final_line_only() -> None:
    out = io.StringIO()
    with progress(total=24, desc="score", unit="chain", file=out) as bar:  # default gap between lines: 2 s
        for _ in range(24):
            bar.update(1)
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("[vpo] score: 24/24 chain (100%)") and len(lines) <= 11


def test_iteration_transient_and_disabled_bars() -> None:
    out = io.StringIO()
    assert list(progress(range(3, 10), desc="rl", initial=3, total=10, file=out)) == list(range(3, 10))
    assert out.getvalue().splitlines()[-1].startswith("[vpo] rl: 10/10 it (100%)")
    quiet = io.StringIO()
    for leave, disable in ((False, False), (True, True)):
        bar = progress(total=5, desc="p", leave=leave, disable=disable, file=quiet)
        bar.update(5)
        bar.n = 2
        bar.refresh()
        bar.close()
    assert quiet.getvalue() == ""


def test_unit_scale_and_unknown_total() -> None:
    out = io.StringIO()
    bar = progress(total=2_000_000, desc="tokens", unit="tok", unit_scale=True, file=out)
    bar.update(2_000_000)
    bar.close()
    assert "2.0M/2.0M tok (100%)" in out.getvalue()
    out = io.StringIO()
    bar = progress(desc="x", file=out)
    bar.update(3)
    bar.close()
    assert out.getvalue().startswith("[vpo] x: 3 it")


def test_a_terminal_gets_tqdm() -> None:
    from tqdm import tqdm

    bar = progress(total=3, desc="t", file=TTY())
    assert isinstance(bar, tqdm)
    bar.close()


def test_a_redirected_vpo_run_log_has_no_escape_codes(tmp_path) -> None:
    """The whole command with stderr to a file: every progress line is a plain line."""
    log = tmp_path / "log"
    with open(log, "w") as fh:
        rc = subprocess.call([sys.executable, "-m", "vpo_harness.harness.app.cli", "run", "--task", "maze", "--model", "mock:moves",
                              "--limit", "4", "-n", "6", "--out", str(tmp_path / "run")], stderr=fh,
                             stdout=subprocess.DEVNULL)
    text = log.read_text()
    assert rc == 0 and "\r" not in text and "\x1b" not in text
    assert "[vpo] generate: 24/24 chain (100%)" in text and "[vpo] score: 24/24 chain (100%)" in text
    assert len(text.splitlines()) <= 24


def test_every_plain_line_says_what_is_left() -> None:
    """The ETA is the rest of the total at the rate so far; clocks are passed in, nothing is timed."""
    bar = PlainProgress(total=20, desc="generate", unit="chain", file=io.StringIO())
    bar.update(5)
    assert bar.line(now=bar._t0 + 10).endswith("0:10 elapsed, ETA 0:30")  # 15 chains left at 0.5/s
    bar.update(15)
    assert bar.line(now=bar._t0 + 40).endswith("0:40 elapsed, done")
    # too little done to estimate from (one chain of 100 after a slow first batch): no ETA yet
    early = PlainProgress(total=100, desc="generate", unit="chain", file=io.StringIO())
    early.update(1)
    assert early.line(now=early._t0 + 67).endswith("1:07 elapsed, ETA after 5%")
    early.update(4)
    assert early.line(now=early._t0 + 100).endswith("ETA 31:40")  # 95 left at 0.05/s
    unknown = PlainProgress(total=None, desc="read", file=io.StringIO())
    unknown.update(3)
    assert unknown.line(now=unknown._t0 + 1).endswith("ETA ?")
    # on a terminal tqdm's own bar counts down: its format keeps the remaining time
    out = TTY()
    with progress(total=4, desc="score", unit="chain", file=out, mininterval=0) as tq:
        tq.update(2)
    assert re.search(r"<\d+:\d\d", out.getvalue())
