"""Evolution of one problem on OpenEvolve's engine.

OpenEvolve supplies the population machinery: ``ProgramDatabase`` (islands, MAP-Elites grid, archive,
parent/inspiration sampling, migration, checkpoint save/load), ``PromptSampler`` (its templates with
parent, inspirations, metrics and artifacts) and the SEARCH/REPLACE and full-rewrite parsers. This
module is the iteration driver, written here rather than using ``ProcessParallelController`` for
four reasons: (1) with ``-m M`` one LLM call yields M children, which its one-child-per-iteration
workers cannot express; (2) candidates are graded by the task in the sandbox pool, never inside an
OpenEvolve worker whose timeouts do not kill; (3) every evaluated candidate is appended as a row of
the run store with its iteration, island, parent and inspirations the moment it is graded, which is
what makes kill -9 + re-run exact; (4) its parallel schedule depends on which worker finishes first.

Determinism. The database is :class:`vpo_harness.search.database.OrderedProgramDatabase` (every collection it
samples from iterates in id order, its own random stream, numbered copy ids), and the database is
only ever touched in one fixed sequence of operations, whatever the timing:

    draw 0, admit 0, draw 1, ..., draw L, admit 1, draw L+1, admit 2, draw L+2, ...

(:func:`schedule`). A *draw* of iteration i picks its island (i mod islands), parent and
inspirations and builds its prompt; an *admit* of iteration j puts its graded children into the
database, then takes OpenEvolve's island-generation and migration steps. The rule it encodes:
iteration 0 seeds the population alone, and iteration i >= 1 draws from the database holding
exactly the results of iterations 0 .. max(0, i - L), admitted in iteration order, with the random
stream advanced by exactly the draws and admissions before it. ``L`` is the lag (``--lag``, part of
the run's identity). Up to L iterations can therefore be generated and graded at once; ``parallel``
(``--parallel W <= L``) only caps how many are, so the rows do not depend on W, on ``--concurrency``,
on the order the server answers in, or on the process's string-hash seed. With L = 1 it is the plain
sequential loop (draw i after admit i - 1).

Prefix mode (``--prompt-mode prefix``). The draw also fixes the child's assistant prefix: the parent's
answer in the task's completion format cut after ``cut`` steps (:meth:`ProblemEvolution._prefix`),
the cut drawn from the iteration's own seed (or the task's plateau rule), so the prefix is a function
of the database state the draw sees and the seeds, like the parent; it is saved with the pending draw
and recorded in the rows (``cut``, ``prefix``). The prompt is the task's own; the client sends the
prefix as an open assistant turn and the completion graded is prefix + continuation.

Resume. A checkpoint is taken right after admitting iteration j (every ``checkpoint_interval`` and
the last): OpenEvolve's database files plus ``vpo_state.json`` (the random state, copy counter,
diversity cache, and the *pending* draws: iterations already drawn but not yet admitted, with their
parent and prompt). A re-run loads the newest usable checkpoint and continues the same sequence;
an iteration whose rows are in the store is admitted from them (its draw is still made, so the
random stream advances as in the live run, and must name the parent the rows name), the others are
generated. Without a usable checkpoint the sequence is replayed from the start.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import random
import shutil
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from vpo_harness.benchmarks import Benchmark, Problem
from vpo_harness.harness.core.seeding import derive_seed
from vpo_harness.benchmarks.steps import adapter_for
from vpo_harness.search.evaluator import Evaluation, TaskEvaluator
from vpo_harness.search.llm import ChatLLM
from vpo_harness.search.pareto import Member, ParetoArchive

log = logging.getLogger("vpo.evolve")
STATE_FILE = "vpo_state.json"  # what a checkpoint holds beyond OpenEvolve's files (see the docstring)
STATE_FORMAT = 1

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
    prompt_mode: str                 # "evolve" | "task" | "prefix"
    prompt_style: str
    seed: int
    checkpoint_root: Path
    write_rows: Callable[[list[dict[str, Any]]], None]
    solved: Callable[[Problem, Evaluation], bool]
    on_iteration: Callable[[str, int, float, bool], None] = lambda pid, it, best, solved: None
    code: bool = True
    lag: int = 1                     # identity: which database state iteration i draws from
    parallel: int = 1                # execution: iterations of this problem generated at once (<= lag)
    llm_slots: asyncio.Semaphore | None = None  # the run's cap on LLM requests in flight
    cut: str = "uniform"             # prefix mode: where the parent's answer is cut (CUT_RULES)
    allow_zero_parents: bool = True  # False: a zero-score parent is redrawn while better ones exist
    select: str = "scalar"           # parents by OpenEvolve's scalar selection, or on the Pareto front (search/pareto.py)


#: prefix mode's cut rules: a uniform step of the parent's answer, or where its reward stopped improving
#: (``SearchAdapter.plateau_cut``; tasks that cannot say fall back to uniform)
CUT_RULES = ("uniform", "plateau")


def program_id(problem_id: str, iteration: int, j: int) -> str:
    """Deterministic ids: a replayed candidate gets the id it had before the crash."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"vpo-evolve/{problem_id}/{iteration}/{j}"))


