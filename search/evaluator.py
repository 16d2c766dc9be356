"""The evolve evaluator: one task's reward protocol turned into OpenEvolve metrics and artifacts.

Why a class of our own rather than an OpenEvolve evaluator file: OpenEvolve runs ``evaluate()`` in a
thread of its worker process and its timeout does not kill that thread. Here a candidate is graded by
the task itself (``Benchmark.score``), and code tasks grade in the sandbox pool, whose children are
killed on their own wall-clock limits; nothing of a candidate ever runs in this process. The same
object is also callable with OpenEvolve's file contract (``evaluate(program_path)``), so it can be
handed to ``openevolve.run_evolution`` as is.

Metrics (what the program database sees): ``combined_score`` = the task scalar, one metric per reward
component (named as the task names them for this problem), ``passed`` (1.0 / 0.0), and for code
``tests_passed`` and ``code_length`` (raw values: OpenEvolve bins MAP-Elites dimensions itself).

Artifacts (what the next prompt sees): per-test verdict codes, the first failing test's input and the
program's output on it, and an error tail. Test inputs/outputs are shown only for problems graded on
public tests: hidden (private) expected outputs never leave the grader.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vpo_harness.benchmarks import Benchmark, Problem

#: MAP-Elites feature dimensions per task when the config does not name any
DEFAULT_FEATURES: dict[str, tuple[str, ...]] = {
    "livecodebench": ("tests_passed", "code_length"),
    "maze": ("gold", "diamond"),
}
ARTIFACT_CAP = 2000  # characters of any one artifact value


def _clip(text: Any, cap: int = ARTIFACT_CAP) -> str:
    s = text if isinstance(text, str) else repr(text)
    return s if len(s) <= cap else s[: cap // 2] + f"\n...[{len(s) - cap} chars cut]...\n" + s[-cap // 2:]


def component_names(task: Benchmark, problem: Problem) -> tuple[str, ...]:
    """Names of this problem's reward components (LiveCodeBench vectors have per-problem length)."""
    per_problem = getattr(task, "components_for", None)
    return tuple(per_problem(problem)) if per_problem is not None else tuple(task.component_names)


def default_feature_dimensions(task: Benchmark) -> list[str]:
    """LCB: tests passed and code length; Maze: gold, diamond; text tasks: their components."""
    return list(DEFAULT_FEATURES.get(task.name, tuple(task.component_names)))


@dataclass
class Evaluation:
    """One graded candidate: the task's reward vector plus the OpenEvolve view of it."""

    answer: str | None
    reward: np.ndarray
    scalar: float
    passed: bool
    metrics: dict[str, float]
    artifacts: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] | None = None
    score_s: float = 0.0


