"""Evolution of one problem on OpenEvolve's engine.

OpenEvolve supplies the population machinery: ``ProgramDatabase`` (islands, MAP-Elites grid, archive,
parent/inspiration sampling, migration, checkpoint save/load), ``PromptSampler`` (its templates with
parent, inspirations, metrics and artifacts) and the SEARCH/REPLACE and full-rewrite parsers. This
module is the iteration driver, written here rather than using ``ProcessParallelController`` for
three reasons the issue names: (1) with ``-m M`` one LLM call yields M children, which its
one-child-per-iteration workers cannot express; (2) candidates are graded by the task in the sandbox
pool, never inside an OpenEvolve worker whose timeouts do not kill; (3) every evaluated candidate is
appended as a row of the run store with its iteration, island and parent the moment it is graded,
which is what makes kill -9 + re-run exact. The driver mirrors the controller's bookkeeping order
(sample from island -> prompt -> LLM -> parse -> evaluate -> ``database.add`` -> artifacts -> island
generation -> migration -> checkpoint).

OpenEvolve's database draws from the global ``random`` module; several problems evolve concurrently
in one event loop, so each problem keeps its own ``random`` state and swaps it in around every
database call (no awaits inside), which keeps a problem's trajectory independent of the others.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from benchmarks import Benchmark, Problem
from harness.seeding import derive_seed
from search.evaluator import Evaluation, TaskEvaluator
from search.llm import ChatLLM

log = logging.getLogger("vpo.evolve")
RNG_FILE = "vpo_random_state.json"  # this problem's random state at the checkpoint (exact replay)

MULTI_EVOLVE_ASK = (
    "\n\n# Output format for this round\nInstead of a diff, write {m} different complete new versions of the "
    "{what}. Each must take a different approach. Put each one in its own fenced ```{lang} block and "
    "separate consecutive versions with a line containing only ---.")


@dataclass
class EvolveSettings:
    """What every problem's evolution shares (built once per run)."""

    task: Benchmark
    config: Any                      # openevolve.config.Config (effective)
    llm: ChatLLM
    iterations: int
    m: int
    prompt_mode: str                 # "evolve" | "task"
    prompt_style: str
    seed: int
    checkpoint_root: Path
    write_rows: Callable[[list[dict[str, Any]]], None]
    solved: Callable[[Problem, Evaluation], bool]
    on_iteration: Callable[[str, int, float, bool], None] = lambda pid, it, best, solved: None
    code: bool = True


def program_id(problem_id: str, iteration: int, j: int) -> str:
    """Deterministic ids: a replayed candidate gets the id it had before the crash."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"vpo-evolve/{problem_id}/{iteration}/{j}"))


def chain_index(iteration: int, j: int, m: int) -> int:
    return iteration * m + j


def complete_iterations(rows: Sequence[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Rows of one problem grouped by iteration, keeping only iterations whose every child was
    written (a crash between two children leaves the iteration to be redone)."""
    by_it: dict[int, dict[int, dict[str, Any]]] = {}
    for r in rows:
        by_it.setdefault(int(r["iteration"]), {})[int(r["answer_index"])] = r  # later rows win
    return {it: [ch[j] for j in sorted(ch)] for it, ch in sorted(by_it.items())
            if len(ch) == int(next(iter(ch.values()))["of"])}