def chain_index(iteration: int, j: int, m: int) -> int:
    return iteration * m + j


def schedule(iterations: int, lag: int) -> list[tuple[str, int]]:
    """The fixed sequence of database operations for iterations 0..``iterations``: ("draw", i) and
    ("admit", j), where the draw of i >= 1 comes right after the admission of max(0, i - lag)."""
    if lag < 1:
        raise ValueError(f"lag must be >= 1, got {lag}")
    ops: list[tuple[str, int]] = [("draw", 0)]
    admitted = 0
    for i in range(1, iterations + 1):
        while admitted <= max(0, i - lag):
            ops.append(("admit", admitted))
            admitted += 1
        ops.append(("draw", i))
    ops += [("admit", j) for j in range(admitted, iterations + 1)]
    return ops


def complete_iterations(rows: Sequence[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Rows of one problem grouped by iteration, keeping only iterations whose every child was
    written (a crash between two children leaves the iteration to be redone)."""
    by_it: dict[int, dict[int, dict[str, Any]]] = {}
    for r in rows:
        by_it.setdefault(int(r["iteration"]), {})[int(r["answer_index"])] = r  # later rows win
    return {it: [ch[j] for j in sorted(ch)] for it, ch in sorted(by_it.items())
            if len(ch) == int(next(iter(ch.values()))["of"])}


@dataclass
class Draw:
    """One iteration's draw: everything its generation and its admission need, so neither reads the
    database again (the parent may have left it by the time the children are admitted)."""

    iteration: int
    island: int
    parent_id: str | None
    parent_code: str | None
    parent_generation: int
    inspiration_ids: list[str]
    mode: str
    messages: list[dict[str, str]]
    prefix: str = ""                 # prefix mode: the start of the answer the policy continues
    cut: int | None = None           # prefix mode: how many of the parent's steps the prefix keeps


class ProblemEvolution:
    def __init__(self, s: EvolveSettings, problem: Problem):
        from openevolve.prompt.sampler import PromptSampler

        from vpo_harness.search.database import OrderedProgramDatabase

        self.s, self.problem = s, problem
        self.adapter = adapter_for(s.task)  # how this search reads the task's answers (benchmarks/steps.py)
        self.evaluator = TaskEvaluator(s.task, problem)
        self.ckpt_dir = s.checkpoint_root / _safe(problem.id) / "checkpoints"
        self.db = OrderedProgramDatabase(s.config.database, name=problem.id,
                                         seed=derive_seed(s.seed, problem.id, 0, "db"))
        self.sampler = PromptSampler(s.config.prompt)
        self.ops = schedule(s.iterations, s.lag)
        self.pending: dict[int, Draw] = {}  # drawn, not yet admitted
        # --select pareto: the non-dominated candidates, which the parents are drawn from
        self.front: ParetoArchive | None = ParetoArchive() if s.select == "pareto" else None
        self._task_text: str | None = None
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None
        self._writes: list[concurrent.futures.Future] = []
        self._last_saved: tuple[str, dict[str, str]] | None = None  # the writer thread's: see checkpoint()
        self.best = float("-inf")
        self.solved_at: int | None = None

    # ---- resume -------------------------------------------------------------------------------------
    def checkpoints(self) -> list[tuple[int, Path]]:
        """This problem's complete checkpoints, newest first."""
        if not self.ckpt_dir.is_dir():
            return []
        found = [(int(p.name[11:]), p) for p in self.ckpt_dir.iterdir()
                 if p.is_dir() and p.name.startswith("checkpoint_") and p.name[11:].isdigit()
                 and (p / "metadata.json").exists() and (p / STATE_FILE).exists()]
        return sorted(found, reverse=True)

    def restore(self, rows: Sequence[dict[str, Any]]) -> tuple[int, dict[int, list[dict[str, Any]]]]:
        """Load the newest checkpoint the rows cover (database, random stream, pending draws);
        returns the position in :attr:`ops` to continue from and the complete iterations in the rows."""
        done = complete_iterations(rows)
        pos = 0
        for it, path in self.checkpoints():
            state = json.loads((path / STATE_FILE).read_text())
            # usable when the rows hold every iteration it admitted (a kill leaves them so: rows are
            # written before their admission; a hand-edited samples.jsonl may not)
            if (state.get("format") != STATE_FORMAT or state.get("lag") != self.s.lag
                    or ("admit", it) not in self.ops or any(i not in done for i in range(it + 1))
                    or (self.front is not None and "front" not in state)):
                continue
            self.db.load_extra_state(state["db"])
            if self.front is not None:
                self.front = ParetoArchive.from_state(state["front"])
            with self.db.streams():
                self.db.load(str(path))
            self.pending = {int(d["iteration"]): Draw(**d) for d in state["pending"]}
            pos = self.ops.index(("admit", it)) + 1
            break
        for it, rs in done.items():
            for r in rs:
                self._track(it, r["scalars"][0], bool(r.get("solved")))
        return pos, done

    # ---- the schedule --------------------------------------------------------------------------------
    async def run(self, rows: Sequence[dict[str, Any]]) -> None:
        """Walk :attr:`ops` in order. A draw is made as soon as the walk reaches it; its generation
        starts when fewer than ``parallel`` are running; an admission waits for its iteration's rows."""
        pos, done = self.restore(rows)
        ready: dict[int, list[dict[str, Any]]] = {}
        queue = [d for it, d in sorted(self.pending.items())]
        for d in list(queue):  # drawn before the checkpoint; finished (rows written) since
            if d.iteration in done:
                ready[d.iteration] = self._replayed(d, done[d.iteration])
                queue.remove(d)
        live: dict[asyncio.Task, int] = {}
        width = max(1, min(self.s.parallel, self.s.lag))

        def launch() -> bool:
            started = False
            while queue and len(live) < width:
                d = queue.pop(0)
                live[asyncio.ensure_future(self._generate(d))] = d.iteration
                started = True
            return started

        try:
            while True:
                while pos < len(self.ops):
                    kind, it = self.ops[pos]
                    if kind == "draw":
                        d = self.draw(it)
                        if it in done:
                            ready[it] = self._replayed(d, done[it])
                        else:
                            queue.append(d)
                    else:
                        if it not in ready:
                            break
                        self._admit(self.pending.pop(it), ready.pop(it))
                        if it % self.s.config.checkpoint_interval == 0 or it == self.s.iterations:
                            self.checkpoint(it)
                    pos += 1
                    if launch():  # let the request go out before the next draw is built
                        await asyncio.sleep(0)
                launch()
                if pos == len(self.ops):
                    # the search of this problem is over: its last checkpoint is still being written
                    # by the writer thread, and the caller awaits it (finish_writes) before the run
                    # ends, so the problem's slot goes to the next problem without waiting for disk
                    return
                if not live:  # cannot happen: the next admission's iteration is drawn and not ready
                    raise RuntimeError(f"evolve schedule of {self.problem.id} stalled at {self.ops[pos]}")
                finished, _ = await asyncio.wait(live, return_when=asyncio.FIRST_COMPLETED)
                failed = None
                for task in sorted(finished, key=lambda t: live[t]):
                    it = live.pop(task)
                    if task.exception() is not None:  # the others' rows are still written first
                        failed = failed or task.exception()
                        continue
                    new = task.result()
                    self.s.write_rows(new)
                    for r in new:
                        self._track(it, r["scalars"][0], r["solved"])
                    ready[it] = new
                if failed is not None:
                    raise failed
        except BaseException:
            for task in live:
                task.cancel()
            if live:
                await asyncio.gather(*live, return_exceptions=True)
            await self.finish_writes()
            raise

    async def finish_writes(self) -> None:
        """Wait for the checkpoint writes :meth:`run` left behind (after it returns, a finished
        problem's last checkpoint is on disk once this returns)."""
        if self._writes or self._writer is not None:
            await self._drain_checkpoints()

    def draw(self, it: int) -> Draw:
        """Island, parent, inspirations and prompt of iteration ``it`` (the database's random stream
        advances here, also when the iteration's rows are replayed)."""
        cfg = self.s.config
        island = it % cfg.database.num_islands
        parent = None
        inspirations: list[Any] = []
        with self.db.streams():
            if self.front is not None:
                if self.front:  # the front's draws take the database's stream, in the schedule's order
                    p, ins = self.front.draw(self.db.rand, cfg.prompt.num_diverse_programs)
                    parent, inspirations = _program(p, cfg.language), [_program(m, cfg.language) for m in ins]
            elif self.db.programs:
                parent, inspirations = self.db.sample_from_island(island, cfg.prompt.num_diverse_programs,
                                                                  allow_zero=self.s.allow_zero_parents)
            mode, messages = self._messages(it, island, parent, inspirations)
        prefix, cut = self._prefix(it, parent) if mode == "prefix" else ("", None)
        d = Draw(iteration=it, island=island, parent_id=parent.id if parent is not None else None,
                 parent_code=parent.code if parent is not None else None,
                 parent_generation=parent.generation if parent is not None else -1,
                 inspiration_ids=[p.id for p in inspirations], mode=mode, messages=messages,
                 prefix=prefix, cut=cut)
        self.pending[it] = d
        return d

    def _replayed(self, d: Draw, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stored rows of a drawn iteration; they must name the parent and inspirations just drawn."""
        r = rows[0]
        if r.get("parent_id") != d.parent_id or r.get("inspiration_ids", d.inspiration_ids) != d.inspiration_ids:
            raise RuntimeError(
                f"problem {self.problem.id} iteration {d.iteration}: the stored row names parent "
                f"{r.get('parent_id')} but the replay drew {d.parent_id}: the run folder was written by another "
                "search (an older vpo-harness?); use another --out folder")
        return rows

    async def _generate(self, d: Draw) -> list[dict[str, Any]]:
        s, it = self.s, d.iteration
        seed = derive_seed(s.seed, self.problem.id, it, "llm")
        # the prefix travels only when there is one: clients of the other modes are called as before
        kw = {"prefix": d.prefix} if d.prefix else {}
        if s.llm_slots is not None:
            async with s.llm_slots:
                comp = await s.llm.complete(d.messages, seed, **kw)
        else:
            comp = await s.llm.complete(d.messages, seed, **kw)
        if d.mode in ("task", "mutation", "prefix", "feedback"):  # all answer in the task's own format
            grade, arg = self.evaluator.evaluate_text, (comp.text, s.m)
        else:
            grade, arg = self.evaluator.evaluate_many, (self._parse(comp.text, d.mode, d.parent_code),)
        # programs run in the sandbox pool for seconds: off the event loop. A text answer is scored in
        # microseconds, less than a thread handoff costs, so it is scored here.
        evals = await asyncio.to_thread(grade, *arg) if s.code else grade(*arg)
        answers = [ev.answer for ev in evals]
        rows = []
        for j, (ans, ev) in enumerate(zip(answers, evals)):
            solved = bool(ans is not None and s.solved(self.problem, ev))
            rows.append({
                "problem_id": self.problem.id, "chain_index": chain_index(it, j, len(answers)),
                "iteration": it, "answer_index": j, "of": len(answers), "island": d.island,
                "parent_id": d.parent_id, "inspiration_ids": list(d.inspiration_ids),
                "program_id": program_id(self.problem.id, it, j), "evolution_mode": d.mode, "seed": seed,
                "text": comp.text if j == 0 else None,
                "answers": [ans], "rewards": [[round(float(x), 6) for x in ev.reward]],
                "scalars": [round(ev.scalar, 6)], "passed": [ev.passed], "solved": solved, "n_unique": 1,
                "metrics": {k: round(v, 6) for k, v in ev.metrics.items()}, "artifacts": ev.artifacts,
                **({"details": [ev.details]} if ev.details is not None else {}),
                "prompt_tokens": comp.prompt_tokens if j == 0 else 0,
                "completion_tokens": comp.completion_tokens if j == 0 else 0,
                "finish_reason": comp.finish_reason, "latency_s": round(comp.latency_s, 6) if j == 0 else 0.0,
                "score_s": round(ev.score_s, 6), "error": None,
                **({"cut": d.cut, "prefix": d.prefix if j == 0 else None} if d.mode == "prefix" else {}),
            })
        return rows

    def _track(self, it: int, scalar: float, solved: bool) -> None:
        self.best = max(self.best, float(scalar))
        if solved and (self.solved_at is None or it < self.solved_at):
            self.solved_at = it
        self.s.on_iteration(self.problem.id, it, self.best, self.solved_at is not None)

    def _admit(self, d: Draw, rows: Sequence[dict[str, Any]]) -> None:
        """Children into the database (answers that parsed and differ from their parent), then the
        island generation and migration steps OpenEvolve's controller takes per result."""
        from openevolve.database import Program

        cfg = self.s.config
        has_parent = d.parent_id is not None
        with self.db.streams():
            for r in rows:
                ans = r["answers"][0]
                if ans is None or (has_parent and ans == d.parent_code):
                    continue
                if self.front is not None:
                    self.front.add(Member(id=r["program_id"], code=ans, reward=tuple(r["rewards"][0]),
                                          generation=d.parent_generation + 1 if has_parent else 0,
                                          metrics=dict(r["metrics"])))
                if r["program_id"] in self.db.programs:
                    continue
                prog = Program(id=r["program_id"], code=ans, language=cfg.language, parent_id=d.parent_id,
                               generation=d.parent_generation + 1 if has_parent else 0,
                               metrics=dict(r["metrics"]), iteration_found=d.iteration,
                               metadata={"island": d.island, "evolution_mode": r["evolution_mode"],
                                         "answer_index": r["answer_index"]})
                if self.db.add(prog, iteration=d.iteration, target_island=d.island) is None:
                    continue
                if r.get("artifacts"):
                    self.db.store_artifacts(prog.id, r["artifacts"])
            self.db.increment_island_generation(island_idx=d.island)
            if self.db.should_migrate():
                self.db.migrate_programs()

    def checkpoint(self, it: int) -> None:
        """OpenEvolve's checkpoint layout plus :data:`STATE_FILE`. What it holds is taken here, at
        this point of the schedule; the files (one per program) are written by this problem's writer
        thread while the search goes on, to a temporary folder renamed into place, so a kill mid-write
        never leaves a half checkpoint that looks complete."""
        with self.db.streams():
            best = self.db.get_best_program()
        snap = self.db.snapshot()
        state = {"format": STATE_FORMAT, "iteration": it, "lag": self.s.lag, "db": self.db.extra_state(),
                 "pending": [asdict(d) for _, d in sorted(self.pending.items())]}
        if self.front is not None:
            state["front"] = self.front.state()
        info = None if best is None else (best.code, {
            "id": best.id, "generation": best.generation, "iteration": best.iteration_found,
            "parent_id": best.parent_id, "metrics": dict(best.metrics), "language": best.language})
        if self._writer is None:
            self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="vpo-checkpoint")
        # a checkpoint still queued behind a write is superseded by this one (resume takes the newest,
        # and only two are kept): it is dropped rather than written and deleted
        self._writes = [f for f in self._writes if not f.cancel()]
        self._writes.append(self._writer.submit(self._write_checkpoint, it, snap, state, info))

    def _write_checkpoint(self, it: int, snap: Any, state: dict[str, Any], best: tuple[str, dict] | None) -> None:
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        final = self.ckpt_dir / f"checkpoint_{it}"
        tmp = self.ckpt_dir / f".checkpoint_{it}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        snap.link_from = self._last_saved  # unchanged program files are linked from the previous one
        snap.save(str(tmp), it)
        (tmp / STATE_FILE).write_text(json.dumps(state))
        if best is not None:
            suffix = self.s.config.file_suffix or ".txt"
            (tmp / f"best_program{suffix}").write_text(best[0])
            (tmp / "best_program_info.json").write_text(json.dumps(best[1], indent=2))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        self._last_saved = (str(final / "programs"), snap.saved_texts)
        keep = sorted((int(p.name[11:]), p) for p in self.ckpt_dir.glob("checkpoint_*") if p.name[11:].isdigit())
        for _, old in keep[:-2]:  # the last two are enough to resume; the rows hold the history
            shutil.rmtree(old, ignore_errors=True)

    async def _drain_checkpoints(self) -> None:
        """Wait for the checkpoint writes (a finished problem has its last checkpoint on disk)."""
        writes, self._writes = self._writes, []
        try:
            for f in writes:
                await asyncio.wrap_future(f)
        finally:
            if self._writer is not None:
                self._writer.shutdown(wait=False)
                self._writer = None

    # ---- prompts and parsing ---------------------------------------------------------------------------
    def _task_prompt(self) -> list[dict[str, str]]:
        s = self.s
        if s.m == 1:
            return s.task.prompt(self.problem, style=s.prompt_style)
        return s.task.multi_prompt(self.problem, s.m, style=s.prompt_style)

    def _prefix(self, it: int, parent: Any) -> tuple[str, int]:
        """Prefix mode: the parent's answer in the task's completion format, cut after ``cut`` steps.
        ``uniform`` draws the cut from this iteration's own seed (a function of run seed, problem and
        iteration, so replays, W and hash seeds cannot move it), uniform over 0 .. steps - 1, so at
        least one step is rewritten; ``plateau`` cuts where the parent's reward stopped improving
        when the task can say (Maze), else uniformly."""
        s, ad = self.s, self.adapter
        steps = ad.steps(self.problem, parent.code)
        cut = ad.plateau_cut(self.problem, parent.code) if s.cut == "plateau" else None
        if cut is None:
            rng = random.Random(derive_seed(s.seed, self.problem.id, it, "cut"))
            cut = rng.randrange(len(steps)) if steps else 0
        cut = max(0, min(int(cut), len(steps)))
        return ad.prefix(self.problem, parent.code, cut, s.m), cut

    def _messages(self, it: int, island: int, parent: Any, inspirations: list[Any]) -> tuple[str, list[dict[str, str]]]:
        s, cfg = self.s, self.s.config
        if s.prompt_mode == "task" or parent is None:
            # the task's own prompt; also how every problem's population is seeded at iteration 0
            return "task", self._task_prompt()
        if s.prompt_mode == "prefix":  # the task's own prompt; the draw adds the parent's answer prefix
            return "prefix", self._task_prompt()
        if s.prompt_mode == "feedback":
            return "feedback", self._feedback_prompt(parent)
        own = self._task_mutation(parent, inspirations)
        if own is not None:
            return "mutation", own
        diff = bool(cfg.diff_based_evolution) and s.m == 1
        # called inside self.db.streams(): the sampler draws from this problem's stream
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
        if self._task_text is None:  # the same for every draw of this problem
            self._task_text = "\n\n".join(m["content"] for m in s.task.prompt(self.problem, style=s.prompt_style))
        system = f"{prompt['system']}\n\n# The task\n{self._task_text}"
        user = prompt["user"]
        if s.m > 1:
            user += MULTI_EVOLVE_ASK.format(m=s.m, what="program" if s.code else "answer",
                                            lang=cfg.language if s.code else "text")
        return ("diff" if diff else "full_rewrite"), [{"role": "system", "content": system},
                                                     {"role": "user", "content": user}]

    def _feedback_prompt(self, parent: Any) -> list[dict[str, str]]:
        """Feedback mode: the task's own prompt, then the parent's answer and its reward components in
        words (``feedback`` of the task's adapter, benchmarks/steps.py: Maze says which items the
        route collects and which lava it crosses), and a request for a better answer in the format
        asked. For models that read text (Qwen3, any OpenAI-compatible model); a task-trained policy
        that only knows the task prompt gets prefix mode instead."""
        s, ad = self.s, self.adapter
        names = self.evaluator.components
        reward = tuple(float(parent.metrics.get(c, 0.0)) for c in names)
        what = "an answer" if s.m == 1 else f"{s.m} different answers"
        follow = (f"\n\nAn earlier answer to this task: {ad.shown_answer(self.problem, parent.code)}\n"
                  f"How it did: {ad.feedback(self.problem, parent.code, reward, names)}\n"
                  f"Write {what} that keep what it gets right and do better where it falls short, "
                  "in the format asked above.")
        messages = [dict(m) for m in self._task_prompt()]
        messages[-1]["content"] += follow
        return messages

    def _task_mutation(self, parent: Any, inspirations: list[Any]) -> list[dict[str, str]] | None:
        """The task's own mutation prompt (``SearchAdapter.mutation_prompt``) for non-code tasks that have
        one: the parent and inspirations with their reward vectors, answers in the task's format.
        Code tasks keep OpenEvolve's prompt (programs, diffs, artifacts)."""
        from vpo_harness.benchmarks.base import Shown

        if self.s.code:
            return None
        names = self.evaluator.components

        def shown(prog: Any) -> Shown:
            return Shown(prog.code, tuple(float(prog.metrics.get(c, 0.0)) for c in names))

        return self.adapter.mutation_prompt(self.problem, shown(parent), [shown(p) for p in inspirations],
                                            self.s.m, style=self.s.prompt_style)

    def _parse(self, text: str, mode: str, parent_code: str | None) -> list[str | None]:
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
            child, applied = apply_diff_blocks(parent_code or "", blocks) if blocks else (parent_code, 0)
            return [child if applied else None]
        code = parse_full_rewrite(text, s.config.language)
        if not s.code:  # a route written as text: the task's parser reads it from the block
            code = s.task.parse_single(code or "")
        return [code.strip() if code and code.strip() else None]


def _program(m: Member, language: str) -> Any:
    """A front member as the OpenEvolve ``Program`` the prompts and rows read (id, code, generation,
    metrics): the member may have left the database, which evicts by scalar score."""
    from openevolve.database import Program

    return Program(id=m.id, code=m.code, language=language, generation=m.generation, metrics=dict(m.metrics))


def _split_blocks(text: str) -> list[str]:
    import re

    fenced = re.findall(r"```[^\n`]*\n(.*?)```", text or "", re.S)
    return fenced or [p for p in re.split(r"^\s*---+\s*$", text or "", flags=re.M) if p.strip()]


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)
