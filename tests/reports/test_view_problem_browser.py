"""`vpo view` shows what was asked, in headless Chromium (see test_view_browser.py for the driver), at
1024 and 1440 px: a Maze problem page draws the grid and overlays a candidate's route on click;
an evolve run's curves are the search's with its plain-sampling baseline line (no best@k); twelve
runs get twelve colours; no table column is clipped at 1024 px. Screenshots go to $VPO_VIEW_SHOTS."""
from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from vpo_harness.reports.view import make_server
from vpo_harness.reports.view.api import ViewData
from tests.reports.test_view_browser import CHROMIUM, Browser, _href

pytestmark = pytest.mark.integration

#: no visible box may be scrolled sideways (a scroll box hides the columns past its edge), and the
#: candidates' columns keep room for a word: no one-word header, score or badge is broken over lines
#: (the lineage panel once squeezed them to one letter per line)
CLIPPED = r"""(() => {
  const out = [];
  for (const e of document.querySelectorAll('#app *')) {
    const s = getComputedStyle(e);
    if (e.offsetParent !== null && ['auto', 'scroll'].includes(s.overflowX) && e.scrollWidth > e.clientWidth + 1)
      out.push(`${e.tagName.toLowerCase()}#${e.id}.${e.className}: ${e.scrollWidth} > ${e.clientWidth}`);
  }
  for (const th of document.querySelectorAll('#app table th')) {
    const b = th.getBoundingClientRect();
    if (th.offsetParent !== null && b.right > document.documentElement.clientWidth + 1) out.push(`th ${th.textContent} ends at ${b.right}`);
  }
  for (const c of document.querySelectorAll('table.cands th, table.cands td.scalar, table.cands .badge')) {
    const text = c.textContent.trim(), r = document.createRange();
    r.selectNodeContents(c);
    if (c.offsetParent !== null && text && !/\s/.test(text) && r.getClientRects().length > 1) out.push(`a word broken in a cell: ${text}`);
  }
  return out;
})()"""


@pytest.fixture(scope="module")
def many(tmp_path_factory, evolve_runs):
    """Five maze runs, a seed group of two (three rows), two evolve runs with their baselines: twelve."""
    from vpo_harness.harness.core.seed_groups import register_seeds
    from tests.reports.conftest import write_run

    root = tmp_path_factory.mktemp("many")
    mazes = [write_run(root / f"maze-{i:02d}", f"hf:m{i}", 4 if i == 0 else 2, 2 if i == 0 else 1, 3 if i == 0 else 1,
                       spread=0.6, seed=i) for i in range(5)]
    for s in (0, 1):
        write_run(root / "group" / f"seed-{s}", "hf:g", 2, 1, 2, spread=0.6, seed=20 + s, run_seed=s)
    register_seeds(root / "group", [0, 1], {})
    srv = make_server([root, evolve_runs[0].parent], port=0)
    srv.start_background()
    yield srv, mazes, evolve_runs
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.fail("no chromium on PATH: run scripts/install.sh --dev (apt-get install chromium)")
    b = Browser(tmp_path_factory.mktemp("chromium") / "profile")
    yield b
    b.close()


