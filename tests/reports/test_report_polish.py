"""Report figures and wording: all-zero panels on a 0..1 axis, whole-number candidate ticks, bands
named as ±1 standard error, larger fonts, the new metric columns, and one word each for distinct
reward vectors and distinct answer texts."""
from __future__ import annotations

import base64
import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from vpo_harness.harness.app.cli import main  # noqa: E402
from vpo_harness.reports.report import BAND_LABEL, FONT_SCALE, _polish  # noqa: E402


def test_all_zero_panel_gets_a_unit_axis_and_a_note() -> None:
    fig, (zero, live) = plt.subplots(1, 2)
    zero.plot([1, 2, 4], [0.0, 0.0, 0.0])
    live.plot([1, 2, 4], [0.2, 0.25, 0.3])
    before = live.get_ylim()
    _polish(fig)
    assert zero.get_ylim() == (-0.03, 1.03)
    assert any("0 for every run" in t.get_text() for t in zero.texts)
    assert live.get_ylim() == before and not live.texts  # a panel with data keeps its own scale
    plt.close(fig)


def test_bars_at_zero_count_as_all_zero() -> None:
    fig, ax = plt.subplots()
    ax.bar([0, 1], [0.0, 0.0], yerr=[0.0, 0.0])
    _polish(fig)
    assert ax.get_ylim() == (-0.03, 1.03)
    plt.close(fig)


def test_candidate_axes_get_whole_number_ticks_and_bands_a_name() -> None:
    fig, ax = plt.subplots()
    x = np.array([1, 2, 3])
    ax.plot(x, [0.1, 0.3, 0.4], label="run")
    ax.fill_between(x, [0.0, 0.2, 0.3], [0.2, 0.4, 0.5], alpha=0.2)
    ax.set_xlabel("candidates evaluated per problem")
    ax.legend(fontsize=8)
    size = ax.xaxis.get_label().get_fontsize()
    _polish(fig)
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks  # autoscale gave 1.0, 1.25, 1.5, ...
    assert BAND_LABEL in [t.get_text() for t in ax.get_legend().get_texts()]
    assert ax.xaxis.get_label().get_fontsize() == pytest.approx(max(size * FONT_SCALE, 9.5))
    plt.close(fig)


def _images(html: str) -> list[np.ndarray]:
    out = []
    for b64 in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html):
        out.append(plt.imread(io.BytesIO(base64.b64decode(b64)), format="png"))
    return out


def test_report_words_columns_and_uncut_figures(demo_like_runs, tmp_path) -> None:
    vpo, grpo = demo_like_runs
    out = tmp_path / "r.html"
    assert main(["report", str(grpo), str(vpo), "--labels", "GRPO,VPO", "--out", str(out), "--resamples", "300",
                 "--n-problems", "2"]) == 0
    html = out.read_text()
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)
    # one word each: reward vectors are "distinct vectors", answer texts "unique answers"
    assert "GRPO unique answers" in text and "GRPO distinct vectors" in text
    assert re.findall(r"distinct(?! vectors?\b)", text, flags=re.I) == []
    summary = re.search(r'<table id="summary">.*?</table>', html, re.S).group(0)
    for col in ("pass^max k", "Cover@0.1", "Cover@0.5", "Cover@0.9"):
        assert f">{col}</th>" in summary
    assert "pass^k, Cover@τ and best at equal token cost" in text
    # reward-space axes are named components by default, not principal components
    assert "PC1" not in text and "two named reward components that vary most" in text
    # every figure keeps a white margin: scaled-up text is never cut at the image border
    for img in _images(html):
        border = [img[0], img[-1], img[:, 0], img[:, -1]]
        assert all((b[..., :3] > 0.9).all() for b in border)
