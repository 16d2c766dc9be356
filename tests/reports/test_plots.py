"""Plots say what their bands are, name pool shapes, tick every plotted k, clip nothing, and keep a
flat-zero metric readable."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.reports.plots import best_at_k_figure, plot_best_at_k, plot_diversity
from tests.harness.scripted import ScriptedBackend
from tests.harness.test_pools import FIXTURE, EntityBackend


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list:
    from vpo_harness.benchmarks import get_task

    gold = {p.id: list(p.data["entities"]) for p in get_task("eureqa").load("test", path=str(FIXTURE))}
    out = []
    for n, m in ((2, 3), (6, 1)):
        cfg = RunConfig.of(task="eureqa", model=f"scripted:m{m}", data_path=str(FIXTURE), n=n, m=m, ks=(1, 2, 4, 6),
                           out=str(tmp_path_factory.mktemp("plots") / f"m{m}"), progress=False)
        out.append(load_run(run(cfg, backend=EntityBackend(gold, m))))
    return out


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(plt.Text)]


def test_legend_names_pool_shapes_and_the_band(runs) -> None:
    fig = best_at_k_figure(runs, labels=["VPO", "GRPO"])
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend[:2] == ["VPO (2x3)", "GRPO (6x1)"]
    assert any("±1 standard error" in t for t in legend)
    plt.close(fig)


def test_a_tick_at_every_plotted_k(runs) -> None:
    fig = best_at_k_figure(runs)
    ax = fig.axes[0]
    assert [int(t) for t in ax.get_xticks()] == [1, 2, 4, 6]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "6"]
    plt.close(fig)


def test_flat_zero_metric_is_readable(tmp_path: Path) -> None:
    cfg = RunConfig.of(task="maze", model="scripted:x", limit=2, n=4, ks=(1, 2, 4), out=str(tmp_path / "z"),
                       progress=False)
    zero = load_run(run(cfg, backend=ScriptedBackend()))
    fig = best_at_k_figure([zero], metric="pass")
    lo, hi = fig.axes[0].get_ylim()
    assert lo < 0 < hi  # the zero line is inside the axes, not on its edge
    assert hi >= 1.0  # on the 0..1 scale of a rate, not a sliver around nothing
    assert any("is 0 for every run" in t for t in _texts(fig))
    plt.close(fig)


def test_nothing_is_clipped(runs, tmp_path: Path) -> None:
    long = ["a rather long label for the first policy", "and another long one for the second"]
    for path in (plot_best_at_k(runs, tmp_path / "b.png", labels=long),
                 plot_diversity(runs, tmp_path / "d.png", labels=long)):
        img = plt.imread(path)
        # bbox_inches="tight" grows the canvas to hold every label; a clipped label leaves ink on the border
        border = [img[0], img[-1], img[:, 0], img[:, -1]]
        assert all((b[..., :3] > 0.95).all() for b in border), path