@pytest.mark.parametrize("width", [1024, 1440])
def test_the_viewer_shows_what_was_asked(many, browser, width):
    srv, mazes, evolve = many
    browser.set_width(width)
    try:
        # a Maze problem: the grid drawn, and a candidate's route overlaid on click
        pid = json.loads((mazes[0] / "samples.jsonl").read_text().splitlines()[0])["problem_id"]
        browser.open(srv.url + _href("problem", run=str(mazes[0]), pid=pid), "problem")
        assert browser.js("document.querySelectorAll('#maze-grid rect.cell').length") == 81
        assert browser.js("document.querySelectorAll('#maze-grid rect.cell.wall').length") > 0
        assert browser.js("document.querySelectorAll('#maze-grid polyline.route').length") == 0
        want = ViewData([mazes[0].parent]).problem(str(mazes[0]), pid)["chains"][1]["candidates"][1]["route"]
        browser.js("document.querySelector('button.show-route[data-chain=\"1\"][data-answer=\"1\"]').click()")
        browser.wait("document.querySelector('#maze-grid polyline.route')", "the route drawn")
        pts = browser.js("document.querySelector('#maze-grid polyline.route').getAttribute('points')").split()
        cell = lambda p: [round((float(p.split(',')[1]) - 17) / 34), round((float(p.split(',')[0]) - 17) / 34)]  # noqa: E731
        assert [cell(p) for p in pts] == want["cells"]
        assert browser.js("document.getElementById('maze-grid').dataset.route") == "chain 1 · answer 1"
        assert "reaches E" in browser.js("document.getElementById('maze-caption').textContent") or not want["reached_exit"]
        browser.screenshot(f"maze-problem-{width}")
        assert browser.js(CLIPPED) == [], "problem page"
        # an evolve run's lineage page: its node panel keeps its columns readable
        epid = json.loads((evolve[0] / "samples.jsonl").read_text().splitlines()[0])["problem_id"]
        browser.open(srv.url + _href("problem", run=str(evolve[0]), pid=epid), "problem")
        browser.js("document.getElementById('reveal-best').click()")
        browser.wait("document.getElementById('node-panel').dataset.state === 'ready'", "the best node")
        # the best program's route, from its node panel, on the problem's grid
        browser.js("document.querySelector('#node-panel button.show-route').click()")
        browser.wait("document.querySelector('#maze-grid polyline.route')", "the node's route")
        node_chain = browser.js("document.querySelector('#node-panel article.chain').dataset.chain")
        assert browser.js("document.getElementById('maze-grid').dataset.route") == f"chain {node_chain} · answer 0"
        browser.screenshot(f"evolve-problem-{width}")
        assert browser.js(CLIPPED) == [], "lineage page"
        # the run page of the evolve run and of a maze run
        for run in (evolve[0], mazes[0]):
            browser.open(srv.url + _href("run", id=str(run)), "run")
            assert browser.js(CLIPPED) == [], f"run page of {run.name}"
            if run == evolve[0]:  # solved vs candidates, and plain sampling at every budget
                assert browser.js("document.querySelector('#run-evolve polyline.baseline').getAttribute('points')"
                                  ".split(' ').length") == 8
                shown = browser.js("[...document.querySelectorAll('#run-metrics tr')].map(r => r.dataset.metric)")
                assert "solved" in shown and not [m for m in shown if m and m.startswith(("best@", "pass@"))]
                browser.screenshot(f"run-evolve-{width}")
        browser.screenshot(f"run-{width}")
        # a seed group's page lists its seeds
        browser.open(srv.url + _href("run", id=str(mazes[0].parent / "group")), "run")
        assert browser.js("document.querySelectorAll('#seed-runs li').length") == 2
        from vpo_harness.harness.core.results import results_at
        from vpo_harness.reports.tables import format_estimate

        printed = format_estimate(results_at(mazes[0].parent / "group").best[1])  # what `vpo show` prints
        assert " s±" in printed
        assert browser.js("document.querySelector('#run-metrics tr[data-metric=\"best@1\"] td.num').textContent") == printed
        # an evolve run's curves: the search's, each with its plain-sampling line; no best@k / pass@k
        group = mazes[0].parent / "group"
        browser.open(srv.url + "#/curves?" + "&".join(f"id={quote(str(r), safe='')}" for r in (*evolve, mazes[0], group)), "curves")
        assert browser.js("document.querySelectorAll('#curve-solved-vs-candidates polyline.baseline').length") == 2
        budget = 8
        assert browser.js("document.querySelector('#curve-solved-vs-candidates polyline.baseline')"
                          ".getAttribute('points').split(' ').length") == budget
        assert browser.js("document.querySelectorAll('#curve-best-k polyline').length") == 2  # the maze run and the group
        browser.screenshot(f"curves-{width}")
        assert browser.js(CLIPPED) == [], "curves page"
        # twelve runs, twelve colours; the index fits
        browser.open(srv.url + "#/", "index")
        gid = json.dumps(str(mazes[0].parent / "group"))
        assert browser.js(f"document.querySelector('#runs tr[data-run=' + JSON.stringify({gid}) + '] td[data-col=best1]')"
                          ".textContent") == printed.replace(" ", "")  # the same cell, its parts stacked
        colours = browser.js("[...document.querySelectorAll('#runs tbody tr .swatch')].map(s => getComputedStyle(s).backgroundColor)")
        assert len(colours) == 12 and len(set(colours)) == 12
        browser.screenshot(f"index-{width}")
        assert browser.js(CLIPPED) == [], "index"
        assert browser.js("document.documentElement.scrollWidth") <= width
        assert browser.drain() == []
    finally:
        browser.set_width(1440)


