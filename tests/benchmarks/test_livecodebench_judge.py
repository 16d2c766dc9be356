"""The LiveCodeBench judge is total: whatever a program prints or returns, and whatever records reach
the parent (forged ones included), every comparison gives a verdict and nothing raises in the parent.
Fuzzed with hypothesis, plus the named cases of issue 9 (sNaN and friends)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from vpo_harness.benchmarks.livecodebench_judge import (MLE, PASS, RTE, TLE, VERDICTS, WRONG, grade_program, judge_record,
                                            stdout_matches, value_matches)
from vpo_harness.harness.core.sandbox.sandbox import SandboxResult

SPECIAL = ["sNaN", "-sNaN", "NaN", "-NaN", "nan", "Infinity", "-Infinity", "inf", "1e999999999999999999",
           "1e-999999999999999999", "9" * 5000, "0x10", "1_000", "\udcff", "\x00", "", " ", "\n", "3", "3.0",
           "-0", "+3", "1E+2", "１２"]
tokens = st.one_of(st.sampled_from(SPECIAL), st.text(max_size=8),
                   st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=3))
outputs = st.lists(st.lists(tokens, max_size=6).map(" ".join), max_size=6).map("\n".join)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
              st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)),
    max_leaves=20)
json_texts = st.one_of(json_values.map(json.dumps), st.text(max_size=30), st.sampled_from(
    ['{"t": 5}', '{"d": [[1]]}', '{"d": [[[1], 2]]}', '{"s": [[1]]}', '{"d": 5}', '[' * 5000 + ']' * 5000,
     "1" * 5000, "NaN", "-Infinity", '{"o": 1}', "[1, 2" + "]", "1e400"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs, outputs)
def test_stdout_comparison_is_total(got, expected):
    assert stdout_matches(got, expected) in (True, False)
    assert stdout_matches(got, got) is True  # reflexive, even for NaN and sNaN lines


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_texts, json_texts)
def test_value_comparison_is_total(pred, expected):
    assert value_matches(pred, expected) in (True, False)


records = st.one_of(
    st.dictionaries(st.sampled_from(["kind", "i", "status", "out", "err", "t"]),
                    st.one_of(json_values, st.sampled_from(["test", "ok", "timeout", "error", "compile"]),
                              st.integers(-3, 5), st.just(10 ** 400), outputs), max_size=6),
    json_values)


@settings(max_examples=150, deadline=None)
@given(records, st.sampled_from(["stdin", "functional"]), outputs)
def test_any_record_gets_a_verdict(rec, mode, expected):
    v, detail, secs = judge_record(rec, expected, mode)
    assert v in VERDICTS and isinstance(detail, str) and (secs is None or isinstance(secs, float))


class _Replay:
    """A runner that returns the given records as if a child had emitted them (forgeries included)."""

    def __init__(self, recs: list[Any], done: bool):
        self.recs, self.done = recs, done

    def run(self, driver, payload, limits=None, on_record=None):
        for r in self.recs:
            if on_record is not None and isinstance(r, dict):
                on_record(r)
        return SandboxResult(records=self.recs, isolation={}, wall_s=0.01, exit_code=0, signal=None,
                             timed_out=False, done=self.done)


@settings(max_examples=200, deadline=None)
@given(st.lists(records, max_size=8), st.booleans(), st.sampled_from(["stdin", "functional"]),
       st.integers(1, 4), st.booleans())
def test_grade_program_is_total_on_any_record_stream(recs, done, mode, n, ff):
    recs = [{"kind": "compile", "status": "ok"}] + recs
    tests = [{"input": "1", "output": "3" if mode == "stdin" else "3"} for _ in range(n)]
    g = grade_program(_Replay(recs, done), "x", mode, "f", tests, first_failure=ff, max_restarts=1)
    assert len(g.verdicts) == n and all(v in VERDICTS for v in g.verdicts)


@pytest.mark.parametrize("printed", ["sNaN", "-sNaN", "sNaN 3", "NaN", "Infinity", "1e999999999999999999",
                                     "9" * 200000, "\udcff", " ".join(["3"] * 10 ** 6)])
def test_issue9_outputs_are_wrong_answers_not_crashes(printed):
    rec = {"kind": "test", "i": 0, "status": "ok", "out": printed + "\n"}
    assert judge_record(rec, "3", "stdin")[0] == WRONG


def test_lcb_semantics_kept():
    assert stdout_matches("Infinity\n", "inf")  # Decimal('Infinity') == Decimal('inf'), as in LCB
    assert stdout_matches("3.0", "3") and not stdout_matches("3.0000000001", "3")
    assert stdout_matches("sNaN", "sNaN")  # the same line is equal before any Decimal is built
    big = "1" + "0" * 5000
    assert value_matches(big, big) and not value_matches(big, big + "1")
    assert value_matches(json.dumps([1, 2]), "[1, 2]")
    assert judge_record({"status": "ok", "out": "3"}, "3", "stdin")[0] == PASS
    assert judge_record({"status": "weird"}, "3", "stdin")[0] == RTE
    assert judge_record({"status": "ok", "out": "3", "t": 10 ** 400}, "3", "stdin") == (PASS, "", None)


class _AtLimit(_Replay):
    """A run whose cgroup reached its memory limit before record ``limit_at`` (no OOM kill)."""

    def __init__(self, recs: list[Any], limit_at: int | None, stalled: bool = False):
        super().__init__(recs, done=not stalled)
        self.limit_at, self.stalled = limit_at, stalled

    def run(self, driver, payload, limits=None, on_record=None):
        res = super().run(driver, payload, limits, on_record)
        res.limit_at, res.stalled = self.limit_at, self.stalled
        return res


def test_time_limits_at_the_memory_limit_are_memory_limit() -> None:
    """Without swap, a memory bomb at its group's limit often crawls (the kernel reclaims its code
    pages) into the per-test time limit instead of an OOM kill: every test it hit from there is
    memory_limit; tests before the limit, and passes after it, keep their verdicts."""
    from vpo_harness.benchmarks.livecodebench_judge import MLE, TLE

    ok = {"kind": "test", "i": 0, "status": "ok", "out": "3\n"}
    slow = [{"kind": "test", "i": i, "status": "timeout"} for i in (1, 2)]
    recs = [{"kind": "compile", "status": "ok"}, ok, *slow]
    tests = [{"input": "1", "output": "3"}] * 3
    assert grade_program(_AtLimit(recs, limit_at=None), "x", "stdin", None, tests).verdicts == [PASS, TLE, TLE]
    g = grade_program(_AtLimit(recs, limit_at=2), "x", "stdin", None, tests)
    assert g.verdicts == [PASS, MLE, MLE] and "reached" in g.details[1]
    assert grade_program(_AtLimit(recs, limit_at=0), "x", "stdin", None, tests).verdicts == [PASS, MLE, MLE]
    # a run the parent killed for want of progress, at the limit: the test it hung on, and those after
    g = grade_program(_AtLimit(recs[:2], limit_at=1, stalled=True), "x", "stdin", None, tests, max_restarts=0)
    assert g.verdicts == [PASS, MLE, MLE]
    g = grade_program(_AtLimit(recs[:2], limit_at=None, stalled=True), "x", "stdin", None, tests, max_restarts=0)
    assert g.verdicts == [PASS, TLE, TLE]


class _Counted(_Replay):
    """A run whose records carry the OOM kills and limit hits of their own test (as the sandbox
    counts them from the group's counters each record carried)."""

    def __init__(self, recs: list[Any], oom_after: int = 0, limits_after: int = 0):
        super().__init__(recs, done=True)
        self.oom_after, self.limits_after = oom_after, limits_after

    def run(self, driver, payload, limits=None, on_record=None):
        res = super().run(driver, payload, limits, on_record)
        res.records = [{k: v for k, v in r.items() if k not in ("oom_kills", "limit_hits")} for r in self.recs]
        res.record_memory = [(r["oom_kills"], r["limit_hits"]) for r in self.recs]
        kills = sum(r.get("oom_kills", 0) for r in self.recs) + self.oom_after
        hits = sum(r.get("limit_hits", 0) for r in self.recs) + self.limits_after
        res.memory_limit, res.memory_at = kills > 0, (1 if kills else None)  # arrival: the first test
        res.limit_at = 1 if hits else None
        res.budget = {"oom_kills": kills, "limit_hits": hits}
        res.oom_after, res.limits_after, res.counted_through = self.oom_after, self.limits_after, len(self.recs)
        return res


def _counted_test(i: int, out: str | None, kills: int = 0, hits: int = 0) -> dict[str, Any]:
    rec = {"kind": "test", "i": i, "oom_kills": kills, "limit_hits": hits}
    rec.update({"status": "ok", "out": out} if out is not None else {"status": "timeout"})
    return rec


COMPILED = {"kind": "compile", "status": "ok", "oom_kills": 0, "limit_hits": 0}


@pytest.mark.parametrize("recs, expect", [
    # six children of 800 MiB on every test: each test spent the budget (was [MLE, WRONG, WRONG])
    ([_counted_test(i, "[9, 9, 9, 9, 9, 0]\n", kills=5) for i in range(3)], [MLE, MLE, MLE]),
    # children spend the budget, then the right answer is printed (was [MLE, PASS])
    ([_counted_test(i, "3\n", kills=2) for i in range(2)], [MLE, MLE]),
    # only the middle test spends it: the others are judged on their own output
    ([_counted_test(0, "3\n"), _counted_test(1, "3\n", kills=3), _counted_test(2, "3\n")], [PASS, MLE, PASS]),
    ([_counted_test(0, "3\n", kills=1), _counted_test(1, "4\n"), _counted_test(2, "3\n")], [MLE, WRONG, PASS]),
    # a crawl at the limit is the budget's for the test that hit it, a plain time limit stays one
    ([_counted_test(0, None, hits=4), _counted_test(1, None), _counted_test(2, "3\n")], [MLE, TLE, PASS]),
])
def test_memory_verdicts_belong_to_the_test_that_spent_the_budget(recs, expect) -> None:
    tests = [{"input": "1", "output": "3"}] * len(recs)
    assert grade_program(_Counted([COMPILED, *recs]), "x", "stdin", None, tests).verdicts == expect


def test_a_kill_after_the_last_counted_record_is_the_dying_tests() -> None:
    """The program died in test 1 with an OOM kill counted after test 0's record: test 1 is
    memory_limit; a death with no kill after the last counted record is not, even if test 0 spent
    the budget."""
    tests = [{"input": "1", "output": "3"}] * 2
    g = grade_program(_Counted([COMPILED, _counted_test(0, "3\n")], oom_after=1), "x", "stdin", None, tests,
                      max_restarts=0)
    assert g.verdicts == [PASS, MLE]
    g = grade_program(_Counted([COMPILED, _counted_test(0, "3\n", kills=2)]), "x", "stdin", None, tests,
                      max_restarts=0)
    assert g.verdicts == [MLE, RTE]
    loaded = {**COMPILED, "oom_kills": 1}  # loading the program spent it: so would every test alone
    assert grade_program(_Counted([loaded]), "x", "stdin", None, tests).verdicts == [MLE, MLE]
