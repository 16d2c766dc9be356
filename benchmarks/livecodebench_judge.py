"""Parent-side half of LiveCodeBench grading: run a program's tests in the sandbox, judge the raw
outcomes with LiveCodeBench's comparison rules, and map everything to one verdict code per test.

Why split from the driver (benchmarks/livecodebench_driver.py, which runs inside the sandbox): the
driver never sees expected outputs, so a program cannot read or forge them; all judging happens here.
The judge is *total*: whatever bytes or records a program produces, every function here returns a
verdict and never raises (a crash here would kill ``vpo run`` and every resume of it).

Verdict codes: ``pass``, ``wrong_answer``, ``time_limit``, ``runtime_error``, ``compile_error``,
``memory_limit`` (LiveCodeBench's True / -2 / -3 / -4; LCB reports a program that fails to load as -4,
we keep it apart as compile_error; LCB has no memory limit, so a program that spends the candidate's
memory budget, MemoryError or an OOM kill in its cgroup, is -4 there and ``memory_limit`` here).
"""
from __future__ import annotations

import json
import math
import signal
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Sequence

from vpo_harness.harness.core.sandbox.limits import Limits
from vpo_harness.harness.core.sandbox.sandbox import STOP, SandboxResult

PASS, WRONG, TLE, RTE, CE = "pass", "wrong_answer", "time_limit", "runtime_error", "compile_error"
MLE = "memory_limit"
VERDICTS = (PASS, WRONG, TLE, RTE, CE, MLE)
#: LiveCodeBench's graded_list / error_code convention
LCB_CODE = {PASS: True, WRONG: -2, TLE: -3, RTE: -4, CE: -4, MLE: -4}
#: the parent kills a test that has not reported after this multiple of its wall allowance (the
#: driver's own timers come first; this catches programs that ignore signals or clear the timers)
KILL_FACTOR = 1.5
TIMEOUT_S = 6.0  # LiveCodeBench's default per-test timeout
#: per-test wall-clock allowance as a multiple of the (CPU-time) timeout. 1.0 = LiveCodeBench's
#: wall-clock limit (the default: its verdicts and speed). Larger values let CPU time decide, so a
#: loaded machine does not turn slow-but-correct programs into time limits, at the price of waiting
#: up to that factor longer for programs that really time out
WALL_FACTOR = 1.0

_DRIVER: str | None = None
#: Python's default limit on int<->str conversion; longer integers in expected outputs are parsed as
#: exact Decimals (equal to the int of the same value) instead of raising
_INT_DIGITS = 4300


def lcb_driver_source() -> str:
    """Source text of the driver, sent to the sandbox (which exec's it; it is never imported here)."""
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = (Path(__file__).with_name("livecodebench_driver.py")).read_text()
    return _DRIVER


# ---- comparison (LiveCodeBench semantics) -------------------------------------------------------
def stripped_lines(text: str) -> list[str]:
    """Whole text stripped, split on newlines, each line stripped (LCB's get_stripped_lines)."""
    return [ln.strip() for ln in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(tok) for tok in line.split()]
    except Exception:  # InvalidOperation, ValueError, MemoryError on absurd exponents
        return None


def _same_decimals(a: list[Decimal], b: list[Decimal]) -> bool:
    """LCB's ``list == list`` of Decimals, except that a signalling NaN makes the comparison
    False instead of raising ``InvalidOperation`` (LCB then reports -4: a failure either way)."""
    if len(a) != len(b):
        return False
    try:
        return all(x == y for x, y in zip(a, b))
    except Exception:
        return False


