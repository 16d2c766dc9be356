"""LiveCodeBench ``score``: the per-answer details the runner stores next to the rewards (verdicts,
timings, isolation, restart notes, error texts), graded for real in the sandbox. Written against the
surviving mutants of ``scripts/mutation.sh``: nothing checked these records before."""
from __future__ import annotations

import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.base import Problem

pytestmark = pytest.mark.timeout(180)

ECHO = "print(input())\n"
CRASH_ON_2 = "import os\nx = int(input())\nif x == 2:\n    os._exit(1)\nprint(x)\n"
RAISES = "x = input()\nraise ValueError('boom ' + 'x' * 400)\n"


@pytest.fixture(scope="module")
def task():
    t = get_task("livecodebench", workers=2)
    yield t
    t.close()


@pytest.fixture(scope="module")
def problem() -> Problem:
    tests = [("1", "1"), ("2", "2"), ("3", "3")]
    return Problem(id="echo", data={"mode": "stdin", "func_name": None, "n_tests": 3,
                                    "tests": [{"input": i, "output": o} for i, o in tests],
                                    "content": "Echo the number.", "starter_code": "", "contest_date": "2025-03-01"})


@pytest.fixture
def scored(task, problem):
    """Graded afresh for each test (cheap: identical programs are graded in parallel on the pool), so
    that each test calls ``score`` itself: mutmut links a function to the tests that call it, and a
    module-scoped result would link ``score`` to the first test only."""
    return task.score(problem, [ECHO, None, CRASH_ON_2, RAISES])


def test_rewards_match_the_verdicts(scored):
    r, details = scored
    assert r.shape == (4, 3) and len(details) == 4
    assert r.tolist() == [[1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 0]]
    for row, d in zip(r.tolist(), details):
        if d["verdicts"] is not None:
            assert row == [1.0 if v == "pass" else 0.0 for v in d["verdicts"]]


def test_no_code_block_is_said_so(scored):
    assert scored[1][1] == {"verdicts": None, "reason": "no code block"}


def test_a_clean_pass_carries_timings_runs_and_isolation_only(scored):
    d = scored[1][0]
    assert set(d) == {"verdicts", "times", "wall_s", "runs", "isolation"}      # no empty notes/errors
    assert d["verdicts"] == ["pass"] * 3 and d["runs"] == 1
    assert len(d["times"]) == 3 and all(isinstance(t, float) and t >= 0 for t in d["times"])
    assert d["isolation"]["rlimits"] and "netns" in d["isolation"]


def test_wall_time_is_seconds_rounded_to_four_places(scored):
    for d in scored[1]:
        if d["verdicts"] is None:
            continue
        w = d["wall_s"]
        assert isinstance(w, float) and 0 < w < 120
        assert round(w, 4) == w
        assert w >= sum(t for t in d["times"] if t is not None) - 1e-4   # the runs contain the tests


def test_a_crash_restarts_and_says_why(scored):
    d = scored[1][2]
    assert d["verdicts"] == ["pass", "runtime_error", "pass"] and d["runs"] == 2
    assert d["times"][0] is not None and d["times"][2] is not None
    assert len(d["notes"]) == 1 and d["notes"][0].startswith("restarted after test 1: ")
    # one error text per test, empty where the test passed
    assert d["errors"][0] == d["errors"][2] == ""
    assert d["errors"][1].startswith("process exited (1)") or "signal" in d["errors"][1]


def test_runtime_errors_keep_the_error_text_within_300_chars(scored):
    d = scored[1][3]
    assert d["verdicts"] == ["runtime_error"] * 3 and "notes" not in d
    assert len(d["errors"]) == 3
    for e in d["errors"]:
        assert 0 < len(e) <= 300 and "ValueError" in e


def test_no_answers_no_rows(task, problem):
    r, details = task.score(problem, [])
    assert r.shape == (0, 3) and details == []