@pytest.fixture(scope="module")
def task_site(tmp_path_factory):
    """One-chain runs of LiveCodeBench, MuSiQue and ToolRL on a real problem of each (local data)."""
    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.core.store import RunStore

    root = tmp_path_factory.mktemp("tasks")
    out = {}
    for name in ("livecodebench", "musique", "toolrl"):
        p = get_task(name).load("test", limit=1)[0]
        store = RunStore(root / name)
        store.init({"format": 2, "identity": {"task": {"name": name, "split": "test", "options": {}, "prompt_style": "full"},
                                              "model": {"spec": "mock:words"}, "sampling": {"n": 1, "m": 1},
                                              "components": ["c0"], "problems": {"n": 1, "ids": [p.id]}}})
        store.append({"problem_id": p.id, "chain_index": 0, "text": "alpha", "answers": ["alpha"], "rewards": [[0.0]],
                      "scalars": [0.0], "passed": [False], "error": None})
        store.close()
        out[name] = (root / name, p)
    srv = make_server([root], port=0)
    srv.start_background()
    yield srv, out
    srv.shutdown()
    srv.server_close()


def test_each_task_shows_its_problem(task_site, browser):
    srv, runs = task_site
    browser.set_width(1024)
    try:
        titles = "[...document.querySelectorAll('#problem-view .pblock h3')].map(h => h.textContent)"
        folder, p = runs["livecodebench"]
        browser.open(srv.url + _href("problem", run=str(folder), pid=p.id), "problem")
        assert browser.js(titles)[0].startswith("statement: ")
        assert p.data["content"][:60] in browser.js("document.querySelector('#problem-view .statement').textContent")
        assert browser.js("document.querySelectorAll('#problem-view table.ptable tbody tr').length") == min(5, len(p.data["tests"]))
        assert browser.js("[...document.querySelectorAll('#prompt pre')].pop().textContent") == get_prompt(folder, p)
        browser.screenshot("problem-livecodebench")
        assert browser.js(CLIPPED) == []
        folder, p = runs["musique"]
        browser.open(srv.url + _href("problem", run=str(folder), pid=p.id), "problem")
        assert browser.js("[...document.querySelectorAll('ol.paras li.gold-hop')].map(li => +li.dataset.idx)") == \
            sorted(p.data["support"], key=[q["idx"] for q in p.data["paragraphs"]].index)
        assert browser.js("document.querySelectorAll('ol.paras li').length") == len(p.data["paragraphs"])
        browser.screenshot("problem-musique")
        folder, p = runs["toolrl"]
        browser.open(srv.url + _href("problem", run=str(folder), pid=p.id), "problem")
        assert json.loads(browser.js("[...document.querySelectorAll('#problem-view .pblock')].find(b => "
                                     "b.querySelector('h3').textContent.startsWith('gold call')).querySelector('pre').textContent")) \
            == p.data["gold_calls"]
        assert "tools" in browser.js(titles)[0]
        browser.screenshot("problem-toolrl")
        assert browser.js(CLIPPED) == []
        assert browser.drain() == []
    finally:
        browser.set_width(1440)


def get_prompt(folder, problem) -> str:
    """The last message the runner sends for the run's problem."""
    from vpo_harness.harness.core.store import RunStore
    from vpo_harness.reports.view.problems import find_problem, prompt_of

    config = RunStore(folder).read_config()
    task, p = find_problem(config, problem.id)
    return prompt_of(config, task, p)[-1]["content"]