def stdout_matches(got: Any, expected: Any) -> bool:
    """Same number of lines; each line equal after strip, or equal as a sequence of Decimals.
    Total: anything that is not a pair of strings, or cannot be compared, is a mismatch."""
    if not isinstance(got, str) or not isinstance(expected, str):
        return False
    try:
        g, e = stripped_lines(got), stripped_lines(expected)
        if len(g) != len(e):
            return False
        for a, b in zip(g, e):
            if a == b:
                continue
            da, db = _decimals(a), _decimals(b)
            if da is None or db is None or not _same_decimals(da, db):
                return False
        return True
    except Exception:  # MemoryError on a gigantic output; nothing else is expected
        return False


class _Opaque:
    """A returned object with no JSON counterpart: equal to nothing (LCB's == would be False too)."""

    def __init__(self, text: Any):
        self.text = text

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<{self.text}>"


def decode_value(x: Any) -> Any:
    """Inverse of the driver's ``_encode``: tuples/dicts/sets come back as Python types. Anything
    malformed (a forged record) becomes an object equal to nothing."""
    if isinstance(x, list):
        return [decode_value(v) for v in x]
    if isinstance(x, dict):
        try:
            if "t" in x:
                return tuple(decode_value(v) for v in x["t"])
            if "d" in x:
                return {decode_value(k): decode_value(v) for k, v in x["d"]}
            if "s" in x:
                return {decode_value(v) for v in x["s"]}
        except Exception:  # unhashable key/element, wrong shapes
            return _Opaque(x)
        return _Opaque(x.get("o"))
    return x


def _parse_int(text: str) -> Any:
    """JSON integers of any length: an int up to Python's str-conversion limit, beyond it an exact
    Decimal (``Decimal(n) == n`` for ints) so huge expected values compare instead of raising."""
    return int(text) if len(text) <= _INT_DIGITS else Decimal(text)


def loads_total(text: Any) -> tuple[bool, Any]:
    """``(True, value)`` or ``(False, None)`` for anything json cannot (or should not) decode."""
    if not isinstance(text, str):
        return False, None
    try:
        return True, json.loads(text, parse_int=_parse_int)
    except Exception:  # ValueError, RecursionError, MemoryError
        return False, None


def value_matches(encoded: Any, expected_json: Any) -> bool:
    """``prediction == json.loads(expected)`` after a top-level tuple becomes a list (LCB). Total."""
    ok_p, raw = loads_total(encoded)
    ok_e, exp = loads_total(expected_json)
    if not (ok_p and ok_e):
        return False
    try:
        pred = decode_value(raw)
        if isinstance(pred, tuple):
            pred = list(pred)
        return bool(pred == exp)
    except Exception:  # RecursionError on deep values, InvalidOperation, ...
        return False


# ---- one program ---------------------------------------------------------------------------------
@dataclass
class Grade:
    """Verdict per test plus what is needed to audit it."""

    verdicts: list[str]
    details: list[str]
    times: list[float | None]
    isolation: dict[str, Any]
    wall_s: float
    runs: int
    notes: list[str] = field(default_factory=list)
    #: peak resident memory of the program's child process(es), KiB
    peak_kb: int = 0
    #: peak memory charged to the candidate's cgroup (all its processes, tmpfs, memfds), KiB
    budget_peak_kb: int = 0

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and all(v == PASS for v in self.verdicts)

    @property
    def first_failure(self) -> str | None:
        return next((v for v in self.verdicts if v != PASS), None)

    def as_dict(self) -> dict[str, Any]:
        return {"verdicts": self.verdicts, "details": self.details, "times": self.times,
                "isolation": self.isolation, "wall_s": round(self.wall_s, 4), "runs": self.runs,
                "notes": self.notes, "peak_kb": self.peak_kb, "budget_peak_kb": self.budget_peak_kb}