class TaskEvaluator:
    """Grades candidate answers of one problem with the task's reward vector."""

    def __init__(self, task: Benchmark, problem: Problem):
        self.task, self.problem = task, problem
        self.components = component_names(task, problem)
        # inputs/outputs of tests may be shown only when every graded test is public
        self.tests_public = problem.meta.get("test_source", "public") == "public"

    # ---- grading ----------------------------------------------------------------------------------
    def evaluate_many(self, answers: Sequence[str | None]) -> list[Evaluation]:
        """Grade several answers at once (code tasks grade them in parallel on the sandbox pool)."""
        t0 = time.perf_counter()
        answers = list(answers)
        if not answers:
            return []
        r, details = self.task.score(self.problem, answers)
        r = np.asarray(r, dtype=float).reshape(len(answers), -1)
        scal = np.atleast_1d(np.asarray(self.task.scalar(r), dtype=float))
        ok = np.atleast_1d(np.asarray(self.task.passed(r), dtype=bool))
        per = (time.perf_counter() - t0) / len(answers)
        return [self._evaluation(a, r[j], float(scal[j]), bool(ok[j]), details[j] if details else None, per)
                for j, a in enumerate(answers)]

    def evaluate_text(self, text: str, m: int) -> list[Evaluation]:
        """Parse a completion written for the task prompt (``m`` numbered answers, or one) and grade
        every answer, through the one chain-scoring function the runner uses."""
        from vpo_harness.benchmarks.scoring import score_chain

        t0 = time.perf_counter()
        sc = score_chain(self.task, self.problem, text, m)
        per = (time.perf_counter() - t0) / max(1, len(sc.answers))
        return [self._evaluation(a, sc.rewards[j], float(sc.scalars[j]), bool(sc.passed[j]),
                                 sc.details[j] if sc.details else None, per) for j, a in enumerate(sc.answers)]

    def _evaluation(self, ans: str | None, r: np.ndarray, scalar: float, passed: bool,
                    det: dict[str, Any] | None, score_s: float) -> Evaluation:
        return Evaluation(answer=ans, reward=r, scalar=scalar, passed=passed,
                          metrics=self._metrics(ans, r, scalar, passed), artifacts=self._artifacts(ans, r, det),
                          details=det, score_s=score_s)

    def evaluate(self, answer: str | None) -> Evaluation:
        return self.evaluate_many([answer])[0]

    def __call__(self, program_path: str) -> Any:
        """OpenEvolve's evaluator contract: grade the program stored at ``program_path``."""
        from openevolve.evaluation_result import EvaluationResult

        ev = self.evaluate(Path(program_path).read_text(encoding="utf-8", errors="replace"))
        return EvaluationResult(metrics=ev.metrics, artifacts=ev.artifacts)

    # ---- views ------------------------------------------------------------------------------------
    def _metrics(self, answer: str | None, r: np.ndarray, scalar: float, passed: bool) -> dict[str, float]:
        m: dict[str, float] = {"combined_score": scalar}
        names = self.components if len(self.components) == len(r) else [f"c{i}" for i in range(len(r))]
        m.update({n: float(v) for n, v in zip(names, r)})
        m["passed"] = 1.0 if passed else 0.0
        if self.task.name == "livecodebench":
            m["tests_passed"] = float(np.sum(r >= 1.0))
            m["code_length"] = float(len(answer or ""))
        return m

    def _artifacts(self, answer: str | None, r: np.ndarray, det: dict[str, Any] | None) -> dict[str, str]:
        if answer is None:
            return {"error": "no answer could be parsed from the model output"}
        art: dict[str, str] = {}
        if det is None:  # text tasks: the reward vector is the feedback
            names = self.components if len(self.components) == len(r) else [f"c{i}" for i in range(len(r))]
            art["reward"] = ", ".join(f"{n}={v:.3f}" for n, v in zip(names, r))
            return art
        verdicts = det.get("verdicts")
        if verdicts is None:
            art["error"] = str(det.get("reason", "not graded"))
            return art
        art["verdicts"] = " ".join(verdicts)
        first = next((i for i, v in enumerate(verdicts) if v != "pass"), None)
        if first is None:
            return art
        art["first_failure"] = f"test {first + 1}: {verdicts[first]}"
        why = (det.get("errors") or [None] * len(verdicts))[first] if det.get("errors") else None
        if why:
            art["stderr_tail"] = _clip(why[-ARTIFACT_CAP:])
        if self.tests_public and self.task.name == "livecodebench":
            test = self.problem.data["tests"][first]
            art["failing_input"] = _clip(test["input"])
            if verdicts[first] == "wrong_answer":
                got = program_output(self.task, self.problem, answer, test["input"])
                if got is not None:
                    art["program_output"] = _clip(got)
        return art


def program_output(task: Benchmark, problem: Problem, code: str, test_input: str) -> str | None:
    """What ``code`` prints (stdin tasks) or returns (functional) on one public input, run in the
    sandbox; None when it cannot be told (the driver API moved, the run died)."""
    try:
        from vpo_harness.benchmarks.livecodebench_judge import WALL_FACTOR, lcb_driver_source, run_limits

        d = problem.data
        timeout = float(task.options.get("timeout_s", 6.0))
        payload = {"code": code, "mode": d["mode"], "func_name": d.get("func_name"), "timeout_s": timeout,
                   "wall_factor": WALL_FACTOR, "inputs": [test_input], "out_cap": 1 << 16, "first_failure": False}
        res = task.pool.run(lcb_driver_source(), payload, limits=run_limits(1, timeout))
        rec = next((x for x in res.records if x.get("kind") == "test"), None)
        if rec is None:
            return None
        if rec.get("status") == "ok":
            return str(rec.get("out"))
        return f"[{rec.get('status')}] {str(rec.get('err', ''))[-500:]}"
    except Exception:  # noqa: BLE001 - feedback is optional, grading already happened
        return None
