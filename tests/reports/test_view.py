"""`vpo view` without a browser: the catalog, the samples index, the JSON pages and the HTTP server
(headers, escaping, refusals). The browser side is tests/reports/test_view_browser.py."""
from __future__ import annotations

import itertools
import json
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.core.results import read_results
from vpo_harness.harness.core.store import dumps
from vpo_harness.reports.view import make_server
from vpo_harness.reports.view.api import NotFound, ViewData, diff
from vpo_harness.reports.view.catalog import find_run_folders, to_json_text
from vpo_harness.reports.view.samples import SampleIndex
from vpo_harness.harness.core.paths import child_pythonpath
from tests.reports.view_runs import HOSTILE, samples_of
from tests.harness.test_seed_groups import seedy  # noqa: F401  (a fixture)


def test_index_finds_every_run_with_status(data, runs, tmp_path):
    by_id = {r["id"]: r for r in data.runs()["runs"]}
    assert set(by_id) == {str(p) for p in runs.values()}
    assert {k: by_id[str(p)]["status"] for k, p in runs.items()} == {
        "vpo": "complete", "grpo": "complete", "evolve": "complete", "code": "partial",
        "broken_config": "damaged", "bad_line": "damaged"}
    vpo = by_id[str(runs["vpo"])]
    assert (vpo["task"], vpo["split"], vpo["pool"], vpo["reward_mode"], vpo["kind"]) == ("maze", "test", "4x2", "convex_bonus", "eval")
    assert vpo["model"] == "hf:checkpoints/maze-tiny-vpo" and vpo["name"] == "maze-vpo"
    res = read_results(runs["vpo"])
    assert vpo["metrics"]["best@4"]["mean"] == res.best[4].mean and vpo["metrics"]["diversity"]["mean"] == res.diversity.mean
    assert by_id[str(runs["evolve"])]["kind"] == "evolve" and "solved" in by_id[str(runs["evolve"])]["metrics"]
    # a partial run's metrics are over the rows stored so far
    code = by_id[str(runs["code"])]
    assert code["note"] == "no results.json (running or interrupted)" and code["metrics"]["best@1"]["n"] == 2
    assert code["reward_mode"] == "visible_tests=none"
    # one line, naming the file and line, for each damaged folder
    assert by_id[str(runs["broken_config"])]["note"].startswith(f"{runs['broken_config'] / 'config.json'}: line 1: not valid JSON")
    assert by_id[str(runs["broken_config"])]["short_note"].startswith("config.json: line 1")
    assert "samples.jsonl: line 2" in by_id[str(runs["bad_line"])]["note"]


def test_rows_appended_after_results_make_the_run_partial(runs, tmp_path):
    """results.json names the samples.jsonl size it was computed from; more rows since -> partial,
    with metrics over every stored row (the new chain's score counts)."""
    import shutil

    folder = tmp_path / "grown"
    shutil.copytree(runs["grpo"], folder)
    res = json.loads((folder / "results.json").read_text())  # as RunStore.write_results records it
    res["samples_bytes"] = (folder / "samples.jsonl").stat().st_size
    (folder / "results.json").write_text(json.dumps(res))
    before = ViewData([tmp_path], all_metrics=True).runs()["runs"][0]  # Maze: pass@1 is shown only on request
    assert before["status"] == "complete"
    rows = samples_of(folder)
    extra = {**rows[0], "chain_index": 99, "scalars": [1.0], "rewards": [[1.0, 1.0, 1.0, 1.0]], "passed": [True]}
    with open(folder / "samples.jsonl", "a") as fh:
        fh.write(dumps(extra) + "\n")
    after = ViewData([tmp_path], all_metrics=True).runs()["runs"][0]
    assert (after["status"], after["note"]) == ("partial", "results.json older than samples.jsonl")
    assert after["n_chains"] == len(rows) + 1
    assert after["metrics"]["pass@1"]["mean"] > before["metrics"]["pass@1"]["mean"]


def test_scan_skips_openevolve_checkpoints_and_finds_nested_runs(runs, tmp_path):
    folders = find_run_folders([runs["vpo"].parent])
    assert not any("openevolve" in p.parts for p in folders)
    nested = tmp_path / "sweep" / "a" / "b"
    nested.mkdir(parents=True)
    (nested / "config.json").write_text('{"format": 2, "identity": {}}')  # the harness's own record
    assert find_run_folders([tmp_path]) == [nested]
    assert find_run_folders([nested]) == [nested]  # a run folder given directly