def run_limits(n_tests: int, timeout_s: float, base: Limits | None = None,
               wall_factor: float = WALL_FACTOR) -> Limits:
    """LCB's whole-sample budget, (timeout + 1) * n + 5 s wall, with the per-test wall allowance
    (wall_factor x timeout); RLIMIT_CPU gets the per-test CPU limits; the parent kills a test (the
    compile step counts as one) that has not reported after KILL_FACTOR x its wall allowance."""
    base = base or Limits()
    return Limits(wall_s=(timeout_s * wall_factor + 1) * n_tests + 5, cpu_s=int(math.ceil(timeout_s * n_tests)) + 5,
                  address_space_bytes=base.address_space_bytes, memory_bytes=base.memory_bytes,
                  file_size_bytes=base.file_size_bytes, open_files=base.open_files, processes=base.processes,
                  output_cap_bytes=base.output_cap_bytes, result_cap_bytes=base.result_cap_bytes,
                  progress_s=KILL_FACTOR * timeout_s * wall_factor)


def _death_verdict(res: SandboxResult, memory: bool | None = None, at_limit: bool | None = None) -> tuple[str, str]:
    """Why a run ended before its tests did. ``memory`` / ``at_limit``: an OOM kill / a memory limit
    hit in the run's group that is not blamed on a test that reported (default: any in the run)."""
    if memory is None:
        memory = bool(getattr(res, "memory_limit", False))
    if at_limit is None:
        at_limit = _at_limit(res)
    if memory:
        return MLE, _budget_text(res)
    if (getattr(res, "stalled", False) or res.timed_out) and at_limit:
        return MLE, _limit_text(res)
    if getattr(res, "stalled", False):
        return TLE, (f"per-test time limit: no result after {KILL_FACTOR:g}x the limit; every process "
                     "killed by the parent")
    if res.timed_out:
        return TLE, "wall-clock limit of the run"
    if res.signal == signal.SIGXCPU:
        return TLE, "CPU-time limit (SIGXCPU)"
    if res.signal:
        return RTE, f"process ended by signal {res.signal}"
    return RTE, f"process exited ({res.exit_code}) before reporting"


def _counted(res: SandboxResult, k: int) -> tuple[int, int] | None:
    """(OOM kills, limit hits) in the candidate's group while record ``k``'s step ran, as the sandbox
    counted them from the counters the record carried (SandboxResult.record_memory); None where it
    carried none."""
    memory = getattr(res, "record_memory", None) or []
    return memory[k] if 0 <= k < len(memory) else None


def _unreported(res: SandboxResult, mem_at: int | None) -> tuple[bool, bool]:
    """(an OOM kill, a limit hit) left for the test that never reported: what came after the last
    record that carried the group's counters; without such records, the arrival rule (an OOM kill
    not yet blamed on a reported test, any limit hit)."""
    through = getattr(res, "counted_through", 0)
    if through:
        limit_at = getattr(res, "limit_at", None)
        return (getattr(res, "oom_after", 0) > 0,
                getattr(res, "limits_after", 0) > 0 or (limit_at is not None and limit_at >= through))
    return mem_at is not None, _at_limit(res)


def _at_limit(res: SandboxResult) -> bool:
    """The candidate's group reached its memory limit during the run (see SandboxResult.limit_at)."""
    return getattr(res, "limit_at", None) is not None


def _limit_reached_by(res: SandboxResult, k: int) -> bool:
    """The group had reached its memory limit by the time record ``k`` arrived (limit_at <= k)."""
    limit_at = getattr(res, "limit_at", None)
    return limit_at is not None and k >= limit_at


def _limit_text(res: SandboxResult) -> str:
    b = res.isolation.get("budget", {}) if isinstance(res.isolation, dict) else {}
    mib = int(b.get("memory_bytes", 0)) >> 20
    return (f"memory budget of the candidate ({mib} MiB, all its processes) reached: out of time while the "
            "kernel reclaimed at the limit")


def _budget_text(res: SandboxResult) -> str:
    b = res.isolation.get("budget", {}) if isinstance(res.isolation, dict) else {}
    mib = int(b.get("memory_bytes", 0)) >> 20
    return f"memory budget of the candidate ({mib} MiB, all its processes) spent: OOM kill in its cgroup"


