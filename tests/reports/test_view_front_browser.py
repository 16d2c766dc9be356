"""`vpo view`'s front of an evolve run, in a real headless Chromium (tests/reports/test_view_browser.py
drives it): every candidate in the plane of two chosen reward components, the candidates no other
beats on every component drawn as the front, and a click on a dot opens that candidate's lineage
(the path in the graph and in the plane) and its diff; at 1024 and 1440 px without horizontal
overflow, and without a console error."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vpo_harness.harness.core.metrics import nondominated
from tests.reports.test_view_browser import _href, browser, site  # noqa: F401  (fixtures)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("width", [1024, 1440])
def test_front_in_two_chosen_components_with_lineage_on_click(site, browser, runs, width):  # noqa: F811
    rows = [json.loads(ln) for ln in (runs["evolve"] / "samples.jsonl").read_text().splitlines()]
    pid = rows[0]["problem_id"]
    mine = [r for r in rows if r["problem_id"] == pid]
    names = json.loads((runs["evolve"] / "config.json").read_text())["identity"]["components"]
    vecs = np.array([r["rewards"][0] for r in mine])
    want_front = {r["program_id"] for r, on in zip(mine, nondominated(vecs)) if on}
    browser.set_width(width)
    try:
        browser.open(site.url + _href("problem", run=str(runs["evolve"]), pid=pid), "problem")
        browser.wait("document.querySelector('#front-chart')", "the front chart")
        dots = browser.js("[...document.querySelectorAll('#front-chart circle.dot')].map(c => [c.dataset.node, c.classList.contains('front')])")
        assert sorted(d for d, _ in dots) == sorted(r["program_id"] for r in mine)
        assert {d for d, on in dots if on} == want_front and 0 < len(want_front) < len(mine)
        # the axes: two components, chosen in the selects; the dots move to the chosen ones
        assert browser.js("[...document.querySelectorAll('#front-x option')].map(o => o.textContent)") == names
        browser.set_value("#front-x", "1", "change")
        browser.set_value("#front-y", "2", "change")
        labels = browser.js("[...document.querySelectorAll('#front-chart text.label')].map(t => t.textContent)")
        assert labels == [names[1], names[2]]
        xy = browser.js("Object.fromEntries([...document.querySelectorAll('#front-chart circle.dot')].map(c => [c.dataset.node, [+c.getAttribute('cx'), +c.getAttribute('cy')]]))")
        by_id = {r["program_id"]: r for r in mine}
        gold = sorted(xy, key=lambda k: xy[k][0])
        assert [by_id[k]["rewards"][0][1] for k in gold] == sorted(by_id[k]["rewards"][0][1] for k in gold)
        # a click on a child's dot (a real pointer event): its lineage in the graph and in the plane, its diff
        # (candidates with equal components share a place: the click lands on the top one of them,
        # which must be a child, for a lineage longer than one)
        child = None
        for r in sorted(mine, key=lambda r: -r["iteration"]):
            x, y = browser.centre(f"#front-chart circle[data-node=\"{r['program_id']}\"]")
            top = browser.js(f"document.elementFromPoint({x}, {y}).dataset.node")
            if by_id.get(top, {}).get("parent_id") in by_id:
                child = by_id[top]
                break
        assert child is not None
        browser.mouse("mousePressed", x, y, button="left", clickCount=1)
        browser.mouse("mouseReleased", x, y, button="left", clickCount=1)
        browser.wait(f"document.getElementById('node-panel').dataset.node === '{child['program_id']}' && "
                     "document.getElementById('node-panel').dataset.state === 'ready'", "the clicked candidate")
        path = [child["program_id"]]
        while by_id[path[0]]["parent_id"] in by_id:
            path.insert(0, by_id[path[0]]["parent_id"])
        on_path = browser.js("[...document.querySelectorAll('#front-chart circle.on-path')].map(c => c.dataset.node)")
        assert sorted(on_path) == sorted(path)
        assert browser.js("document.querySelector('#front-chart circle.picked').dataset.node") == child["program_id"]
        pts = browser.js("document.querySelector('#front-chart polyline.lineage-path').getAttribute('points').split(' ').length")
        assert pts == len(path)
        assert browser.js("document.querySelector('#lineage-graph path.best-path')") is not None
        assert browser.js("document.documentElement.scrollWidth") <= width
        browser.screenshot(f"front-{width}")
        assert browser.drain() == []
    finally:
        browser.set_width(1440)
