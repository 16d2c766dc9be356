"""``--protocol paper``: the paper's per-task settings in one flag, explicit flags winning, the
resolved values (not the preset's name) in the run's identity."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.eval.protocols import PAPER, PROTOCOLS, departures, resolve


def res(task: str, **kw):
    base = dict(m=None, n=None, temperature=None, top_p=None, max_tokens=None, chat_template_args=None, task_args=None)
    base.update(kw)
    return resolve("paper", task, **base)


def test_paper_defaults_per_task():
    t = res("toolrl")
    assert (t["m"], t["n"], t["temperature"], t["top_p"], t["max_tokens"]) == (3, 10, 0.7, 0.95, 1024)
    assert t["chat_template_args"] == {"enable_thinking": False} and t["task_args"] == {}
    single = res("toolrl", m=1)
    assert single["n"] == 50 and single["task_args"] == {"prefill_think": True}  # the authors' 50 x 1, prefill
    assert res("maze")["top_p"] == 1.0 and res("eureqa")["max_tokens"] == 512
    assert res("musique")["task_args"] == {"hop_stratified": True}
    lcb = res("livecodebench")
    assert (lcb["temperature"], lcb["top_p"], lcb["max_tokens"], lcb["chat_template_args"]) == (0.8, 0.95, 3072, {})
    assert res("livecodebench", m=1)["max_tokens"] == 2048
    assert res("maze", m=4)["n"] == 8  # pool of 30 rounded up to whole chains
    assert set(PAPER) == {"maze", "musique", "eureqa", "toolrl", "livecodebench"}


def test_pools_are_the_authors_code_defaults_except_where_said():
    """Pools per task and m (vpo_tasks/*.py add_eval_args): Maze 10 x 3 or 10 x 1 (here 30 x 1, a
    departure), MuSiQue 10 x 3 or 30 samples, EUREQA 30 x 1 for every method (here 10 x 3 for m = 3, a
    departure), ToolRL 50 x 1 for every method (10 x 3 for m = 3, a departure), LiveCodeBench 10 x 3 or
    30 samples."""
    pools = {t: (res(t)["n"], res(t)["m"], res(t, m=1)["n"]) for t in PAPER}
    assert pools == {"maze": (10, 3, 30), "musique": (10, 3, 30), "eureqa": (10, 3, 30), "toolrl": (10, 3, 50),
                     "livecodebench": (10, 3, 30)}
    departs = {(t, m) for t in PAPER for m in (1, 3) if "departs" in departures("paper", t, m)}
    assert departs == {("maze", 1), ("eureqa", 3), ("toolrl", 3)}
    assert "best@30 needs a pool of 30" in departures("paper", "maze", 1)
    assert "no departure" in departures("paper", "musique", 1)
    # the authors average best@k over 4 evaluation seeds for the two small held-out sets
    assert {t: p.eval_seeds for t, p in PAPER.items()} == {"maze": 1, "musique": 1, "eureqa": 4, "toolrl": 4,
                                                           "livecodebench": 1}


def test_explicit_flags_win():
    t = res("toolrl", m=1, n=5, temperature=0.2, top_p=0.5, max_tokens=64,
            chat_template_args={"enable_thinking": True, "x": 1}, task_args={"prefill_think": False})
    assert (t["m"], t["n"], t["temperature"], t["top_p"], t["max_tokens"]) == (1, 5, 0.2, 0.5, 64)
    assert t["chat_template_args"] == {"enable_thinking": True, "x": 1}
    assert t["task_args"] == {"prefill_think": False}


def test_no_protocol_only_fills_m_and_n():
    got = resolve(None, "maze", m=None, n=None, temperature=None, top_p=None, max_tokens=None,
                  chat_template_args=None, task_args={"parse": "paper"})
    assert got == dict(m=1, n=10, temperature=None, top_p=None, max_tokens=None, chat_template_args={},
                       task_args={"parse": "paper"})


def test_unknown_protocol_or_task_is_one_line():
    with pytest.raises(ValueError, match="no settings for task 'nope'"):
        res("nope")
    with pytest.raises(ValueError, match="unknown --protocol 'x'"):
        resolve("x", "maze", m=None, n=None, temperature=None, top_p=None, max_tokens=None,
                chat_template_args=None, task_args=None)


def test_cli_names_match():
    from harness.app.commands.run import PROTOCOL_NAMES

    assert PROTOCOL_NAMES == PROTOCOLS


def test_vpo_run_records_the_resolved_settings(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from harness.app.cli import main

    out = tmp_path / "paper"
    assert main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "--protocol", "paper",
                 "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "--protocol paper for maze" in err and "for maze (m=3): the authors' code defaults" in err
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
