"""One colour per run in every figure (reports/colours.py, from the run's folder, distinct within
the document): every figure of the report, `vpo plot` of the same runs, bar panels next to line panels when
an evolve run (no bars) comes first; and an all-zero evolve panel on the 0..1 axis."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from vpo_harness.harness.core.results import load_run  # noqa: E402
from vpo_harness.reports import report  # noqa: E402
from vpo_harness.reports.axes import ZERO_NOTE, ZERO_YLIM  # noqa: E402
from vpo_harness.reports.colours import run_styles  # noqa: E402
from vpo_harness.reports.plots import best_at_k_figure, load_plot_runs, metric_figure  # noqa: E402


def _colours_by_label(fig: Any, labels: list[str]) -> dict[str, set[str]]:
    """label -> colours of the lines, bars and scatter points drawn for it in ``fig``."""
    out: dict[str, set[str]] = {lab: set() for lab in labels}

    def owner(text: str) -> str | None:
        hits = [lab for lab in labels if lab in text]
        return max(hits, key=len) if hits else None

    for ax in fig.axes:
        for ln in ax.get_lines():
            lab = owner(ln.get_label())
            if lab:
                out[lab].add(to_hex(ln.get_color()))
        bars = [p for p in ax.patches if isinstance(p, Rectangle)]
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        if bars and len(ticks) == len(bars):
            for bar, tick in zip(bars, ticks):
                lab = owner(tick)
                if lab:
                    out[lab].add(to_hex(bar.get_facecolor()))
        else:  # grouped bars carry their run in the legend label
            for cont in ax.containers:
                lab = owner(str(cont.get_label()))
                if lab:
                    out[lab] |= {to_hex(b.get_facecolor()) for b in cont.patches}
        for coll in ax.collections:  # reward-space scatter: the panel title names the run
            if coll.get_offsets().shape[0] and type(coll).__name__ == "PathCollection":
                lab = owner(ax.get_title())
                if lab:
                    out[lab] |= {to_hex(c) for c in coll.get_facecolors()}
    return out


def test_every_report_figure_and_vpo_plot_give_a_run_one_colour(demo_like_runs, evolve_runs, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An evolve run first, so a figure of evaluation runs only would colour by the wrong position."""
    vpo, grpo = demo_like_runs
    evo = evolve_runs[1]
    labels = ["EVO", "GRPO", "VPO"]
    want = {lab: {s.colour} for lab, s in zip(labels, run_styles(str(p) for p in (evo, grpo, vpo)))}
    assert len({c for cs in want.values() for c in cs}) == 3
    figures: list[Any] = []
    monkeypatch.setattr(report, "_png", lambda fig: figures.append(fig) or "")
    report.build_report([evo, grpo, vpo], tmp_path / "r.html", labels=labels, resamples=50)
    assert len(figures) >= 6
    for fig in figures:  # curves, field metrics, bars, components, reward-space scatter, evolve: each one
        got = {lab: cols for lab, cols in _colours_by_label(fig, labels).items() if cols}
        assert got and got == {lab: want[lab] for lab in got}, [ax.get_title() for ax in fig.axes]
        assert set(got) in ({"EVO"}, {"GRPO", "VPO"})  # every run the figure draws was looked at
        plt.close(fig)
    # `vpo plot` of the same evaluation runs: each run's colour follows its folder, lines and bars alike
    g, v = run_styles([str(grpo), str(vpo)])
    for fig in (best_at_k_figure([load_run(grpo), load_run(vpo)], labels=["GRPO", "VPO"]),
                metric_figure(load_plot_runs([grpo, vpo], ["GRPO", "VPO"]), ["best", "diversity", "mean"])):
        assert _colours_by_label(fig, ["VPO", "GRPO"]) == {"GRPO": {g.colour}, "VPO": {v.colour}}
        plt.close(fig)


def test_bars_keep_a_runs_colour_when_an_evolve_run_comes_first(evolve_runs, demo_like_runs) -> None:
    """Bar panels draw evaluation runs only; the run keeps the colour of its line, not the next one."""
    runs = load_plot_runs([evolve_runs[1], demo_like_runs[0]], ["EVO", "PLAIN"])
    fig = metric_figure(runs, ["evolve", "mean"])
    got = _colours_by_label(fig, ["EVO", "PLAIN"])
    evo, plain = run_styles([str(evolve_runs[1]), str(demo_like_runs[0])])
    assert got == {"EVO": {evo.colour}, "PLAIN": {plain.colour}}
    plt.close(fig)


def test_an_all_zero_evolve_panel_gets_the_unit_axis(tmp_path: Path) -> None:
    """A search that never solves a problem: its solved panel reads 0 on a 0..1 axis with a note,
    in `vpo plot` as in the report (both draw with vpo_harness.reports.evolve.draw)."""
    from vpo_harness.reports.evolve import draw, load_evolve
    from tests.reports.conftest import write_evolve

    folder = write_evolve(tmp_path / "evo-none", 0.0, limit=2, iterations=2)
    fig, axes = plt.subplots(1, 2)
    draw(axes, [load_evolve(folder, "none")])
    solved = axes[0]
    assert max(abs(v) for ln in solved.get_lines() for v in ln.get_ydata()) == 0.0  # the premise
    assert solved.get_ylim() == ZERO_YLIM and any(t.get_text() == ZERO_NOTE for t in solved.texts)
    plt.close(fig)