def judge_record(rec: Any, expected: str, mode: str) -> tuple[str, str, float | None]:
    """(verdict, detail, seconds) of one test record. Total: any record, however malformed or
    forged, gets a verdict."""
    if not isinstance(rec, dict):
        return RTE, "malformed record", None
    t = rec.get("t")
    try:
        secs = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
    except (OverflowError, ValueError):
        secs = None
    status = rec.get("status")
    if status == "ok":
        out = rec.get("out")
        ok = stdout_matches(out, expected) if mode == "stdin" else value_matches(out, expected)
        return (PASS, "", secs) if ok else (WRONG, "output differs", secs)
    if status == "timeout":
        return TLE, "per-test time limit", secs
    if status == "output_limit":
        return WRONG, "output over the cap", secs
    why = str(rec.get("err", ""))[:300]
    if why.startswith("MemoryError"):  # an allocation over the budget (RLIMIT_AS) failed
        return MLE, why, secs
    return RTE, why, secs


def _test_index(rec: Any, n: int) -> int | None:
    if not isinstance(rec, dict) or rec.get("kind") != "test":
        return None
    j = rec.get("i")
    return j if isinstance(j, int) and not isinstance(j, bool) and 0 <= j < n else None


def grade_program(runner: Any, code: str, mode: str, func_name: str | None, tests: Sequence[dict[str, str]],
                  *, timeout_s: float = TIMEOUT_S, base_limits: Limits | None = None,
                  max_restarts: int = 2, out_cap: int = 1 << 20, first_failure: bool = False,
                  wall_factor: float = WALL_FACTOR) -> Grade:
    """Grade ``code`` on ``tests`` ([{input, output}]). ``runner`` has ``run(driver, payload, limits=,
    on_record=)`` (a Sandbox or SandboxPool).

    Full mode (default): every test runs, for the per-test reward vector; a child that dies mid-way
    is restarted on the remaining tests (at most ``max_restarts`` times) so one crashing input does not
    zero the tests after it. ``first_failure``: stop at the first test that fails, as LiveCodeBench
    does (tests after it get ``not_run``-style verdicts equal to that failure); enough for pass/fail
    (pass@k, search filters) and much faster when a failing test would be followed by slow ones."""
    n = len(tests)
    verdicts: list[str | None] = [None] * n
    details, times = [""] * n, [None] * n  # type: ignore[list-item]
    notes: list[str] = []
    start, runs, wall, iso, peak_kb, budget_kb = 0, 0, 0.0, {}, 0, 0
    while start < n:
        todo = list(range(start, n))
        payload = {"code": code, "mode": mode, "func_name": func_name, "timeout_s": timeout_s,
                   "wall_factor": wall_factor, "inputs": [tests[i]["input"] for i in todo], "out_cap": out_cap,
                   "first_failure": first_failure}
        on_record = None
        if first_failure:
            def on_record(rec: dict[str, Any], todo: list[int] = todo) -> Any:
                """Judge as the records stream in; end the run at the first wrong answer (the
                child goes on with the next test meanwhile: no round trip per test)."""
                j = _test_index(rec, len(todo))
                if j is None or rec.get("status") != "ok":
                    return None
                return None if judge_record(rec, tests[todo[j]]["output"], mode)[0] == PASS else STOP
        res: SandboxResult = runner.run(lcb_driver_source(), payload,
                                        limits=run_limits(len(todo), timeout_s, base_limits, wall_factor),
                                        on_record=on_record)
        runs += 1
        wall += res.wall_s
        iso = res.isolation
        peak_kb = max(peak_kb, int(getattr(res, "maxrss_kb", 0) or 0))
        budget_kb = max(budget_kb, int((getattr(res, "budget", None) or {}).get("peak_bytes", 0)) >> 10)
        if res.tampered or res.result_overflow:
            notes.append("result channel tampered with" if res.tampered else "result channel flooded")
            for i in todo:
                verdicts[i], details[i] = RTE, "untrusted result channel"
            break
        compile_rec = next((r for r in res.records if isinstance(r, dict) and r.get("kind") == "compile"), None)
        if compile_rec is None or compile_rec.get("status") != "ok":
            if compile_rec is None:
                v, why = _death_verdict(res)
            elif compile_rec.get("status") == "timeout":
                v, why = TLE, "timeout while loading the program"
            else:
                v, why = CE, str(compile_rec.get("err", ""))[:300]
            for i in todo:
                verdicts[i], details[i] = v, why
            break
        loading = _counted(res, next(k for k, r in enumerate(res.records) if r is compile_rec))
        if loading is not None and loading[0]:  # loading the program spent the budget: so would every test alone
            for i in todo:
                verdicts[i], details[i] = MLE, _budget_text(res)
            break
        failed: str | None = None
        # Each record carries the OOM kills and limit hits of its own test (_counted): a test that
        # spent the budget is memory_limit, every other one is judged on its own output, as if it had
        # run alone. Records without counters fall back to arrival: the first test whose record came
        # after an OOM kill was seen is the one that spent the budget.
        mem_at = res.memory_at if getattr(res, "memory_limit", False) else None
        if getattr(res, "counted_through", 0):
            mem_at = None
        # some v1 kernels never count a limit hit (memory.failcnt stays 0) while the peak shows the
        # limit: then a time limit from where the limit was first seen is the budget's, as by arrival
        uncounted_limit = _at_limit(res) and not (getattr(res, "budget", None) or {}).get("limit_hits")
        for k, rec in enumerate(res.records):
            j = _test_index(rec, len(todo))
            if j is None or verdicts[todo[j]] is not None:
                continue
            i = todo[j]
            verdicts[i], details[i], times[i] = judge_record(rec, tests[i]["output"], mode)
            own = _counted(res, k)
            if own is not None:
                if own[0]:
                    verdicts[i], details[i] = MLE, _budget_text(res)
                elif verdicts[i] == TLE and (own[1] or (uncounted_limit and _limit_reached_by(res, k))):
                    verdicts[i], details[i] = MLE, _limit_text(res)  # a bomb crawling at its limit
            elif mem_at is not None and k >= mem_at:
                verdicts[i], details[i], mem_at = MLE, _budget_text(res), None
            elif verdicts[i] == TLE and _limit_reached_by(res, k):  # a bomb crawling at its limit
                verdicts[i], details[i] = MLE, _limit_text(res)
            if first_failure and verdicts[i] != PASS:
                failed = verdicts[i]
                break
        missing = [i for i in todo if verdicts[i] is None]
        if failed is not None:
            for i in missing:
                verdicts[i], details[i] = failed, "not run: stopped at the first failure"
            break
        if not missing:
            break
        restart = next((r for r in res.records if isinstance(r, dict) and r.get("kind") == "restart"), None)
        at = restart.get("at") if restart else None
        if isinstance(at, int) and 0 < at < len(todo) and todo[at] == missing[0] and not first_failure:
            start = missing[0]  # the driver asked for a clean process (progress: at >= 1)
            notes.append(f"fresh process from test {start}: threads of a timed-out test still ran")
            continue
        memory, at_limit = _unreported(res, mem_at)
        v, why = _death_verdict(res, memory=memory, at_limit=at_limit)
        verdicts[missing[0]], details[missing[0]] = v, why
        start = missing[0] + 1
        if runs > max_restarts or first_failure:
            for i in missing[1:]:
                verdicts[i], details[i] = v, "not run: " + why
            break
        notes.append(f"restarted after test {missing[0]}: {why}")
    return Grade(verdicts=[v or RTE for v in verdicts], details=details, times=times, isolation=iso,
                 wall_s=wall, runs=runs, notes=notes, peak_kb=peak_kb, budget_peak_kb=budget_kb)
