"""Parent-side half of LiveCodeBench grading: run a program's tests in the sandbox, judge the raw
outcomes with LiveCodeBench's comparison rules, and map everything to one verdict code per test.

Why split from the driver: the driver (inside the sandbox) never sees expected outputs, so a program
cannot read or forge them; all judging happens here.

Verdict codes: ``pass``, ``wrong_answer``, ``time_limit``, ``runtime_error``, ``compile_error``
(LiveCodeBench's True / -2 / -3 / -4; LCB reports a program that fails to load as -4, we keep it
apart as compile_error).
"""
from __future__ import annotations

import json
import math
import signal
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Sequence

from harness.sandbox.drivers import driver_source
from harness.sandbox.limits import Limits
from harness.sandbox.sandbox import SandboxResult

PASS, WRONG, TLE, RTE, CE = "pass", "wrong_answer", "time_limit", "runtime_error", "compile_error"
VERDICTS = (PASS, WRONG, TLE, RTE, CE)
#: LiveCodeBench's graded_list / error_code convention
LCB_CODE = {PASS: True, WRONG: -2, TLE: -3, RTE: -4, CE: -4}
TIMEOUT_S = 6.0  # LiveCodeBench's default per-test timeout

_DRIVER: str | None = None


def lcb_driver_source() -> str:
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = driver_source("lcb_driver")
    return _DRIVER


# ---- comparison (LiveCodeBench semantics) -------------------------------------------------------
def stripped_lines(text: str) -> list[str]:
    """Whole text stripped, split on newlines, each line stripped (LCB's get_stripped_lines)."""
    return [ln.strip() for ln in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(tok) for tok in line.split()]
    except (InvalidOperation, ValueError):
        return None


def stdout_matches(got: str, expected: str) -> bool:
    """Same number of lines; each line equal after strip, or equal as a sequence of Decimals."""
    g, e = stripped_lines(got), stripped_lines(expected)
    if len(g) != len(e):
        return False
    for a, b in zip(g, e):
        if a == b:
            continue
        da, db = _decimals(a), _decimals(b)
        if da is None or db is None or da != db:
            return False
    return True


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
    """Inverse of the driver's ``_encode``: tuples/dicts/sets come back as Python types."""
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
        except TypeError:  # unhashable key/element
            return _Opaque(x)
        return _Opaque(x.get("o"))
    return x


def value_matches(encoded: str, expected_json: str) -> bool:
    """``prediction == json.loads(expected)`` after a top-level tuple becomes a list (LCB)."""
    try:
        pred = decode_value(json.loads(encoded))
        exp = json.loads(expected_json)
    except (ValueError, TypeError, RecursionError):
        return False
    if isinstance(pred, tuple):
        pred = list(pred)
    try:
        return bool(pred == exp)
    except Exception:
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

    @property
    def passed(self) -> bool:
        return bool(self.verdicts) and all(v == PASS for v in self.verdicts)

    @property
    def first_failure(self) -> str | None:
        return next((v for v in self.verdicts if v != PASS), None)

    def as_dict(self) -> dict[str, Any]:
        return {"verdicts": self.verdicts, "details": self.details, "times": self.times,
                "isolation": self.isolation, "wall_s": round(self.wall_s, 4), "runs": self.runs,
                "notes": self.notes}


def run_limits(n_tests: int, timeout_s: float, base: Limits | None = None) -> Limits:
    """LCB's whole-sample budget, (timeout + 1) * n + 5 s wall; CPU gets the per-test timeouts."""
    base = base or Limits()
    return Limits(wall_s=(timeout_s + 1) * n_tests + 5, cpu_s=int(math.ceil(timeout_s * n_tests)) + 5,
                  address_space_bytes=base.address_space_bytes, file_size_bytes=base.file_size_bytes,
                  open_files=base.open_files, processes=base.processes,
                  output_cap_bytes=base.output_cap_bytes, result_cap_bytes=base.result_cap_bytes)


def _death_verdict(res: SandboxResult) -> tuple[str, str]:
    if res.timed_out:
        return TLE, "wall-clock limit of the run"
    if res.signal == signal.SIGXCPU:
        return TLE, "CPU-time limit (SIGXCPU)"
    if res.signal:
        return RTE, f"process ended by signal {res.signal}"
    return RTE, f"process exited ({res.exit_code}) before reporting"


def grade_program(runner: Any, code: str, mode: str, func_name: str | None, tests: Sequence[dict[str, str]],
                  *, timeout_s: float = TIMEOUT_S, base_limits: Limits | None = None,
                  max_restarts: int = 2, out_cap: int = 1 << 20) -> Grade:
    """Grade ``code`` on ``tests`` ([{input, output}]). ``runner`` has ``run(driver, payload, limits=)``
    (a Sandbox or SandboxPool). A child that dies mid-way is restarted on the remaining tests (at most
    ``max_restarts`` times) so one crashing input does not zero the tests after it."""
    n = len(tests)
    verdicts: list[str | None] = [None] * n
    details, times = [""] * n, [None] * n  # type: ignore[list-item]
    notes: list[str] = []
    start, runs, wall, iso = 0, 0, 0.0, {}
    while start < n:
        todo = list(range(start, n))
        payload = {"code": code, "mode": mode, "func_name": func_name, "timeout_s": timeout_s,
                   "inputs": [tests[i]["input"] for i in todo], "out_cap": out_cap}
        res: SandboxResult = runner.run(lcb_driver_source(), payload,
                                        limits=run_limits(len(todo), timeout_s, base_limits))
        runs += 1
        wall += res.wall_s
        iso = res.isolation
        if res.tampered or res.result_overflow:
            notes.append("result channel tampered with" if res.tampered else "result channel flooded")
            for i in todo:
                verdicts[i], details[i] = RTE, "untrusted result channel"
            break
        compile_rec = next((r for r in res.records if r.get("kind") == "compile"), None)
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
        seen = 0
        for rec in res.records:
            if rec.get("kind") != "test" or not isinstance(rec.get("i"), int):
                continue
            j = rec["i"]
            if not 0 <= j < len(todo) or verdicts[todo[j]] is not None:
                continue
            i = todo[j]
            seen += 1
            status = rec.get("status")
            t = rec.get("t")
            times[i] = float(t) if isinstance(t, (int, float)) else None
            if status == "ok":
                out = rec.get("out")
                ok = isinstance(out, str) and (
                    stdout_matches(out, tests[i]["output"]) if mode == "stdin"
                    else value_matches(out, tests[i]["output"]))
                verdicts[i] = PASS if ok else WRONG
                details[i] = "" if ok else "output differs"
            elif status == "timeout":
                verdicts[i], details[i] = TLE, "per-test time limit"
            elif status == "output_limit":
                verdicts[i], details[i] = WRONG, "output over the cap"
            else:
                verdicts[i], details[i] = RTE, str(rec.get("err", ""))[:300]
        missing = [i for i in todo if verdicts[i] is None]
        if not missing:
            break
        v, why = _death_verdict(res)
        verdicts[missing[0]], details[missing[0]] = v, why
        start = missing[0] + 1
        if runs > max_restarts:
            for i in missing[1:]:
                verdicts[i], details[i] = v, "not run: " + why
            break
        notes.append(f"restarted after test {missing[0]}: {why}")
    return Grade(verdicts=[v or RTE for v in verdicts], details=details, times=times, isolation=iso,
                 wall_s=wall, runs=runs, notes=notes)
