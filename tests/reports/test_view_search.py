"""`vpo view` search, live progress, per-run curves and the static export, without a browser (the
browser side is tests/reports/test_view_browser.py)."""
from __future__ import annotations

import json

import pytest

from vpo_harness.harness.core.store import RunStore, dumps
from vpo_harness.reports.colours import PALETTE, run_colour
from vpo_harness.reports.view.api import ViewData
from vpo_harness.reports.view.export import ExportError, choose, export_site, key_hash, page_key
from vpo_harness.reports.view.samples import SampleIndex
from vpo_harness.reports.view.search import QueryError, parse_query, search
from vpo_harness.reports.view.server import CSP, META_CSP
from tests.reports.view_runs import HOSTILE, samples_of

NAMES = ["completion", "gold", "diamond", "avoid_lava"]


def _brute(rows: list[dict], keep) -> set[tuple[str, int, int]]:
    return {(r["problem_id"], r["chain_index"], j) for r in rows for j in range(len(r.get("scalars") or [])) if keep(r, j)}


def _found(out: dict) -> set[tuple[str, int, int]]:
    return {(h["problem_id"], h["chain_index"], c["index"]) for h in out["hits"] for c in h["candidates"]}


def test_full_text_and_fields_match_a_brute_force_scan(data, runs):
    rows = samples_of(runs["vpo"])
    run = str(runs["vpo"])
    cases = {
        "left": lambda r, j: "left" in r["text"].lower() or "left" in r["answers"][j].lower(),
        "answer:left": lambda r, j: "left" in r["answers"][j].lower(),
        "text:route_2": lambda r, j: "route_2" in r["text"].lower(),
        "score>0.5": lambda r, j: r["scalars"][j] > 0.5,
        "gold>=1 is:failed": lambda r, j: r["rewards"][j][1] >= 1 and not r["passed"][j],
        "answer:down score<=0.5 problem:0002": lambda r, j: "down" in r["answers"][j].lower() and r["scalars"][j] <= 0.5
        and "0002" in r["problem_id"],
        '"lone surrogate"': lambda r, j: "lone surrogate" in r["text"] or "lone surrogate" in r["answers"][j],
    }
    for q, keep in cases.items():
        want = _brute(rows, keep)
        out = data.search(run, q, page=0)
        got = set()
        for page in range(0, 1 + out["total_chains"] // out["per"]):
            got |= _found(data.search(run, q, page=page))
        assert got == want, q
        assert out["total_candidates"] == len(want), q
    assert _brute(rows, cases["left"]) and _brute(rows, cases["score>0.5"])  # the cases are not empty
    assert len(_brute(rows, cases["score>0.5"])) < sum(len(r["scalars"]) for r in rows)  # and not everything


def test_snippet_marks_the_match_and_keeps_hostile_text_as_data(data, runs):
    out = data.search(str(runs["vpo"]), "surrogate")
    sn = out["hits"][0]["candidates"][0]["snippet"]
    assert sn["field"] == "answer" and sn["match"] == "surrogate"
    assert (sn["before"] + sn["match"] + sn["after"]).lstrip("…") in HOSTILE


def test_code_verdicts_errors_and_failed_generations(data, runs):
    run = str(runs["code"])
    assert _found(data.search(run, "verdict:TLE")) == {("lcb-a", 1, 0)}
    assert _found(data.search(run, "verdict:tl")) == set()  # a verdict matches whole
    assert _found(data.search(run, "error:zerodivision")) == {("lcb-b", 0, 0)}
    failed = data.search(run, "is:error")
    assert [(h["chain_index"], h["candidates"], h["error"]) for h in failed["hits"]] == [(2, [], "HTTP 500 after 3 attempts")]
    assert data.search(run, "http 500")["total_chains"] == 1  # a word finds a generation error too


def test_bad_queries_are_one_line(data, runs):
    for q, why in [("bogus:x", "unknown field 'bogus'"), ("zz>1", "'zz' is not a score this run has"),
                   ("score>abc", "'abc' is not a number"), ('"open', "No closing quotation"), ("is:maybe", "is: takes one of"),
                   ("", "type words")]:
        out = data.search(str(runs["vpo"]), q)
        assert why in out["query_error"] and "\n" not in out["query_error"] and out["hits"] == [], q
    with pytest.raises(QueryError):
        parse_query("answer:", NAMES)


def test_prefilter_skips_superseded_lines_and_handles_escapes(tmp_path):
    """A retried chain: the old line holds the word, the latest does not, so it is no hit. A phrase
    with a quote and a newline is looked for as the file stores it (JSON-escaped)."""
    path = tmp_path / "samples.jsonl"
    row = lambda c, text: {"problem_id": "p", "chain_index": c, "text": text, "answers": ["x"],  # noqa: E731
                           "rewards": [[0.5]], "scalars": [0.5], "passed": [False], "error": None}
    lines = [row(0, "needle here"), row(1, 'say "hi"\nthere'), row(0, "nothing"), row(2, "ÉCOLE Straße")]
    path.write_text("".join(dumps(r) + "\n" for r in lines))
    ix = SampleIndex(path).refresh()
    assert search(ix, parse_query("needle", ["c0"]), ["c0"])["total_chains"] == 0
    assert search(ix, parse_query("nothing", ["c0"]), ["c0"])["total_chains"] == 1
    hit = search(ix, parse_query("'\"hi\"\nthere'", ["c0"]), ["c0"])
    assert [h["chain_index"] for h in hit["hits"]] == [1]
    assert [h["chain_index"] for h in search(ix, parse_query("école", ["c0"]), ["c0"])["hits"]] == [2]  # non-ASCII case


def test_numbers_alone_never_read_the_file(runs, monkeypatch):
    ix = SampleIndex(runs["grpo"] / "samples.jsonl").refresh()
    import builtins

    real = builtins.open
    opened = []
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: (opened.append(str(p)), real(p, *a, **k))[1])
    out = search(ix, parse_query("score>=0.5 is:failed", NAMES), NAMES, per=0)
    assert out["total_chains"] > 0 and opened == []