def test_per_problem_metrics_average_to_the_run_metrics(data, runs):
    """Each problem's best@k / pass@k / diversity are the values results.json averages."""
    res = read_results(runs["grpo"])
    page = data.run(str(runs["grpo"]), per=1000)
    probs = page["problems"]
    assert len(probs) == page["total"] == res.n_problems == 6
    for k in res.ks:
        assert np.mean([p[f"best@{k}"] for p in probs]) == pytest.approx(res.best[k].mean)
        assert np.mean([p[f"pass@{k}"] for p in probs]) == pytest.approx(res.pass_at[k].mean)
    assert np.mean([p["diversity"] for p in probs]) == pytest.approx(res.diversity.mean)
    # and best@k of one problem is the brute-force mean over k-subsets of its pool
    rows = [r for r in samples_of(runs["grpo"]) if r["problem_id"] == probs[0]["problem_id"]]
    pool = [s for r in rows for s in r["scalars"]]
    brute = np.mean([max(c) for c in itertools.combinations(pool, 2)])
    assert probs[0]["best@2"] == pytest.approx(brute)
    assert len(set(pool)) > 1  # scores vary, so the check can fail


def test_problem_sorting_filter_and_paging(data, runs):
    run = str(runs["vpo"])
    best = data.run(run, sort="best@1", desc="1", per=1000)["problems"]
    assert [p["best@1"] for p in best] == sorted((p["best@1"] for p in best), reverse=True)
    page = data.run(run, per=4, page=1)
    assert page["total"] == 6 and len(page["problems"]) == 2
    assert [p["problem_id"] for p in data.run(run, q="0003")["problems"]] == ["maze-test-0003"]


def test_problem_page_holds_whole_chains_with_reward_vectors(data, runs):
    run, rows = str(runs["vpo"]), samples_of(runs["vpo"])
    pid = rows[0]["problem_id"]
    page = data.problem(run, pid)
    assert page["total_chains"] == 4 and page["per_chains"] == 25  # 50 candidates / m=2
    c0 = page["chains"][0]
    assert c0["text"] == HOSTILE and c0["candidates"][0]["answer"] == HOSTILE
    assert c0["candidates"][1]["reward"] == [[n, v] for n, v in zip(["completion", "gold", "diamond", "avoid_lava"],
                                                                     rows[0]["rewards"][1])]
    assert c0["line"] == 1
    small = data.problem(run, pid, per=4)  # 4 candidates a page: 2 chains of 2
    assert [c["chain_index"] for c in small["chains"]] == [0, 1]
    assert [c["chain_index"] for c in data.problem(run, pid, per=4, page=1)["chains"]] == [2, 3]
    grpo = str(runs["grpo"])
    by_chain = [max(k["scalar"] for k in c["candidates"]) for c in data.problem(grpo, pid)["chains"]]
    by_score = [max(k["scalar"] for k in c["candidates"]) for c in data.problem(grpo, pid, sort="score")["chains"]]
    assert by_score == sorted(by_chain, reverse=True) and by_score != by_chain  # the order changed
    with pytest.raises(NotFound):
        data.problem(run, "no-such-problem")


def test_code_details_and_failed_chains(data, runs):
    page = data.problem(str(runs["code"]), "lcb-b")
    assert [c["chain_index"] for c in page["chains"]] == [0, 1, 2]
    assert page["chains"][0]["candidates"][0]["details"]["verdicts"] == ["RE", "RE", "RE"]
    assert page["chains"][2]["error"] == "HTTP 500 after 3 attempts" and page["chains"][2]["candidates"] == []
    assert [c["chain_index"] for c in data.problem(str(runs["code"]), "lcb-b", show="errors")["chains"]] == [2]
    assert [c["chain_index"] for c in data.problem(str(runs["code"]), "lcb-b", show="passed")["chains"]] == [1]
    assert page["stats"]["errors"] == 1 and page["stats"]["candidates"] == 2


