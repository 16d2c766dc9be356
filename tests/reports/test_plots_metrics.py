"""`vpo plot --metric` for every metric: the plotted numbers are the run's metrics, panels share
y-limits, an all-zero panel gets a 0..1 axis, candidate axes have whole-number ticks, the paper style
is column-sized and vector, and a bad metric name is one clear error."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.reports.plots import PLOT_METRICS, expand_metrics, load_plot_runs, metric_figure
from tests.harness.scripted import ScriptedBackend
from tests.harness.test_pools import FIXTURE, EntityBackend


@pytest.fixture(scope="module")
def eureqa_runs(tmp_path_factory) -> list[Path]:
    """Two EUREQA runs (chains of 3 answers vs single answers) with varied scores, passes and tokens."""
    from vpo_harness.benchmarks import get_task

    gold = {p.id: list(p.data["entities"]) for p in get_task("eureqa").load("test", path=str(FIXTURE))}
    out = []
    for n, m in ((3, 3), (8, 1)):
        cfg = RunConfig.of(task="eureqa", model=f"scripted:m{m}", data_path=str(FIXTURE), n=n, m=m, ks=(1, 2, 4, 8),
                           out=str(tmp_path_factory.mktemp("pm") / f"m{m}"), progress=False)
        out.append(run(cfg, backend=EntityBackend(gold, m)))
    return out


@pytest.fixture(scope="module")
def evolve_run(tmp_path_factory) -> Path:
    """An evolve folder as `vpo evolve` leaves it: the curves live in results.json."""
    folder = tmp_path_factory.mktemp("ev") / "evolve"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"kind": "evolve"}))
    # three candidates: autoscaling alone would tick 1.0, 1.25, 1.5, ... (fractional candidate counts)
    cur = lambda m: {"x": [1, 2, 3], "mean": m, "stderr": [0.05] * 3}  # noqa: E731
    (folder / "results.json").write_text(json.dumps({
        "kind": "evolve", "task": "eureqa", "model": "hf:some/evolver", "m": 1, "prompt_mode": "diff", "metrics": {},
        "evolve": {"best_vs_candidates": cur([0.2, 0.35, 0.6]), "solved_vs_candidates": cur([0.0, 0.1, 0.3])},
        "baseline": {"solved_vs_candidates": cur([0.0, 0.05, 0.15])}}))
    return folder


def _lines(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {ln.get_label(): (np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
            for ln in ax.get_lines() if not ln.get_label().startswith("_")}


def test_every_line_metric_plots_the_runs_own_numbers(eureqa_runs) -> None:
    runs = load_plot_runs(eureqa_runs, ["chains", "singles"])
    fig = metric_figure(runs, ["best", "pass", "pass^k", "cover", "tokens"])
    best, pss, phat, cover, tokens = fig.axes[:5]
    for path, lab in zip(eureqa_runs, ("chains (3x3)", "singles (8x1)")):
        res = load_run(path).summary
        ks = [k for k in res.ks if k <= res.pool_size]
        x, y = _lines(best)[lab]
        assert x.tolist() == ks and np.allclose(y, [res.best[k].mean for k in ks])
        assert np.allclose(_lines(pss)[lab][1], [res.pass_at[k].mean for k in ks])
        assert np.allclose(_lines(phat)[lab][1], [res.pass_all[k].mean for k in ks])
        cx, cy = _lines(cover)[lab]
        for tau, est in res.cover.items():  # the default taus are on the cover grid
            assert cy[np.argmin(np.abs(cx - tau))] == pytest.approx(est.mean)
        tx, ty = _lines(tokens)[lab]
        assert np.allclose(tx, res.best_vs_tokens["x"]) and np.allclose(ty, res.best_vs_tokens["mean"])
    # pass^k falls with k where pass@k rises: the panels are not the same curve twice
    y_pass, y_hat = _lines(pss)["singles (8x1)"][1], _lines(phat)["singles (8x1)"][1]
    assert y_pass[-1] > y_pass[0] and y_hat[-1] < y_hat[0]
    # one y-range for the whole figure
    assert len({tuple(np.round(ax.get_ylim(), 9)) for ax in fig.axes[:5]}) == 1
    legend = [t.get_text() for t in best.get_legend().get_texts()]
    assert "band: ±1 standard error" in legend
    plt.close(fig)


def test_bar_metrics_and_components(eureqa_runs) -> None:
    runs = load_plot_runs(eureqa_runs)
    names = expand_metrics("diversity,pareto,objective,mean,components", runs)
    from vpo_harness.benchmarks import get_task

    comps = list(get_task("eureqa").component_names)
    assert names[4:] == [f"component:{c}" for c in comps]
    fig = metric_figure(runs, names, share_y=False)
    res = load_run(eureqa_runs[0]).summary
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights[0] == pytest.approx(res.diversity.mean)
    assert [p.get_height() for p in fig.axes[3].patches][0] == pytest.approx(res.mean_scalar.mean)
    for ax, c in zip(fig.axes[4:], comps):
        assert ax.patches[0].get_height() == pytest.approx(res.components[c])
        assert c in ax.get_title()
    plt.close(fig)


def test_all_zero_panel_gets_a_unit_axis(tmp_path: Path) -> None:
    cfg = RunConfig.of(task="maze", model="scripted:x", limit=2, n=4, ks=(1, 2, 4), out=str(tmp_path / "z"),
                       progress=False)
    folder = run(cfg, backend=ScriptedBackend())
    fig = metric_figure(load_plot_runs([folder]), ["pass", "pass^k"])
    for ax in fig.axes[:2]:
        lo, hi = ax.get_ylim()
        assert lo < 0 < 1 <= hi < 1.2, (lo, hi)  # 0..1, not -0.04..0.04 around nothing
        assert any("0 for every run" in t.get_text() for t in ax.texts)
    plt.close(fig)


def test_evolve_curves_from_results_json_with_integer_candidate_ticks(evolve_run, eureqa_runs) -> None:
    runs = load_plot_runs([evolve_run, eureqa_runs[1]], ["evo", "plain"])
    fig = metric_figure(runs, ["evolve", "evolve-solved"])
    ev, solved = fig.axes[:2]
    lines = _lines(ev)
    assert np.allclose(lines["evo"][1], [0.2, 0.35, 0.6])
    res = load_run(eureqa_runs[1]).summary
    plain = lines["plain (8x1) (plain sampling: best@k)"]
    assert np.allclose(plain[1], [res.best[k].mean for k in plain[0].astype(int)])
    assert "evo (plain sampling)" in _lines(solved)  # the baseline curve the evolve run stored
    fig.canvas.draw()
    only = metric_figure(load_plot_runs([evolve_run]), ["evolve-solved"])
    only.canvas.draw()
    lo, hi = only.axes[0].get_xlim()
    ticks = [t for t in only.axes[0].get_xticks() if lo <= t <= hi]
    assert ticks == [1.0, 2.0, 3.0], ticks
    plt.close(only)
    fig.canvas.draw()
    for ax in (ev, solved):
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    plt.close(fig)


def test_paper_style_is_column_sized_and_vector(eureqa_runs, tmp_path: Path) -> None:
    pdf, svg = tmp_path / "f.pdf", tmp_path / "f.svg"
    assert main(["plot", *map(str, eureqa_runs), "--metric", "best", "--style", "paper", "--out", str(pdf)]) == 0
    assert main(["plot", *map(str, eureqa_runs), "--metric", "best,pass^k", "--style", "paper",
                 "--out", str(svg)]) == 0
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and b"/Subtype /Image" not in data  # drawn, not a bitmap
    assert b"/FontFile2" in data  # TrueType embedded (pdf.fonttype 42), editable text
    text = svg.read_text()
    assert "<text" in text and "<image" not in text  # svg.fonttype none: real text, no raster
    fig = metric_figure(load_plot_runs(eureqa_runs), ["best"], style="paper")
    w, h = fig.get_size_inches()
    assert w == pytest.approx(3.3) and h < w
    assert fig.axes[0].title.get_fontsize() >= 8
    plt.close(fig)


def test_bad_metric_is_one_clear_line(eureqa_runs, tmp_path: Path, capsys) -> None:
    assert main(["plot", str(eureqa_runs[0]), "--metric", "best,psychic", "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'psychic'" in err and "Traceback" not in err
    assert main(["plot", str(eureqa_runs[0]), "--metric", "component:nope", "--out", str(tmp_path / "x.png")]) == 2
    assert "no such reward component" in capsys.readouterr().err
    assert set(PLOT_METRICS) >= {"best", "pass", "pass^k", "cover", "tokens", "diversity", "pareto", "objective",
                                 "evolve"}


def text_problems(fig) -> list[str]:
    """What a reviewer would have to fix in a rendered figure, found with matplotlib's own text
    extents: a text box cut by the figure's edge, two text boxes that overlap, a legend over a
    panel's data area."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    W, H = fig.bbox.width, fig.bbox.height
    texts = list(fig.texts) + ([fig._suptitle] if fig._suptitle is not None else [])
    for lg in fig.legends:
        texts += lg.get_texts()
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        texts += ax.get_legend().get_texts() if ax.get_legend() else []
        for axis in (ax.xaxis, ax.yaxis):  # the tick labels drawn: those of ticks inside the view
            lo, hi = sorted(axis.get_view_interval())
            texts += [t.label1 for t in axis.get_major_ticks()
                      if t.label1.get_visible() and lo - 1e-9 <= t.get_loc() <= hi + 1e-9]
    boxes = [(t.get_text(), t.get_window_extent(r)) for t in texts if t.get_visible() and t.get_text().strip()]
    out = [f"{s!r} cut by the edge" for s, b in boxes if b.x0 < -0.5 or b.y0 < -0.5 or b.x1 > W + 0.5 or b.y1 > H + 0.5]
    for i, (s1, b1) in enumerate(boxes):
        for s2, b2 in boxes[i + 1:]:
            w = min(b1.x1, b2.x1) - max(b1.x0, b2.x0)
            h = min(b1.y1, b2.y1) - max(b1.y0, b2.y0)
            if w > 0.5 and h > 0.5:
                out.append(f"{s1!r} overlaps {s2!r}")
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for lg in legends:
        lb = lg.get_window_extent(r)
        for ax in fig.axes:
            if ax.get_visible() and ax.axison and lb.overlaps(ax.bbox):
                out.append(f"a legend lies over the panel {ax.get_title()!r}")
    return out