def test_progress_counts_rows_against_the_expected_and_follows_appends(tmp_path):
    folder = tmp_path / "live"
    store = RunStore(folder)
    store.init({"format": 2, "identity": {"task": {"name": "maze", "split": "test"}, "model": {"spec": "mock:x"},
                                          "sampling": {"n": 4, "m": 1}, "components": ["a"],
                                          "problems": {"n": 2, "ids": ["p0", "p1"]}}})
    row = lambda pid, c: {"problem_id": pid, "chain_index": c, "text": "t", "answers": ["a"], "rewards": [[0.5]],  # noqa: E731
                          "scalars": [0.5], "passed": [False], "error": None}
    store.append(row("p0", 0))
    store.close()
    data = ViewData([tmp_path])
    p = data.progress(str(folder))
    assert (p["status"], p["rows"], p["expected_rows"]) == ("partial", 1, 8)
    with open(folder / "samples.jsonl", "a") as fh:
        fh.write(dumps(row("p0", 1)) + "\n" + dumps(row("p1", 0)) + "\n")
    q = data.progress(str(folder))
    assert q["rows"] == 3 and q["version"] > p["version"]
    assert data.runs()["runs"][0]["n_chains"] == 3  # the index's partial metrics follow too


def test_curve_series_are_the_run_metrics(data, runs):
    from vpo_harness.harness.core.results import read_results

    c = data.curve(str(runs["vpo"]))
    res = read_results(runs["vpo"])
    assert c["series"]["best@k"]["x"] == sorted(res.best) and c["partial"] is False
    assert c["series"]["best@k"]["mean"] == [res.best[k].mean for k in sorted(res.best)]
    assert c["series"]["best@k"]["stderr"] == [res.best[k].stderr for k in sorted(res.best)]
    ev = data.curve(str(runs["evolve"]))
    raw = read_results(runs["evolve"]).raw["evolve"]
    assert ev["series"]["solved_vs_candidates"]["mean"] == raw["solved_vs_candidates"]["mean"]
    assert data.curve(str(runs["code"]))["partial"] is True
    # one colour per run, distinct among the runs found, the same in the index and the curves
    colours = {r["id"]: r["colour"] for r in data.runs()["runs"]}
    assert len(set(colours.values())) == len(colours) and c["colour"] == colours[str(runs["vpo"])]