def test_lineage_matches_thesamples_of(data, runs):
    rows = samples_of(runs["evolve"])
    pid = rows[0]["problem_id"]
    mine = {r["program_id"]: r for r in rows if r["problem_id"] == pid}
    lin = data.lineage(str(runs["evolve"]), pid)
    assert {n["id"] for n in lin["nodes"]} == set(mine)
    for n in lin["nodes"]:
        r = mine[n["id"]]
        assert (n["parent"], n["island"], n["iteration"], n["score"]) == (r["parent_id"], r["island"], r["iteration"], r["scalars"][0])
        if r["parent_id"]:
            assert n["delta"] == pytest.approx(r["scalars"][0] - mine[r["parent_id"]]["scalars"][0])
    for p in lin["best_so_far"]:
        assert p["best"] == max(r["scalars"][0] for r in mine.values() if r["iteration"] <= p["iteration"])
    assert lin["threshold"] == read_results(runs["evolve"]).raw["thresholds"][pid]
    child = next(r for r in mine.values() if r["parent_id"] and r["answers"][0] != mine[r["parent_id"]]["answers"][0])
    node = data.node(str(runs["evolve"]), pid, child["program_id"])
    assert node["program"] == child["answers"][0] and node["parent_program"] == mine[child["parent_id"]]["answers"][0]
    assert node["diff"]["unit"] == "token" and node["diff"]["added"] + node["diff"]["removed"] > 0
    with pytest.raises(NotFound):
        data.lineage(str(runs["vpo"]), rows[0]["problem_id"])  # not an evolve run


def test_diff_by_line_and_by_move():
    d = diff("a\nb\nc\n", "a\nB\nc\n")
    assert d["unit"] == "line" and ["-", "b"] in d["lines"] and ["+", "B"] in d["lines"]
    t = diff("UP UP LEFT", "UP DOWN LEFT")
    assert t["unit"] == "token" and [op for op, _ in t["lines"] if op in "+-"] == ["-", "+"]
    assert diff("x", "x")["lines"] == []


def test_index_grows_with_the_file_and_the_latest_row_wins(tmp_path):
    path = tmp_path / "samples.jsonl"
    row = lambda c, s: {"problem_id": "p", "chain_index": c, "answers": ["a"], "rewards": [[s]], "scalars": [s],  # noqa: E731
                        "passed": [s > 0.5], "error": None}
    path.write_text(dumps(row(0, 0.1)) + "\n" + dumps(row(1, 0.2)) + "\n" + '{"problem_id": "p", "chain')
    ix = SampleIndex(path).refresh()
    assert [m.scalars for m in ix.rows] == [(0.1,), (0.2,)]  # a cut last line is not read yet
    with open(path, "a") as fh:
        fh.write('_index": 2, "scalars": [0.3], "rewards": [[0.3]], "passed": [false], "answers": ["b"]}\n')
        fh.write(dumps(row(0, 0.9)) + "\n")  # chain 0 retried: the later row wins
    ix.refresh()
    assert [(m.chain_index, m.scalars) for m in ix.rows] == [(0, (0.9,)), (1, (0.2,)), (2, (0.3,))]
    assert ix.read([0])[0]["scalars"] == [0.9] and ix.read([2])[0]["answers"] == ["b"]
    assert ix.problem_stats([1])["p"]["best"] == 0.9
    path.write_text(dumps(row(5, 0.5)) + "\n")  # replaced (shorter): indexed again from the start
    assert [m.chain_index for m in SampleIndex(path).refresh().rows] == [5]
    assert [m.chain_index for m in ix.refresh().rows] == [5]


def test_json_is_ascii_and_keeps_lone_surrogates():
    text = to_json_text({"t": HOSTILE, "x": float("nan"), "k": np.float64(0.5)})
    text.encode("ascii")
    assert "\\ud800" in text and "<script>" in text  # JSON, not HTML: the page writes it as text
    assert json.loads(text) == {"t": HOSTILE, "x": None, "k": 0.5}


@pytest.fixture(scope="module")
def site(runs):
    srv = make_server([runs["vpo"].parent], port=0)
    srv.start_background()
    yield srv
    srv.shutdown()
    srv.server_close()