def test_paper_figures_have_no_clipped_or_overlapping_text(eureqa_runs) -> None:
    """`--style paper` as a reviewer takes it: no text cut or overlapping (matplotlib's text extents),
    one legend outside the panels with the labels exactly as given, colour-blind-safe colours, and
    each panel's y-limits fitted to its own curves. The README's panels and a bar figure are checked."""
    from vpo_harness.reports.colours import COLOUR_BLIND_SAFE

    labels = ["VPO (ours)", "GRPO baseline"]
    runs = load_plot_runs(eureqa_runs, labels, keep_labels=True)
    assert [r.label for r in runs] == labels
    for metrics in (["best", "pass^k", "cover", "tokens"], ["best", "diversity", "mean"], ["diversity"]):
        fig = metric_figure(runs, metrics, style="paper")
        assert text_problems(fig) == [], metrics
        assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
        shown = [t.get_text() for t in fig.legends[0].get_texts()]
        assert shown[:2] == labels, shown
        drawn = {matplotlib_colour(p) for ax in fig.axes for p in [*ax.lines, *ax.patches]}
        runs_drawn = {c for c in drawn if len({c[1:3], c[3:5], c[5:7]}) > 1}  # greys: guides, frames
        assert runs_drawn and runs_drawn <= {c.lower() for c in COLOUR_BLIND_SAFE}, drawn
        plt.close(fig)
    fig = metric_figure(runs, ["best", "tokens"], style="paper")
    for ax in fig.axes:  # the curves fill their panel: limits from the panel's own data
        ys = np.concatenate([ln.get_ydata() for ln in ax.lines])
        lo, hi = ax.get_ylim()
        assert (ys.max() - ys.min()) / (hi - lo) > 0.5, ax.get_title()
    plt.close(fig)


def matplotlib_colour(artist) -> str:
    from matplotlib.colors import to_hex

    if not hasattr(artist, "get_xydata"):  # a bar
        return to_hex(artist.get_facecolor())
    if artist.get_linestyle() in ("None", "none", ""):  # markers only (error-bar caps): their edge shows
        return to_hex(artist.get_markeredgecolor())
    return to_hex(artist.get_color())
