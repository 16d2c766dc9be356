"""`vpo view` in a real headless Chromium (Debian package ``chromium``, set up by
``scripts/install.sh --dev``) driven over the DevTools protocol (CDP, ``websocket-client``): open the
index, filter and sort it, click into a problem, read a candidate's reward vector, compare two runs
side by side, open a lineage node and its diff; search inside completions, watch a run gain rows,
overlay the curves of chosen runs, pan, zoom and click the lineage graph (a 200-iteration one too),
open an exported page from disk; every page at 1024 and 1440 px without horizontal overflow; no
console error, no CSP violation, and a hostile completion stays text. Screenshots go to
$VPO_VIEW_SHOTS when set (to look at them)."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from vpo_harness.reports.view import make_server
from tests.reports.view_runs import HOSTILE, big_lineage_run, live_row, live_run
from tests.harness.test_seed_groups import seedy  # noqa: F401  (a fixture)

pytestmark = pytest.mark.integration

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


class Browser:
    """One headless Chromium page over CDP: navigate, evaluate, wait, screenshot, and every console
    error, uncaught exception and failed load the page reported."""

    def __init__(self, profile: Path):
        import websocket

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--disable-extensions", "--hide-scrollbars", "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "--window-size=1400,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 120
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not start (rc={self.proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=120, suppress_origin=True)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.set_width(1440)

    def set_width(self, width: int) -> None:
        self.width = width
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=1000, deviceScaleFactor=1, mobile=False)

    def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        """A real pointer event at viewport coordinates (CSS px): press, move, release or wheel."""
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def centre(self, selector: str) -> tuple[float, float]:
        """Scroll the element into view and return its centre in viewport coordinates."""
        r = self.js(f"{{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
                    " const b = e.getBoundingClientRect(); [b.x + b.width / 2, b.y + b.height / 2]; }")
        return r[0], r[1]

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def js(self, expr: str) -> Any:
        res = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise AssertionError(f"{expr[:80]}: {res['exceptionDetails'].get('exception', {}).get('description')}")
        return res["result"].get("value")

    def set_value(self, selector: str, value: str, event: str = "input") -> None:
        """Type into an input or pick an option, then fire the event the page listens to."""
        self.js(f"{{ const e = document.querySelector({json.dumps(selector)}); e.value = {json.dumps(value)};"
                f" e.dispatchEvent(new Event({json.dumps(event)})); }}")

    def wait(self, cond: str, what: str = "", limit_s: float = 60) -> None:
        """Poll a JS condition (a generous deadline for a loaded machine, not a speed check)."""
        deadline = time.monotonic() + limit_s
        while not self.js(f"!!({cond})"):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or cond}; body: "
                                     f"{self.js('document.body.dataset.state')} {self.js('document.body.innerText.slice(0, 300)')}")
            time.sleep(0.05)

    def open(self, url: str, view: str) -> None:
        self.call("Page.navigate", url="about:blank")  # a fresh document each time, even for the same URL
        self.wait("location.href === 'about:blank'")
        self.call("Page.navigate", url=url)
        self.ready(view)

    def ready(self, view: str) -> None:
        self.wait(f"document.body && document.body.dataset.state === 'ready' && document.body.dataset.view === '{view}'",
                  f"the {view} view")

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('exception', {}).get('description')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p['type']}: {[a.get('value') for a in p.get('args', [])]}")
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']} ({p['entry'].get('source')}): {p['entry']['text']}")
        return out

    def drain(self) -> list[str]:
        """Read pending events (a short idle read), then return and forget the errors seen."""
        self.ws.settimeout(0.3)
        try:
            while True:
                self.events.append(json.loads(self.ws.recv()))
        except Exception:
            pass
        finally:
            self.ws.settimeout(120)
        errs = self.errors()
        self.events.clear()
        return errs

    def screenshot(self, name: str) -> Path | None:
        where = os.environ.get("VPO_VIEW_SHOTS")
        if not where:
            return None
        h = min(2600, int(self.js("document.documentElement.scrollHeight")))
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": self.width, "height": h, "scale": 1})["data"]
        out = Path(where) / f"{name}.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="module")
def site(runs):
    srv = make_server([next(iter(runs.values())).parent], port=0)
    srv.start_background()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory, request):
    if CHROMIUM is None:
        pytest.fail("no chromium on PATH: run scripts/install.sh --dev (apt-get install chromium)")
    b = Browser(tmp_path_factory.mktemp("chromium") / "profile")
    yield b
    b.close()


def _href(route: str, **params: str) -> str:
    from urllib.parse import quote

    return f"#/{route}?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())


def test_index_filters_and_sorts(site, browser, runs):
    browser.open(site.url + "#/", "index")
    rows = browser.js("[...document.querySelectorAll('#runs tbody tr')].map(r => [r.dataset.run, r.dataset.status])")
    assert dict(rows) == {str(runs["vpo"]): "complete", str(runs["grpo"]): "complete", str(runs["evolve"]): "complete",
                          str(runs["code"]): "partial", str(runs["broken_config"]): "damaged",
                          str(runs["bad_line"]): "damaged"}
    # a damaged folder is one row with its reason, not a broken page
    note = browser.js(f"document.querySelector('#runs tr[data-run=\"{runs['broken_config']}\"] .note').textContent")
    assert "config.json: line 1: not valid JSON" in note
    browser.screenshot("index")
    # filter: every word must appear
    browser.set_value("#filter", "maze grpo")
    assert browser.js("[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.run)") == [str(runs["grpo"])]
    assert browser.js("document.getElementById('count').textContent") == "1 of 6 runs"
    browser.set_value("#filter", "partial")
    assert browser.js("[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.run)") == [str(runs["code"])]
    browser.set_value("#filter", "")
    # sort by best@1, largest first; runs without it last
    browser.js("document.querySelector('#runs th[data-key=best1]').click()")
    shown = browser.js("[...document.querySelectorAll('#runs tbody tr')].map(r => r.querySelector('td[data-col=best1]').textContent)")
    vals = [float(s.split("±")[0]) for s in shown if s != "–"]
    assert len(vals) == 4 and vals == sorted(vals, reverse=True)  # the bad-line run has metrics over its good rows
    assert shown[4:] == ["–", "–"]  # the evolve run (best@k means nothing for a search) and the cut config.json
    assert browser.drain() == []


def test_problem_shows_reward_vector_and_hostile_text_stays_inert(site, browser, runs):
    browser.open(site.url + "#/", "index")
    browser.set_value("#filter", "maze-vpo")
    browser.js("document.querySelector('#runs tbody tr a').click()")
    browser.ready("run")
    assert browser.js("document.querySelectorAll('#problems tbody tr').length") == 6
    browser.screenshot("run")
    browser.js("document.querySelector('#problems tbody tr a').click()")
    browser.ready("problem")
    first = json.loads((runs["vpo"] / "samples.jsonl").read_text().splitlines()[0])
    assert browser.js("document.querySelector('h1').textContent") == first["problem_id"]
    card = "document.querySelector('article.chain[data-chain=\"0\"]')"
    vec = browser.js(f"[...{card}.querySelectorAll('tr.cand')[1].querySelectorAll('ul.reward li')]"
                     ".map(li => [li.dataset.component, li.querySelector('.val').textContent])")
    names = ["completion", "gold", "diamond", "avoid_lava"]
    assert vec == [[n, f"{v:.3f}"] for n, v in zip(names, first["rewards"][1])]
    assert browser.js(f"{card}.querySelectorAll('tr.cand')[1].querySelector('.scalar').textContent") == f"{first['scalars'][1]:.3f}"
    # the hostile completion is shown as text: no element made from it, no script ran, no request for its <img>
    raw = browser.js(f"{card}.querySelector('details.raw pre').textContent")
    assert raw.startswith("<script>window.__pwned = 1</script><img src=")
    assert "lone surrogate & <b>bold</b>" in raw
    assert browser.js(f"{card}.querySelector('pre.answer').textContent").startswith("<script>")
    assert browser.js("typeof window.__pwned") == "undefined"
    from vpo_harness.reports.view.server import SCRIPTS

    # only the app's own scripts, none made from the text
    assert browser.js("[...document.querySelectorAll('script')].map(s => s.getAttribute('src'))") == list(SCRIPTS)
    assert browser.js("document.querySelectorAll('#app img, #app b').length") == 0
    browser.js(f"{card}.querySelector('details.raw').open = true")
    browser.screenshot("problem")
    assert browser.drain() == []
    assert HOSTILE.startswith("<script>")


def test_code_verdicts_sandbox_notes_and_failed_chain(site, browser, runs):
    browser.open(site.url + _href("problem", run=str(runs["code"]), pid="lcb-a"), "problem")
    chain1 = "document.querySelector('article.chain[data-chain=\"1\"]')"
    assert browser.js(f"[...{chain1}.querySelectorAll('.verdict')].map(v => v.textContent)") == ["0:pass", "1:WA", "2:TLE"]
    assert browser.js(f"{chain1}.querySelector('.verdict:nth-child(3)').title") == "test 2: 0.030 s"
    assert "memory limit hit on test 2" in browser.js(f"{chain1}.querySelector('.details .note').textContent")
    browser.screenshot("code")
    browser.open(site.url + _href("problem", run=str(runs["code"]), pid="lcb-b"), "problem")
    chain0 = "document.querySelector('article.chain[data-chain=\"0\"]')"
    assert browser.js(f"[...{chain0}.querySelectorAll('.verdict')].map(v => v.textContent)") == ["0:RE", "1:RE", "2:RE"]
    assert browser.js(f"{chain0}.querySelector('.details details pre').textContent") == "Traceback: ZeroDivisionError"
    assert browser.js("document.querySelector('article.chain[data-chain=\"2\"] p.error').textContent") == \
        "generation failed: HTTP 500 after 3 attempts"
    # only the failed generations
    browser.set_value("select.show", "errors", "change")
    browser.wait("document.querySelectorAll('article.chain').length === 1 && document.getElementById('chains').dataset.state === 'ready'")
    assert browser.drain() == []


def test_side_by_side(site, browser, runs):
    pid = json.loads((runs["vpo"] / "samples.jsonl").read_text().splitlines()[0])["problem_id"]
    browser.open(site.url + _href("problem", run=str(runs["vpo"]), pid=pid), "problem")
    browser.wait(f"[...document.querySelectorAll('#compare-with option')].some(o => o.value === {json.dumps(str(runs['grpo']))})")
    browser.set_value("#compare-with", str(runs["grpo"]), "change")
    browser.ready("compare")
    counts = browser.js("[...document.querySelectorAll('#compare .col')].map(c => c.querySelectorAll('article.chain').length)")
    assert counts == [4, 8]  # 4x2 and 8x1 pools of the same problem
    browser.screenshot("compare")
    assert browser.drain() == []


def test_lineage_tree_node_and_diff(site, browser, runs):
    from vpo_harness.reports.view.api import ViewData

    rows = [json.loads(ln) for ln in (runs["evolve"] / "samples.jsonl").read_text().splitlines()]
    pid = rows[0]["problem_id"]
    browser.open(site.url + _href("problem", run=str(runs["evolve"]), pid=pid), "problem")
    mine = [r for r in rows if r["problem_id"] == pid]
    seeds = [r for r in mine if r["parent_id"] is None]
    assert browser.js("document.querySelectorAll('#tree > li').length") == len(seeds)
    # best so far: one point per iteration on the curve
    pts = browser.js("document.querySelector('#lineage polyline').getAttribute('points').split(' ').length")
    assert pts == len({r["iteration"] for r in mine})
    # expand a seed that has children, then open one of them
    browser.js("[...document.querySelectorAll('#tree > li > button.toggle')].find(b => !b.disabled).click()")
    child = browser.js("document.querySelector('#tree > li > ul > li > a.node').dataset.node")
    browser.js(f"document.querySelector('a.node[data-node=\"{child}\"]').click()")
    browser.wait(f"document.getElementById('node-panel').dataset.node === '{child}' && "
                 "document.getElementById('node-panel').dataset.state === 'ready'")
    want = ViewData([runs["evolve"]]).node(str(runs["evolve"]), pid, child)["diff"]
    shown = browser.js("[...document.querySelectorAll('#diff span')].map(s => s.className + ' ' + s.textContent)")
    assert len(shown) == len(want["lines"]) or (not want["lines"] and len(shown) == 1)
    for (op, text), got in zip(want["lines"], shown):
        assert got.startswith({"+": "add", "-": "del", "@": "hunk"}.get(op, "ctx"))
    row = next(r for r in mine if r["program_id"] == child)
    assert browser.js("document.querySelector('#node-panel h3').textContent").endswith(
        f"iteration {row['iteration']} · island {row['island']}")
    # the path to the best program opens its ancestors and selects it
    browser.js("document.getElementById('reveal-best').click()")
    best = max(r["scalars"][0] for r in mine)
    browser.wait("document.getElementById('node-panel').dataset.state === 'ready' && document.querySelector('a.node.selected')")
    sel = browser.js("document.querySelector('a.node.selected').dataset.node")
    assert next(r for r in mine if r["program_id"] == sel)["scalars"][0] == best
    browser.screenshot("lineage")
    assert browser.drain() == []


def test_damaged_samples_line_is_one_warning(site, browser, runs):
    browser.open(site.url + _href("run", id=str(runs["bad_line"])), "run")
    warns = browser.js("[...document.querySelectorAll('p.warn')].map(p => p.textContent)")
    assert warns == [f"{runs['bad_line'] / 'samples.jsonl'}: line 2: not valid JSON; skipped"]
    assert browser.js("document.querySelectorAll('#problems tbody tr').length") == 1
    assert browser.drain() == []


def test_the_error_check_sees_csp_violations_and_failed_loads(site, browser):
    """Guard the guard: markup parsed as HTML (what the app never does with data) is refused by the
    CSP (no inline handler, no inline script runs) and shows up in the errors the other tests assert
    empty."""
    browser.open(site.url + "#/", "index")
    browser.drain()
    browser.js("document.body.insertAdjacentHTML('beforeend', "
               "'<img src=\"/x-missing\" onerror=\"window.__pwned = 3\"><div onclick=\"window.__pwned = 4\" id=\"trap\"></div>')")
    browser.js("{ const s = document.createElement('script'); s.textContent = 'window.__pwned = 5'; document.body.append(s); }")
    browser.js("document.getElementById('trap').click()")
    browser.wait("[...document.images].some(i => i.complete)", "the broken image to settle")
    assert browser.js("typeof window.__pwned") == "undefined"
    errs = browser.drain()
    assert any("Content Security Policy" in e for e in errs), errs
    assert any("404" in e for e in errs), errs


def test_filters_and_pages_stay_in_the_address(site, browser, runs):
    browser.open(site.url + "#/", "index")
    browser.set_value("#filter", "maze vpo")
    assert browser.js("location.hash") == "#/?q=maze%20vpo"
    browser.open(site.url + "#/?q=partial", "index")  # a link with a filter opens filtered
    assert browser.js("[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.run)") == [str(runs["code"])]
    browser.open(site.url + _href("problem", run=str(runs["grpo"]), pid="maze-test-0000"), "problem")
    browser.set_value("select.sort", "score", "change")
    browser.wait("location.hash.includes('sort=score')")
    browser.open(browser.js("location.href"), "problem")  # reloaded: still best score first
    assert browser.js("document.querySelector('select.sort').value") == "score"
    assert browser.drain() == []


# ---- search, live runs, overlaid curves, the lineage graph, export, widths ---------------------------
def test_search_inside_completions(site, browser, runs):
    browser.open(site.url + _href("run", id=str(runs["vpo"])), "run")
    browser.set_value("#search-q", "answer:script", "change")
    browser.wait("document.getElementById('search-results').dataset.state === 'ready'", "search results")
    assert browser.js("document.getElementById('search-count').textContent") == "1 chain (1 candidate) of 24 match"
    hit = "document.querySelector('#search-hits tr.hit')"
    assert browser.js(f"[{hit}.dataset.problem, {hit}.dataset.chain]") == ["maze-test-0000", "0"]
    assert browser.js(f"{hit}.querySelector('mark').textContent") == "script"
    assert browser.js(f"{hit}.querySelector('.snippet').textContent").startswith("answer: <script>window.__pwned")
    assert browser.js("typeof window.__pwned") == "undefined" and browser.js("document.querySelectorAll('#app img').length") == 0
    assert "search=answer%3Ascript" in browser.js("location.hash")  # a link to the search opens it again
    browser.screenshot("search")
    # a range and a flag; then a query that cannot be read is one line next to the box
    browser.set_value("#search-q", "gold>=1 is:failed", "change")
    browser.wait("document.getElementById('search-results').dataset.q === 'gold>=1 is:failed'", "the second search")
    rows = [json.loads(ln) for ln in (runs["vpo"] / "samples.jsonl").read_text().splitlines()]
    want = sum(1 for r in rows for j in range(len(r["scalars"])) if r["rewards"][j][1] >= 1 and not r["passed"][j])
    assert f"({want} candidates)" in browser.js("document.getElementById('search-count').textContent")
    browser.set_value("#search-q", "colour:red", "change")
    browser.wait("document.getElementById('search-results').dataset.state === 'error'")
    assert "unknown field 'colour'" in browser.js("document.getElementById('search-error').textContent")
    assert browser.drain() == []


@pytest.fixture(scope="module")
def live_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("liveruns")
    folder, store = live_run(root)
    big = big_lineage_run(root)
    srv = make_server([root], port=0)
    srv.start_background()
    yield srv, folder, store, big
    store.close()
    srv.shutdown()
    srv.server_close()


def test_a_live_run_gains_rows(live_site, browser):
    srv, folder, store, _ = live_site
    browser.open(srv.url + _href("run", id=str(folder)), "run")
    browser.wait("document.getElementById('live').dataset.rows === '2'", "the first progress")
    assert "2 of 12 rows stored (17%)" in browser.js("document.getElementById('live').textContent")
    assert browser.js("document.getElementById('run-metrics').dataset.partial") == "1"
    assert browser.js("document.querySelector('#run-metrics caption').textContent") == "partial over the rows stored so far"
    assert browser.js("document.querySelectorAll('#problems tbody tr[data-problem=\"live-0\"] td')[1].textContent") == "2"
    for c in range(2, 4):
        store.append(live_row("live-0", c))
    store.append(live_row("live-1", 0))
    store.flush()
    browser.wait("document.getElementById('live').dataset.rows === '5'", "the new rows", limit_s=60)
    browser.wait("document.querySelectorAll('#problems tbody tr[data-problem=\"live-0\"] td')[1].textContent === '4'",
                 "the problem table redrawn")
    assert browser.js("document.querySelectorAll('#problems tbody tr[data-problem=\"live-1\"] td')[1].textContent") == "1"
    browser.screenshot("live")
    # the problem page follows too
    browser.open(srv.url + _href("problem", run=str(folder), pid="live-1"), "problem")
    browser.wait("document.querySelectorAll('article.chain').length === 1 && document.getElementById('live').dataset.live === 'on'")
    store.append(live_row("live-1", 1))
    store.flush()
    browser.wait("document.querySelectorAll('article.chain').length === 2", "the new chain on the problem page")
    assert browser.drain() == []


def test_overlaid_curves_keep_each_runs_colour(site, browser, runs):
    browser.open(site.url + "#/", "index")
    picked = [runs["vpo"], runs["grpo"], runs["evolve"]]
    colours = {}
    for r in picked:
        row = f"document.querySelector('#runs tr[data-run=\"{r}\"]')"
        browser.js(f"{row}.querySelector('input.pick').click()")
        colours[str(r)] = browser.js(f"getComputedStyle({row}.querySelector('.swatch')).backgroundColor")
    assert browser.js("document.getElementById('picked').textContent") == "3 chosen"
    browser.js("document.getElementById('overlay').click()")
    browser.ready("curves")
    # best@k of the sampling runs; the evolve run draws its search curves instead (best@k over its
    # dependent candidates estimates nothing)
    lines = browser.js("[...document.querySelectorAll('#curve-best-k polyline, #curve-solved-vs-candidates "
                       "polyline:not(.baseline)')].map(p => [p.dataset.run, p.getAttribute('stroke')])")
    names = {str(r): r.name for r in picked}
    assert sorted(n for n, _ in lines) == sorted(names.values())
    for rid, name in names.items():
        stroke = dict(lines)[name]
        rgb = "rgb(" + ", ".join(str(int(stroke[i:i + 2], 16)) for i in (1, 3, 5)) + ")"
        assert rgb == colours[rid], (name, stroke, colours[rid])  # the same colour as the index swatch
    assert browser.js("document.querySelectorAll('#curve-best-k polygon.band').length") == 2  # a s.e. band per run
    assert browser.js("document.querySelectorAll('#curve-diversity circle').length") == 2
    assert browser.js("document.querySelectorAll('#curve-solved-vs-candidates polyline').length") == 1  # evolve only
    # best@k of a run is drawn from its results: the first point's height matches best@1 on the axis
    from vpo_harness.harness.core.results import read_results

    ks = sorted(read_results(runs["vpo"]).best)
    pts = browser.js(f"document.querySelector('#curve-best-k polyline[data-run=\"{runs['vpo'].name}\"]').getAttribute('points')")
    assert len(pts.split()) == len(ks)
    browser.screenshot("curves")
    assert browser.drain() == []


def _graph_transform(browser) -> str:
    return browser.js("document.querySelector('#lineage-graph g.view').getAttribute('transform')")


def test_lineage_graph_pans_zooms_and_opens_a_node(site, browser, runs):
    rows = [json.loads(ln) for ln in (runs["evolve"] / "samples.jsonl").read_text().splitlines()]
    pid = rows[0]["problem_id"]
    mine = [r for r in rows if r["problem_id"] == pid]
    browser.open(site.url + _href("problem", run=str(runs["evolve"]), pid=pid), "problem")
    assert browser.js("document.querySelectorAll('#lineage-graph circle.gnode').length") == len(mine)
    # nodes are coloured by score: the best and the worst differ
    fill = lambda sel: browser.js(f"document.querySelector('#lineage-graph circle[data-node=\"{sel}\"]').getAttribute('fill')")  # noqa: E731
    best = max(mine, key=lambda r: r["scalars"][0])
    worst = min(mine, key=lambda r: r["scalars"][0])
    assert fill(best["program_id"]) != fill(worst["program_id"])
    # a real click on a child node opens it and its diff
    child = next(r for r in mine if r["parent_id"])
    x, y = browser.centre(f"#lineage-graph circle[data-node=\"{child['program_id']}\"]")
    browser.mouse("mousePressed", x, y, button="left", clickCount=1)
    browser.mouse("mouseReleased", x, y, button="left", clickCount=1)
    browser.wait(f"document.getElementById('node-panel').dataset.node === '{child['program_id']}' && "
                 "document.getElementById('node-panel').dataset.state === 'ready'", "the clicked node")
    assert browser.js("document.querySelector('#lineage-graph circle.selected').dataset.node") == child["program_id"]
    assert browser.js("document.getElementById('diff') !== null")
    # wheel zooms, drag pans
    before = float(browser.js("document.getElementById('lineage-graph').dataset.zoom"))
    gx, gy = browser.centre("#lineage-graph")
    browser.mouse("mouseWheel", gx, gy, deltaX=0, deltaY=-300)
    browser.wait(f"+document.getElementById('lineage-graph').dataset.zoom > {before}", "zoom in")
    t0 = _graph_transform(browser)
    browser.mouse("mousePressed", gx, gy + 60, button="left", clickCount=1)
    browser.mouse("mouseMoved", gx + 80, gy + 70, button="left")
    browser.mouse("mouseReleased", gx + 80, gy + 70, button="left", clickCount=1)
    assert _graph_transform(browser) != t0
    browser.js("document.getElementById('graph-fit').click()")
    browser.js("document.getElementById('reveal-best').click()")
    browser.wait("document.querySelector('#lineage-graph path.best-path')")
    browser.screenshot("lineage-graph")
    assert browser.drain() == []


def test_a_200_iteration_lineage_draws_every_node(live_site, browser):
    srv, _, _, big = live_site
    browser.open(srv.url + _href("problem", run=str(big), pid="big-0"), "problem")
    n = sum(1 for _ in open(big / "samples.jsonl"))
    assert browser.js("document.querySelectorAll('#lineage-graph circle.gnode').length") == n == 201 * 4
    browser.js("document.querySelector('#lineage-graph circle[data-node=\"prog-150-2\"]')"
               ".dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    browser.wait("document.getElementById('node-panel').dataset.node === 'prog-150-2'", "a node of iteration 150")
    browser.screenshot("lineage-200")
    assert browser.drain() == []


def test_exported_pages_open_from_disk(runs, browser, tmp_path):
    from vpo_harness.reports.view.api import ViewData
    from vpo_harness.reports.view.export import choose, export_site

    data = ViewData([runs["vpo"].parent])
    export_site(data, choose(data, ["maze-vpo", "maze-grpo", "evolve"]), tmp_path / "site")
    url = (tmp_path / "site" / "index.html").as_uri()
    browser.open(url, "index")
    assert browser.js("location.protocol") == "file:"
    assert len(browser.js("[...document.querySelectorAll('#runs tbody tr')]")) == 3
    # dom.js hashes a key as export.py does (the page it asked for was found)
    from vpo_harness.reports.view.export import key_hash

    assert browser.js("window.VPO.keyHash('problem?page=0&pid=p%261')") == key_hash("problem?page=0&pid=p%261")
    browser.js(f"document.querySelector('#runs tr[data-run=\"{runs['vpo']}\"] a').click()")
    browser.ready("run")
    assert "search inside completions needs the server" in browser.js("document.getElementById('search').textContent")
    browser.js("document.querySelector('#problems tbody tr a').click()")
    browser.ready("problem")
    card = "document.querySelector('article.chain[data-chain=\"0\"]')"
    assert browser.js(f"{card}.querySelector('pre.answer').textContent") == HOSTILE
    assert browser.js("document.querySelectorAll('#maze-grid rect.cell').length") == 81  # the problem, exported too
    assert browser.js("typeof window.__pwned") == "undefined" and browser.js("document.querySelectorAll('#app img, #app b').length") == 0
    browser.set_value("#compare-with", str(runs["grpo"]), "change")
    browser.ready("compare")
    browser.js("location.hash = '#/'")
    browser.ready("index")
    for r in (runs["vpo"], runs["grpo"]):
        browser.js(f"document.querySelector('#runs tr[data-run=\"{r}\"] input.pick').click()")
    browser.js("document.getElementById('overlay').click()")
    browser.ready("curves")
    assert browser.js("document.querySelectorAll('#curve-best-k polyline').length") == 2
    pid = json.loads((runs["evolve"] / "samples.jsonl").read_text().splitlines()[0])["problem_id"]
    browser.js(f"location.hash = {json.dumps(_href('problem', run=str(runs['evolve']), pid=pid))}")
    browser.ready("problem")
    node = browser.js("document.querySelector('#lineage-graph circle.gnode').dataset.node")
    browser.js(f"document.querySelector('#lineage-graph circle[data-node=\"{node}\"]').dispatchEvent(new MouseEvent('click', {{bubbles: true}}))")
    browser.wait(f"document.getElementById('node-panel').dataset.node === '{node}'", "an exported node")
    browser.screenshot("export-lineage")
    # the page is under the viewer's CSP: inline script refused (and reported)
    browser.js("{ const s = document.createElement('script'); s.textContent = 'window.__pwned = 9'; document.body.append(s); }")
    assert browser.js("typeof window.__pwned") == "undefined"
    errs = browser.drain()
    assert errs and all("Content Security Policy" in e for e in errs), errs


@pytest.mark.parametrize("width", [1024, 1440])
def test_every_page_fits_the_width(site, browser, runs, width):
    """From 1024 px up no page is wider than the window (a table may scroll inside its own box)."""
    pid = json.loads((runs["vpo"] / "samples.jsonl").read_text().splitlines()[0])["problem_id"]
    epid = json.loads((runs["evolve"] / "samples.jsonl").read_text().splitlines()[0])["problem_id"]
    pages = {"index": ("#/", "index"), "run": (_href("run", id=str(runs["vpo"])), "run"),
             "problem": (_href("problem", run=str(runs["vpo"]), pid=pid), "problem"),
             "compare": (_href("compare", a=str(runs["vpo"]), b=str(runs["grpo"]), pid=pid), "compare"),
             "lineage": (_href("problem", run=str(runs["evolve"]), pid=epid), "problem"),
             "curves": ("#/curves?" + "&".join(f"id={quote_id(r)}" for r in (runs["vpo"], runs["grpo"], runs["evolve"])), "curves")}
    browser.set_width(width)
    try:
        for name, (href, view) in pages.items():
            browser.open(site.url + href, view)
            assert browser.js("document.documentElement.scrollWidth") <= width, name
            if name == "index":  # every column of the index is inside the window
                right = browser.js("Math.max(...[...document.querySelectorAll('#runs th')].map(t => t.getBoundingClientRect().right))")
                assert right <= width, (name, right)
            if name == "compare":  # side by side: no cell of a candidate table spills into the next
                spill = browser.js("[...document.querySelectorAll('#compare table.cands td')].filter(td => td.scrollWidth > td.clientWidth + 1).length")
                assert spill == 0
            browser.screenshot(f"{name}-{width}")
        assert browser.drain() == []
    finally:
        browser.set_width(1440)


def quote_id(path: Path) -> str:
    from urllib.parse import quote

    return quote(str(path), safe="")


# ---- every link opens ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def link_site(tmp_path_factory, seedy):  # noqa: F811
    """Runs of every kind a link can lead between: two eval runs, an evolve run, a `vpo run --seeds`
    group (its seeds inside it) and two training-seed groups laid out as `vpo demo --seeds` writes
    them (members beside the groups, named by ``../../`` paths; one group of a single member)."""
    from vpo_harness.harness.app.cli import main
    from vpo_harness.harness.core.seed_groups import register_training_seeds
    from vpo_harness.harness.core.store import RunStore
    from tests.reports.view_runs import eval_runs, evolve_run

    def run(out: Path, model: str, *extra: str) -> Path:  # three problems: each is a link to click
        assert main(["run", "--task", "musique", "--split", "validation", "--model", model, "--limit", "3", "-n", "2",
                     "--no-progress", "--out", str(out), *extra]) == 0
        return out

    def demo_group(name: str, models: dict[int, str]) -> None:
        members = {ts: run(root / "demo" / (name if ts == 0 else f"{name}@{ts}"), m) for ts, m in models.items()}
        ident = {ts: RunStore(f).read_config()["identity"] for ts, f in members.items()}
        register_training_seeds(root / "demo" / "seeds" / name, members,
                                {ts: i["model"]["spec"] for ts, i in ident.items()}, ident[0])

    root = tmp_path_factory.mktemp("linkruns")
    eval_runs(root)
    evolve_run(root)
    run(root / "sampling-group", "seedy:0.5", "--seeds", "0,1")
    demo_group("maze-tiny-grpo", {0: "seedy:0.3", 1: "seedy:0.6"})
    demo_group("maze-tiny-vpo", {0: "seedy:0.5"})
    srv = make_server([root], port=0)
    srv.start_background()
    yield srv, root
    srv.shutdown()
    srv.server_close()


def _settled(browser, href: str) -> str:
    """Wait for the page of ``href`` to finish (ready, or the error state a failed request leaves)."""
    browser.wait(f"location.hash === {json.dumps(href)} && ['ready', 'error'].includes(document.body.dataset.state)",
                 f"the page of {href}")
    return browser.js("document.body.dataset.state")


def _go(browser, href: str) -> None:
    """Show ``href`` in the open document (a hash change, as the app's own links make)."""
    if browser.js("location.hash") != href:
        browser.js(f"document.body.dataset.state = 'stale'; location.hash = {json.dumps(href)}")
        _settled(browser, href)


def _crawl(browser, base: str) -> dict[str, str]:
    """Click every in-app link of every page reachable from the index, each distinct link once, and
    every lineage node of an evolve problem page; returns what was clicked -> the state its page
    ended in."""
    browser.open(base + "#/", "index")
    seen: dict[str, str] = {"#/": "ready"}
    queue = ["#/"]
    while queue:
        page = queue.pop(0)
        _go(browser, page)
        hrefs = browser.js("[...new Set([...document.querySelectorAll('a[href^=\"#/\"]')].map(a => a.getAttribute('href')))]")
        for href in hrefs:
            if href in seen:
                continue
            _go(browser, page)
            browser.js("document.body.dataset.state = 'stale'; [...document.querySelectorAll('a')]"
                       f".find(a => a.getAttribute('href') === {json.dumps(href)}).click()")
            seen[href] = _settled(browser, href)
            if seen[href] == "ready":
                queue.append(href)
        _go(browser, page)
        for node in browser.js("[...document.querySelectorAll('a.node')].map(a => a.dataset.node)") or []:
            browser.js(f"[...document.querySelectorAll('a.node')].find(a => a.dataset.node === {json.dumps(node)}).click()")
            browser.wait(f"document.getElementById('node-panel').dataset.node === {json.dumps(node)} && "
                         "['ready', 'error'].includes(document.getElementById('node-panel').dataset.state)", node)
            seen[f"{page} node {node}"] = browser.js("document.getElementById('node-panel').dataset.state")
    return seen


@pytest.mark.parametrize("width", [1024, 1440])
def test_every_link_opens(link_site, browser, width):
    """From the index, every link of every page (runs, seed groups of both kinds and their seeds, each
    member's group, problems, crumbs, side by side, lineage nodes) opens its page: no 404 from the
    server, no page left in its error state."""
    srv, root = link_site
    browser.set_width(width)
    try:
        browser.drain()
        seen = _crawl(browser, srv.url)
        errors = browser.drain()
    finally:
        browser.set_width(1440)
    failed = {h: s for h, s in seen.items() if s != "ready"}
    assert not failed, failed
    assert not [e for e in errors if "404" in e], errors
    assert errors == []
    # the crawl reached what the issue found dead: a training seed's run from its group, and the group from it
    member = f"#/run?id={quote_id(root / 'demo' / 'maze-tiny-grpo@1')}"
    group = f"#/run?id={quote_id(root / 'demo' / 'seeds' / 'maze-tiny-grpo')}"
    sampling_seed = f"#/run?id={quote_id(root / 'sampling-group' / 'seed-1')}"
    assert {member, group, sampling_seed} <= set(seen), sorted(seen)[:20]
    assert any(" node " in h for h in seen)  # lineage nodes were clicked
    assert f"#/run?id={quote_id(root / 'demo' / 'seeds' / 'maze-tiny-vpo')}" not in seen  # a group of one is not listed