def _get(url: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_server_headers_pages_and_refusals(site, runs):
    from urllib.parse import quote

    status, headers, body = _get(site.url)
    assert status == 200 and b'<script src="app.js" defer></script>' in body
    assert b"<script>" not in body  # no inline script: the CSP below would refuse it anyway
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = _get(site.url + "api/problem?run=" + quote(str(runs["vpo"]), safe="") + "&pid=maze-test-0000")
    assert status == 200 and headers["Content-Type"] == "application/json" and "Content-Security-Policy" in headers
    body.decode("ascii")
    assert json.loads(body)["chains"][0]["text"] == HOSTILE
    # ids are looked up among the runs found, never opened as paths
    status, _, body = _get(site.url + "api/run?id=" + quote("/etc", safe=""))
    assert status == 404 and "no run '/etc'" in json.loads(body)["error"]
    assert _get(site.url + "api/nope")[0] == 404 and _get(site.url + "../../etc/passwd")[0] == 404
    # a page served under another name (DNS rebinding) gets nothing
    status, _, body = _get(site.url + "api/runs", host=f"evil.example:{site.port}")
    assert status == 403 and "refused" in json.loads(body)["error"]
    assert _get(site.url + "api/runs", host=f"localhost:{site.port}")[0] == 200
    # a damaged run answers with its warning, not a 500
    status, _, body = _get(site.url + "api/run?id=" + quote(str(runs["bad_line"]), safe=""))
    assert status == 200 and json.loads(body)["run"]["warnings"] == [
        f"{runs['bad_line'] / 'samples.jsonl'}: line 2: not valid JSON; skipped"]


def test_loopback_only():
    with pytest.raises(ValueError, match="loopback only"):
        make_server(["."], host="0.0.0.0")


def test_cli_errors_are_one_line(tmp_path, capsys):
    from vpo_harness.harness.app.cli import main

    assert main(["view", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing: no such folder" in err[0]
    assert main(["view", str(tmp_path), "--host", "192.0.2.1"]) == 2
    assert "loopback only" in capsys.readouterr().err
    busy = make_server([tmp_path], port=0)
    try:
        assert main(["view", str(tmp_path), "--port", str(busy.port)]) == 2
        assert "pass --port 0" in capsys.readouterr().err
    finally:
        busy.server_close()


def _sigint_as_a_terminal_delivers_it() -> None:
    """In the child before exec: SIGINT neither ignored nor blocked, whatever the suite inherited."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_vpo_view_serves_until_interrupted(runs):
    """The command itself: prints where it serves, answers, and Ctrl-C ends it with status 0."""
    import os
    import re
    import signal
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "vpo_harness.harness.app.cli", "view", str(runs["vpo"].parent), "--port", "0"],
                            cwd=repo, env={**os.environ, "PYTHONPATH": child_pythonpath()}, stderr=subprocess.PIPE, text=True,
                            # a suite started in the background (`pytest &`, nohup) inherits SIGINT ignored, and so
                            # would the child, whose Ctrl-C would then do nothing (tests/search/test_serve.py does the same;
                            # a blocked SIGINT is inherited the same way)
                            preexec_fn=_sigint_as_a_terminal_delivers_it)
    import threading

    rest: list[str] = []
    try:
        line = proc.stderr.readline()
        m = re.search(r"(\d+) run folders under .*; serving (http://127\.0\.0\.1:\d+/)", line)
        assert m and int(m.group(1)) == len(runs), line
        # keep reading stderr: a child blocked on a full pipe could not exit, whatever its Ctrl-C does
        drain = threading.Thread(target=lambda: rest.extend(proc.stderr), daemon=True)
        drain.start()
        status, _, body = _get(m.group(2) + "api/runs")
        assert status == 200 and len(json.loads(body)["runs"]) == len(runs)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, "".join(rest)[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_hand_edited_folders_are_one_line_each(tmp_path):
    """Configs of the wrong shape and rows that are not UTF-8 or lack an integer chain index are named
    in one line each; the index and the run page still answer."""
    (tmp_path / "shape").mkdir()
    (tmp_path / "shape" / "config.json").write_text('{"identity": {"task": [1], "problems": {"n": "x"}}}')
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "config.json").write_text('{"identity": {}}')  # no components: the candidates are c0, c1, ...
    good = {"problem_id": "p", "chain_index": 2, "scalars": [0.5], "rewards": [[0.5]], "passed": [True],
            "answers": [None], "details": ["odd"]}
    (odd / "samples.jsonl").write_bytes(b'{"problem_id": "p", "chain_index": "x"}\n\xff\xfe\n'
                                        + dumps(good).encode() + b"\n")
    data = ViewData([tmp_path])
    rows = {Path(r["id"]).name: r for r in data.runs()["runs"]}
    assert rows["shape"]["status"] == "damaged"
    # the config check (harness/core/config_schema.py) names the first wrong-typed field
    assert rows["shape"]["note"] == f"{tmp_path / 'shape' / 'config.json'}: field 'identity.task': expected an object, got [1]"
    assert rows["odd"]["status"] == "damaged" and "line 1: field 'chain_index' is not an integer" in rows["odd"]["note"]
    page = data.run(str(odd))
    assert page["run"]["warnings"][1] == f"{odd / 'samples.jsonl'}: line 2: not valid UTF-8 (byte 0); skipped"
    cand = data.problem(str(odd), "p")["chains"][0]["candidates"][0]
    assert cand["reward"] == [["c0", 0.5]] and cand["details"] == {"value": "odd"}
    assert data.run(str(tmp_path / "shape"))["total"] == 0


def _checkpoint(folder: Path, zoo_marker: bool = False) -> None:
    """A model checkpoint as transformers saves it (its own config.json), with what a TRL run or the
    zoo's packaging writes beside it."""
    from transformers import LlamaConfig

    LlamaConfig(hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                vocab_size=32).save_pretrained(folder)
    (folder / ("vpo-zoo.json" if zoo_marker else "trainer_state.json")).write_text('{"global_step": 2}')


def test_only_runs_are_listed_and_a_lone_member_group_is_not_listed_twice(tmp_path, seedy):  # noqa: F811
    """A TRL output folder with a checkpoint and a zoo smoke run's packaged policy hold config.json
    files of their own: none is a run. A training-seed group of one member (a plain `vpo demo`) is not
    listed beside that member; a group of two is, and its seed links open the members."""
    from tests.harness.test_training_seed_groups import _group

    trl = tmp_path / "trl-out"
    _checkpoint(trl)
    _checkpoint(trl / "checkpoint-2")
    _checkpoint(tmp_path / "zoo-smoke" / "checkpoints" / "maze-tiny-vpo", zoo_marker=True)
    lone = _group(tmp_path / "demo", "maze-tiny-vpo", {0: "seedy:0.5"})
    pair = _group(tmp_path / "demo", "maze-tiny-grpo", {0: "seedy:0.3", 1: "seedy:0.6"})
    data = ViewData([tmp_path])
    listed = {r["id"]: r for r in data.runs()["runs"]}
    demo = tmp_path / "demo"
    assert set(listed) == {str(demo / "maze-tiny-vpo@0"), str(demo / "maze-tiny-grpo@0"),
                           str(demo / "maze-tiny-grpo@1"), str(pair)}
    assert str(lone) not in listed
    group = data.run(str(pair))["run"]
    assert group["model"] == "seedy:0.3, seedy:0.6"  # each training seed's policy, not seed 0's alone
    for s in group["seed_list"]:
        assert s["id"] in listed and s["model"] == f"seedy:{0.3 if s['seed'] == 0 else 0.6}"
        assert data.run(s["id"])["run"]["id"] == s["id"]  # the link opens the member
    # each member names its group, linked when the group is listed
    assert listed[str(demo / "maze-tiny-grpo@1")]["group"]["id"] == str(pair)
    assert listed[str(demo / "maze-tiny-grpo@1")]["group"]["listed"] is True
    assert "group" not in listed[str(demo / "maze-tiny-vpo@0")]  # its group of one is the run itself


def test_a_policy_given_by_path_is_named_by_its_last_folders():
    from vpo_harness.reports.view.catalog import model_label

    assert model_label("hf:/home/u/trl-out/run7/checkpoint-500") == "hf:.../run7/checkpoint-500"
    assert model_label("hf:maze-tiny-vpo") == "hf:maze-tiny-vpo"
    assert model_label("openai:Qwen/Qwen3-4B") == "openai:Qwen/Qwen3-4B"
    assert model_label("hf:/ckpt/a") == "hf:/ckpt/a"  # short enough already
