"""``--protocol paper``: the paper's per-task settings in one flag, explicit flags winning, the
resolved values (not the preset's name) in the run's identity."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpo_harness.harness.eval.protocols import PAPER, PROTOCOLS, departures, describe, doc_table, resolve, setting_values


def res(task: str, **kw):
    base = dict(m=None, n=None, temperature=None, top_p=None, max_tokens=None, chat_template_args=None, task_args=None,
                prompt_style=None)
    base.update(kw)
    return resolve("paper", task, **base)


def test_paper_defaults_per_task():
    t = res("toolrl")
    assert (t["m"], t["n"], t["temperature"], t["top_p"], t["max_tokens"]) == (3, 17, 0.7, 0.95, 1024)
    assert t["chat_template_args"] == {"enable_thinking": False} and t["task_args"] == {"scale": "sum"}
    single = res("toolrl", m=1)  # the authors' 50 x 1, the prefill, the sum scale
    assert single["n"] == 50 and single["task_args"] == {"prefill_think": True, "scale": "sum"}
    assert res("maze")["top_p"] == 1.0 and res("eureqa")["max_tokens"] == 512
    assert res("musique")["task_args"] == {"hop_stratified": True}
    lcb = res("livecodebench")
    assert (lcb["temperature"], lcb["top_p"], lcb["max_tokens"], lcb["chat_template_args"]) == (0.8, 0.95, 3072, {})
    assert res("livecodebench", m=1)["max_tokens"] == 2048
    assert res("maze", m=4)["n"] == 8  # pool of 30 rounded up to whole chains
    assert {t: res(t)["prompt_style"] for t in PAPER} == {"maze": None, "musique": None, "eureqa": "paper",
                                                          "toolrl": None, "livecodebench": "paper"}
    assert set(PAPER) == {"maze", "musique", "eureqa", "toolrl", "livecodebench"}


def _own(task: str, m: int) -> list[str]:
    """The departure lines of a preset run, less the seeding one every task has."""
    return [line for line in departures("paper", task, res(task, m=m)) if " seeding " not in line]


def test_pools_are_the_authors_code_defaults_except_where_said():
    """Pools per task and m (vpo_tasks/*.py add_eval_args): Maze 10 x 3 or 10 x 1 (here 30 x 1, a
    departure), MuSiQue 10 x 3 or 30 samples, EUREQA 30 x 1 for every method (here 10 x 3 for m = 3, a
    departure), ToolRL 50 x 1 and the usage line's 17 x 3, LiveCodeBench 10 x 3 or 30 samples."""
    pools = {t: (res(t)["n"], res(t)["m"], res(t, m=1)["n"]) for t in PAPER}
    assert pools == {"maze": (10, 3, 30), "musique": (10, 3, 30), "eureqa": (10, 3, 30), "toolrl": (17, 3, 50),
                     "livecodebench": (10, 3, 30)}
    departs = {(t, m) for t in PAPER for m in (1, 3) if _own(t, m)}
    assert departs == {("maze", 1), ("eureqa", 3)}
    assert _own("maze", 1) == [
        "--protocol paper for maze (m=1) departs from the authors' code: pool 30 x 1, theirs 10 x 1 "
        "(`add_eval_args`: `add_sampling_eval_args(p, n_chains=10, ...)`); why: best@30 needs a pool of 30 for "
        "every method, as the paper's text compares them; the authors' choice: -n 10"]
    assert "the authors' choice: -m 1 -n 30" in _own("eureqa", 3)[0]
    seeding = departures("paper", "musique", res("musique"))
    assert len(seeding) == 1 and "seeding one seed per chain, theirs one seed per prompt" in seeding[0]
    assert "no flag gives the authors' choice" in seeding[0]
    # the authors average best@k over 4 evaluation seeds for the two small held-out sets
    assert {t: p.eval_seeds for t, p in PAPER.items()} == {"maze": 1, "musique": 1, "eureqa": 4, "toolrl": 4,
                                                           "livecodebench": 1}


def test_every_departure_holds_and_its_flags_give_the_authors_value():
    """A departure record that the preset does not make, or whose flags do not restore the authors'
    value, fails here: the printed lines and the doc's table are made from these records."""
    for task, p in PAPER.items():
        for m in (1, 3):
            for d in (d for d in p.departures if d.applies(m)):
                assert setting_values(res(task, m=m))[d.setting] != d.authors, (task, m, d.setting)
                assert d.source and d.why
                if d.restore is None:
                    continue
                kw = {"m": m, **d.restore}
                restored = res(task, **kw)
                assert setting_values(restored)[d.setting] == d.authors, (task, m, d.setting)
                assert not any(f" {d.setting} " in line for line in departures("paper", task, restored))


def test_flags_that_change_the_authors_values_are_printed_as_departures():
    lines = departures("paper", "toolrl", res("toolrl", m=1, temperature=1.0, task_args={"scale": "mean"}))
    assert ("--protocol paper for toolrl (m=1) departs from the authors' code: temperature 1.0 set by your flags, "
            "theirs 0.7 (the preset's value)") in lines
    assert any("task_args.scale mean set by your flags, theirs sum" in line for line in lines)
    lines = departures("paper", "livecodebench", res("livecodebench", prompt_style="full"))
    assert any("prompt style full set by your flags, theirs paper" in line for line in lines)


def test_the_protocol_line_matches_m_and_n():
    assert describe("paper", "maze", res("maze", m=1)).startswith(
        "--protocol paper for maze: m 1, n 30 (pool 30), temperature 0.7, top-p 1.0, max tokens 1024")
    assert "m 3, n 17 (pool 51)" in describe("paper", "toolrl", res("toolrl"))
    assert "m 2, n 4 (pool 8)" in describe("paper", "maze", res("maze", m=2, n=4))
    assert "max tokens 2048" in describe("paper", "livecodebench", res("livecodebench", m=1))


def test_the_docs_table_is_the_presets():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "qwen3_protocol.md").read_text(encoding="utf-8")
    begin, end = "<!-- protocol-table:", "<!-- /protocol-table -->"
    assert doc.count(begin) == 1 and doc.count(end) == 1
    block = doc.split(begin, 1)[1].split("\n", 1)[1].split(end, 1)[0].strip()
    assert block == doc_table(), "docs/qwen3_protocol.md: regenerate the table with vpo_harness.harness.eval.protocols.doc_table()"
    assert "| maze | 1 | 30 x 1 |" in block and "pool 30 x 1 (10 x 1; `-n 10`)" in block
    assert "| toolrl | 3 | 17 x 3 |" in block and "`scale=sum`" in block


def test_explicit_flags_win():
    t = res("toolrl", m=1, n=5, temperature=0.2, top_p=0.5, max_tokens=64,
            chat_template_args={"enable_thinking": True, "x": 1}, task_args={"prefill_think": False})
    assert (t["m"], t["n"], t["temperature"], t["top_p"], t["max_tokens"]) == (1, 5, 0.2, 0.5, 64)
    assert t["chat_template_args"] == {"enable_thinking": True, "x": 1}
    assert t["task_args"] == {"prefill_think": False, "scale": "sum"}  # merged over the preset's


def test_no_protocol_only_fills_m_and_n():
    got = resolve(None, "maze", m=None, n=None, temperature=None, top_p=None, max_tokens=None,
                  chat_template_args=None, task_args={"parse": "paper"})
    assert got == dict(m=1, n=10, temperature=None, top_p=None, max_tokens=None, chat_template_args={},
                       task_args={"parse": "paper"}, prompt_style=None)


def test_unknown_protocol_or_task_is_one_line():
    with pytest.raises(ValueError, match="no settings for task 'nope'"):
        res("nope")
    with pytest.raises(ValueError, match="unknown --protocol 'x'"):
        resolve("x", "maze", m=None, n=None, temperature=None, top_p=None, max_tokens=None,
                chat_template_args=None, task_args=None)


def test_cli_names_match():
    from vpo_harness.harness.app.commands.run import PROTOCOL_NAMES

    assert PROTOCOL_NAMES == PROTOCOLS


def test_vpo_run_records_the_resolved_settings(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from vpo_harness.harness.app.cli import main

    out = tmp_path / "paper"
    assert main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "--protocol", "paper",
                 "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "--protocol paper for maze: m 3, n 10 (pool 30)" in err
    assert "for maze (m=3) departs from the authors' code: seeding" in err and "pool" not in err.split("seeding")[1]
    rec = json.loads((out / "config.json").read_text())
    s = rec["identity"]["sampling"]
    assert (s["m"], s["n"], s["temperature"], s["top_p"], s["max_tokens"]) == (3, 10, 0.7, 1.0, 1024)
    assert s["chat_template_args"] == {"enable_thinking": False}
    assert rec["execution"]["protocol"] == "paper" and "protocol" not in json.dumps(rec["identity"])
    # the same settings typed out are the same run: the command resumes it (nothing to sample)
    rows = (out / "samples.jsonl").read_bytes()
    assert main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "-m", "3", "-n", "10",
                 "--temperature", "0.7", "--top-p", "1.0", "--max-tokens", "1024",
                 "--chat-template-args", "enable_thinking=false", "--out", str(out), "--no-progress"]) == 0
    assert "already complete" in capsys.readouterr().err and (out / "samples.jsonl").read_bytes() == rows