class ProblemEvolution:
    def __init__(self, s: EvolveSettings, problem: Problem):
        from openevolve.database import ProgramDatabase
        from openevolve.prompt.sampler import PromptSampler

        self.s, self.problem = s, problem
        self.evaluator = TaskEvaluator(s.task, problem)
        self.ckpt_dir = s.checkpoint_root / _safe(problem.id) / "checkpoints"
        self._rng_state = random.Random(derive_seed(s.seed, problem.id, 0, "db")).getstate()
        with self._rng():
            self.db = ProgramDatabase(s.config.database)
        self.sampler = PromptSampler(s.config.prompt)
        self.best = float("-inf")
        self.solved_at: int | None = None

    # ---- random state isolation --------------------------------------------------------------------
    @contextlib.contextmanager
    def _rng(self) -> Iterator[None]:
        outer = random.getstate()
        random.setstate(self._rng_state)
        try:
            yield
        finally:
            self._rng_state = random.getstate()
            random.setstate(outer)

    # ---- resume -------------------------------------------------------------------------------------
    def latest_checkpoint(self) -> tuple[int, Path] | None:
        if not self.ckpt_dir.is_dir():
            return None
        found = []
        for p in self.ckpt_dir.iterdir():
            if p.is_dir() and p.name.startswith("checkpoint_") and p.name[11:].isdigit() and (p / "metadata.json").exists():
                found.append((int(p.name[11:]), p))
        return max(found) if found else None

    def restore(self, rows: Sequence[dict[str, Any]]) -> tuple[int, dict[int, list[dict[str, Any]]]]:
        """Load the last checkpoint (database and this problem's random state); returns the first
        iteration after it and the complete iterations the rows hold, to be replayed from there."""
        done = complete_iterations(rows)
        ck = self.latest_checkpoint()
        start = 0
        if ck is not None and ck[0] in done:
            with self._rng():
                self.db.load(str(ck[1]))
            if (ck[1] / RNG_FILE).exists():  # absent in checkpoints written by OpenEvolve itself
                state = json.loads((ck[1] / RNG_FILE).read_text())
                self._rng_state = (state[0], tuple(state[1]), state[2])
            start = ck[0] + 1
        for it, rs in done.items():
            for r in rs:
                self._track(it, r["scalars"][0], bool(r.get("solved")))
        return start, done

    # ---- one iteration -------------------------------------------------------------------------------
    async def run(self, rows: Sequence[dict[str, Any]]) -> None:
        start, done = self.restore(rows)
        for it in range(start, self.s.iterations + 1):
            await self.step(it, done.get(it))

    async def step(self, it: int, replay: list[dict[str, Any]] | None = None) -> None:
        """One iteration. With ``replay`` (the rows a killed run wrote for it) a parent is still drawn
        and the prompt built, so the random state advances as in the live run, but the recorded
        children (with their recorded parent) are admitted instead of calling the model again."""
        s, cfg = self.s, self.s.config
        island = it % cfg.database.num_islands
        parent = None
        inspirations: list[Any] = []
        with self._rng():
            if self.db.programs:
                parent, inspirations = self.db.sample_from_island(island, cfg.prompt.num_diverse_programs)
        mode, messages = self._messages(it, island, parent, inspirations)
        if replay is not None:
            self._admit(it, replay)
        else:
            rows = await self._generate(it, island, parent, mode, messages)
            s.write_rows(rows)
            self._admit(it, rows)
            for r in rows:
                self._track(it, r["scalars"][0], r["solved"])
        if it % cfg.checkpoint_interval == 0 or it == s.iterations:
            self.checkpoint(it)

    async def _generate(self, it: int, island: int, parent: Any, mode: str,
                        messages: list[dict[str, str]]) -> list[dict[str, Any]]:
        s = self.s
        seed = derive_seed(s.seed, self.problem.id, it, "llm")
        comp = await s.llm.complete(messages, seed)
        if mode in ("task", "mutation"):  # both answer in the task's own format
            evals = await asyncio.to_thread(self.evaluator.evaluate_text, comp.text, s.m)
        else:
            evals = await asyncio.to_thread(self.evaluator.evaluate_many, self._parse(comp.text, mode, parent))
        answers = [ev.answer for ev in evals]
        rows = []
        for j, (ans, ev) in enumerate(zip(answers, evals)):
            solved = bool(ans is not None and s.solved(self.problem, ev))
            rows.append({
                "problem_id": self.problem.id, "chain_index": chain_index(it, j, len(answers)),
                "iteration": it, "answer_index": j, "of": len(answers), "island": island,
                "parent_id": parent.id if parent is not None else None,
                "program_id": program_id(self.problem.id, it, j), "evolution_mode": mode, "seed": seed,
                "text": comp.text if j == 0 else None,
                "answers": [ans], "rewards": [[round(float(x), 6) for x in ev.reward]],
                "scalars": [round(ev.scalar, 6)], "passed": [ev.passed], "solved": solved, "n_unique": 1,
                "metrics": {k: round(v, 6) for k, v in ev.metrics.items()}, "artifacts": ev.artifacts,
                **({"details": [ev.details]} if ev.details is not None else {}),
                "prompt_tokens": comp.prompt_tokens if j == 0 else 0,
                "completion_tokens": comp.completion_tokens if j == 0 else 0,
                "finish_reason": comp.finish_reason, "latency_s": round(comp.latency_s, 6) if j == 0 else 0.0,
                "score_s": round(ev.score_s, 6), "error": None,
            })
        return rows

    def _track(self, it: int, scalar: float, solved: bool) -> None:
        self.best = max(self.best, float(scalar))
        if solved and (self.solved_at is None or it < self.solved_at):
            self.solved_at = it
        self.s.on_iteration(self.problem.id, it, self.best, self.solved_at is not None)

    def _admit(self, it: int, rows: Sequence[dict[str, Any]]) -> None:
        """Children into the database (answers that parsed and differ from their parent), then the
        island generation and migration steps OpenEvolve's controller takes per result."""
        from openevolve.database import Program

        cfg = self.s.config
        island = int(rows[0]["island"])
        with self._rng():
            parent = self.db.get(rows[0]["parent_id"]) if rows[0]["parent_id"] else None
            for r in rows:
                ans = r["answers"][0]
                if ans is None or (parent is not None and ans == parent.code) or r["program_id"] in self.db.programs:
                    continue
                prog = Program(id=r["program_id"], code=ans, language=cfg.language,
                               parent_id=r["parent_id"] if parent is not None else None,
                               generation=(parent.generation + 1) if parent is not None else 0,
                               metrics=dict(r["metrics"]), iteration_found=it,
                               metadata={"island": island, "evolution_mode": r["evolution_mode"],
                                         "answer_index": r["answer_index"]})
                if self.db.add(prog, iteration=it, target_island=island) is None:
                    continue
                if r.get("artifacts"):
                    self.db.store_artifacts(prog.id, r["artifacts"])
            self.db.increment_island_generation(island_idx=island)
            if self.db.should_migrate():
                self.db.migrate_programs()

    def checkpoint(self, it: int) -> None:
        """OpenEvolve's checkpoint layout, written to a temporary folder and renamed into place so a
        kill mid-write never leaves a half checkpoint that looks complete."""
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        final = self.ckpt_dir / f"checkpoint_{it}"
        tmp = self.ckpt_dir / f".checkpoint_{it}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        with self._rng():
            self.db.save(str(tmp), it)
            best = self.db.get_best_program()
        v, state, gauss = self._rng_state
        (tmp / RNG_FILE).write_text(json.dumps([v, list(state), gauss]))
        if best is not None:
            suffix = self.s.config.file_suffix or ".txt"
            (tmp / f"best_program{suffix}").write_text(best.code)
            (tmp / "best_program_info.json").write_text(json.dumps(
                {"id": best.id, "generation": best.generation, "iteration": best.iteration_found,
                 "parent_id": best.parent_id, "metrics": best.metrics, "language": best.language}, indent=2))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        keep = sorted((int(p.name[11:]), p) for p in self.ckpt_dir.glob("checkpoint_*") if p.name[11:].isdigit())
        for _, old in keep[:-2]:  # the last two are enough to resume; the rows hold the history
            shutil.rmtree(old, ignore_errors=True)

    # ---- prompts and parsing ---------------------------------------------------------------------------
    def _messages(self, it: int, island: int, parent: Any, inspirations: list[Any]) -> tuple[str, list[dict[str, str]]]:
        s, cfg = self.s, self.s.config
        if s.prompt_mode == "task" or parent is None:
            # the task's own prompt; also how every problem's population is seeded at iteration 0
            if s.m == 1:
                return "task", s.task.prompt(self.problem, style=s.prompt_style)
            return "task", s.task.multi_prompt(self.problem, s.m, style=s.prompt_style)
        own = self._task_mutation(parent, inspirations)
        if own is not None:
            return "mutation", own
        diff = bool(cfg.diff_based_evolution) and s.m == 1
        with self._rng():
            if diff and cfg.full_rewrite_probability > 0:
                diff = random.Random(f"{s.seed}:{self.problem.id}:{it}").random() >= cfg.full_rewrite_probability
            island_progs = sorted((self.db.programs[p] for p in self.db.islands[island] if p in self.db.programs),
                                  key=lambda p: p.metrics.get("combined_score", 0.0), reverse=True)
            top = island_progs[: cfg.prompt.num_top_programs + cfg.prompt.num_diverse_programs]
            prompt = self.sampler.build_prompt(
                current_program=parent.code, parent_program=parent.code, program_metrics=parent.metrics,
                previous_programs=[p.to_dict() for p in island_progs[: cfg.prompt.num_top_programs]],
                top_programs=[p.to_dict() for p in top], inspirations=[p.to_dict() for p in inspirations],
                language=cfg.language, evolution_round=it, diff_based_evolution=diff,
                program_artifacts=self.db.get_artifacts(parent.id) or None,
                feature_dimensions=list(cfg.database.feature_dimensions), island_id=island)
        task_text = "\n\n".join(msg["content"] for msg in s.task.prompt(self.problem, style=s.prompt_style))
        system = f"{prompt['system']}\n\n# The task\n{task_text}"
        user = prompt["user"]
        if s.m > 1:
            user += MULTI_EVOLVE_ASK.format(m=s.m, what="program" if s.code else "answer",
                                            lang=cfg.language if s.code else "text")
        return ("diff" if diff else "full_rewrite"), [{"role": "system", "content": system},
                                                     {"role": "user", "content": user}]

    def _task_mutation(self, parent: Any, inspirations: list[Any]) -> list[dict[str, str]] | None:
        """The task's own mutation prompt (``Benchmark.mutation_prompt``) for non-code tasks that have
        one: the parent and inspirations with their reward vectors, answers in the task's format.
        Code tasks keep OpenEvolve's prompt (programs, diffs, artifacts)."""
        from benchmarks.base import Shown

        if self.s.code:
            return None
        names = self.evaluator.components

        def shown(prog: Any) -> Shown:
            return Shown(prog.code, tuple(float(prog.metrics.get(c, 0.0)) for c in names))

        return self.s.task.mutation_prompt(self.problem, shown(parent), [shown(p) for p in inspirations],
                                           self.s.m, style=self.s.prompt_style)

    def _parse(self, text: str, mode: str, parent: Any) -> list[str | None]:
        """Children of an evolve-mode completion: the parent with the SEARCH/REPLACE blocks applied,
        the rewritten program, or (``-m M``) M rewritten programs. Task-mode completions are parsed by
        the task itself (``TaskEvaluator.evaluate_text``)."""
        s = self.s
        from openevolve.utils.code_utils import apply_diff_blocks, extract_diffs, parse_full_rewrite

        if s.m > 1:
            if s.code:
                return s.task.parse(text, s.m)
            blocks = [b.strip() for b in _split_blocks(text)]
            return ([b or None for b in blocks] + [None] * s.m)[: s.m]
        if mode == "diff":
            try:
                blocks = extract_diffs(text, s.config.diff_pattern)
            except ValueError:
                blocks = []
            child, applied = apply_diff_blocks(parent.code, blocks) if blocks else (parent.code, 0)
            return [child if applied else None]
        code = parse_full_rewrite(text, s.config.language)
        if not s.code:  # a route written as text: the task's parser reads it from the block
            code = s.task.parse_single(code or "")
        return [code.strip() if code and code.strip() else None]


def _split_blocks(text: str) -> list[str]:
    import re

    fenced = re.findall(r"```[^\n`]*\n(.*?)```", text or "", re.S)
    return fenced or [p for p in re.split(r"^\s*---+\s*$", text or "", flags=re.M) if p.strip()]


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)