def test_run_colour():
    assert run_colour("runs/x") == run_colour("runs/x") and run_colour("runs/x") in PALETTE
    assert len({run_colour(f"runs/{i}") for i in range(50)}) > 1


def test_page_keys_and_hashes_are_those_of_dom_js():
    # FNV-1a 64 reference values ("" and "a"); dom.js computes the same (driven in the browser test)
    assert key_hash("") == "cbf29ce484222325" and key_hash("a") == "af63dc4c8601ec8c"
    assert page_key("problem", {"run": "/r/a b", "pid": "p&1", "page": 0}) == "problem?page=0&pid=p%261&run=%2Fr%2Fa%20b"


def test_export_writes_every_page_escaped_under_the_csp(data, runs, tmp_path):
    out = tmp_path / "site"
    chosen = choose(data, ["maze-vpo", "evolve"])
    stats = export_site(data, chosen, out)
    html = (out / "index.html").read_text()
    assert f'<meta http-equiv="Content-Security-Policy" content="{META_CSP}">' in html and 'data-export="1"' in html
    assert "<script>" not in html and "frame-ancestors" not in META_CSP and META_CSP in CSP.replace("; frame-ancestors 'none'", "")
    files = list((out / "data").iterdir())
    assert stats.pages == len(files) and stats.bytes == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())

    def page(route: str, **params) -> dict:
        key = page_key(route, params)
        text = (out / "data" / f"{key_hash(key)}.js").read_text()
        text.encode("ascii")
        head = f"window.VPO_PAGE({json.dumps(key)},"
        assert text.startswith(head) and text.endswith(");\n")
        return json.loads(text[len(head):-3])

    assert [r["id"] for r in page("runs")["runs"]] == [str(runs["vpo"]), str(runs["evolve"])]  # in the order asked
    pid = samples_of(runs["vpo"])[0]["problem_id"]
    chains = page("problem", run=str(runs["vpo"]), pid=pid, page=0, per=50, sort="chain", show="all")
    assert chains["chains"][0]["text"] == HOSTILE == data.problem(str(runs["vpo"]), pid)["chains"][0]["text"]
    assert page("problem", run=str(runs["vpo"]), pid=pid, page=0, per=50, sort="score", show="all")["chains"]
    # runs that share a problem: only the exported ones
    assert {r["id"] for r in page("runs-with", pid=pid)["runs"]} == {str(runs["vpo"]), str(runs["evolve"])}  # not grpo
    epid = samples_of(runs["evolve"])[0]["problem_id"]
    lin = page("lineage", run=str(runs["evolve"]), pid=epid)
    for n in lin["nodes"]:
        assert page("node", run=str(runs["evolve"]), pid=epid, id=n["id"])["node"]["evolve"]["program_id"] == n["id"]
    assert page("curve", id=str(runs["vpo"]))["series"]["best@k"]
    with pytest.raises(ExportError, match="not an empty folder"):
        export_site(data, chosen, out)
    with pytest.raises(ExportError, match="did you mean maze-vpo"):
        choose(data, ["maze-vpx"])


def test_cli_export_prints_its_size_and_bad_names_are_one_line(runs, tmp_path, capsys):
    from vpo_harness.harness.app.cli import main

    assert main(["view", str(runs["vpo"].parent), "--export", str(tmp_path / "s"), "--run", "maze-grpo"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "exported 1 run (" in err[0] and " MB; open file://" in err[0]
    assert main(["view", str(runs["vpo"].parent), "--export", str(tmp_path / "t"), "--run", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--run nope: no such run" in err[0]
    assert main(["view", str(runs["vpo"].parent), "--run", "maze-grpo"]) == 2
    assert "--run chooses the runs of --export" in capsys.readouterr().err


def test_pages_of_hits_cover_every_hit_once(data, runs):
    ix = data.index_of(data._entry(str(runs["vpo"])))
    q = parse_query("right", NAMES)
    whole = _found(search(ix, q, NAMES, per=1000))
    pages = [_found(search(ix, q, NAMES, page=p, per=5)) for p in range(6)]
    assert len(whole) > 5 and set().union(*pages) == whole and sum(map(len, pages)) == len(whole)
    assert data.search(str(runs["vpo"]), "right", page=1)["page"] == 1
