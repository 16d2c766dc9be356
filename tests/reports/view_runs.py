"""Run folders for the `vpo view` tests, written the way the harness writes them: two maze runs on the
same problems (real Maze rewards, scores that vary), an evolve run from a scripted OpenAI server
whose routes improve by chance, a code run with per-test verdicts and sandbox notes, one hostile
completion, and two damaged folders."""
from __future__ import annotations

import json
import random
from pathlib import Path

from vpo_harness.harness.core.store import RunStore, dumps

#: a completion that would script the page if it were ever parsed as HTML
HOSTILE = ('<script>window.__pwned = 1</script><img src="/x-hostile" onerror="window.__pwned = 2">'
           "\ud800 lone surrogate & <b>bold</b>")


def samples_of(folder: Path) -> list[dict]:
    """A run folder's ``samples.jsonl`` rows as written, every version of a row kept (what the view
    pages are checked against)."""
    return [json.loads(ln) for ln in (folder / "samples.jsonl").read_text().splitlines() if ln.strip()]


def eval_runs(root: Path) -> tuple[Path, Path]:
    """Two maze runs on the same 6 problems (a spread 4x2 pool and a collapsed 8x1 one); the first
    chain of the first problem of the spread run holds :data:`HOSTILE` as text and answer."""
    from tests.reports.conftest import write_run

    vpo = write_run(root / "maze-vpo", "hf:checkpoints/maze-tiny-vpo", 4, 2, 6, spread=0.6, seed=1)
    grpo = write_run(root / "maze-grpo", "hf:checkpoints/maze-tiny-grpo", 8, 1, 6, spread=0.1, seed=2)
    path = vpo / "samples.jsonl"
    rows = [json.loads(ln) for ln in path.read_text().splitlines()]
    rows[0]["text"] = HOSTILE
    rows[0]["answers"][0] = HOSTILE  # the stored answer is text too: it must stay inert
    path.write_text("".join(dumps(r) + "\n" for r in rows))
    return vpo, grpo


def code_run(root: Path) -> Path:
    """A LiveCodeBench-shaped run (per-test reward vector, verdict codes, times, isolation, notes),
    still running: no results.json, so the index shows it as partial."""
    folder = root / "code-partial"
    names = [f"test_{i}" for i in range(3)]
    store = RunStore(folder)
    store.init({"format": 2, "identity": {
        "task": {"name": "livecodebench", "split": "test", "options": {"visible_tests": "none"}},
        "model": {"spec": "openai:coder"}, "sampling": {"n": 2, "m": 1, "seed": 0}, "components": names,
        "problems": {"n": 2, "ids": ["lcb-a", "lcb-b"]}}, "ks": [1, 2], "created": "2026-01-02T03:04:05+00:00"})
    iso = {"level": "sealed", "seccomp": True, "netns": True}
    verdicts = [["pass", "pass", "pass"], ["pass", "WA", "TLE"], ["RE", "RE", "RE"]]
    k = 0
    for pid in ("lcb-a", "lcb-b"):
        for c in range(2):
            v = verdicts[k % 3]
            k += 1
            r = [1.0 if x == "pass" else 0.0 for x in v]
            det = {"verdicts": v, "times": [0.01 * (i + 1) for i in range(3)], "wall_s": 0.2, "runs": 1,
                   "isolation": iso, **({"notes": ["memory limit hit on test 2"]} if "TLE" in v else {}),
                   **({"errors": ["Traceback: ZeroDivisionError"]} if "RE" in v else {})}
            store.append({"problem_id": pid, "chain_index": c, "seed": c, "text": f"```python\nprint({k})\n```",
                          "answers": [f"print({k})"], "rewards": [r], "scalars": [sum(r) / 3], "passed": [all(r)],
                          "details": [det], "error": None, "completion_tokens": 7, "finish_reason": "stop"})
    store.append({"problem_id": "lcb-b", "chain_index": 2, "seed": 2, "text": "", "error": "HTTP 500 after 3 attempts",
                  "answers": [], "rewards": [], "scalars": [], "passed": []})
    store.close()
    return folder


def damaged_runs(root: Path) -> tuple[Path, Path]:
    """A folder whose config.json is cut, and a run with one line of garbage between good rows."""
    bad_cfg = root / "broken-config"
    bad_cfg.mkdir(parents=True)
    (bad_cfg / "config.json").write_text('{"format": 2, "identity": {"task": ')
    bad_line = root / "bad-line"
    store = RunStore(bad_line)
    store.init({"format": 2, "identity": {"task": {"name": "maze", "split": "test"}, "model": {"spec": "mock:x"},
                                          "sampling": {"n": 2, "m": 1}, "components": ["a", "b"]}})
    store.close()
    good = [{"problem_id": "p0", "chain_index": c, "text": f"t{c}", "answers": [f"a{c}"], "rewards": [[c, 1 - c]],
             "scalars": [0.5 * c], "passed": [bool(c)], "error": None} for c in range(2)]
    (bad_line / "samples.jsonl").write_text(dumps(good[0]) + "\n{not json\n" + dumps(good[1]) + "\n")
    return bad_cfg, bad_line


def _maze_responder(m: int):
    """Task-mode replies: for the problem in the prompt, m routes drawn from its optimal routes for
    several weightings, a truncated one and a random walk, so scores vary and improve by chance."""
    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.maze import MazeInstance, best_route

    task = get_task("maze")
    table = []
    for p in task.load("test", limit=4):
        maze = MazeInstance.from_problem(p)
        routes = [", ".join(best_route(maze, w)) for w in ((0.1, 0.8, 0.0, 0.1), (0.1, 0.0, 0.8, 0.1),
                                                             (0.25, 0.25, 0.25, 0.25), (1.0, 0.0, 0.0, 0.0))]
        routes.append(", ".join(routes[2].split(", ")[:3]))
        key = task.multi_prompt(p, 2, style="compact")[-1]["content"].split("Budget")[0].strip()
        table.append((key, routes))

    def respond(body: dict, idx: int) -> str:
        rng = random.Random(body.get("seed"))
        text = "\n".join(str(msg.get("content")) for msg in body["messages"])
        routes = next((r for key, r in table if key in text), None)
        pick = [rng.choice(routes) if routes and rng.random() < 0.7 else
                ", ".join(rng.choice(("UP", "DOWN", "LEFT", "RIGHT")) for _ in range(rng.randint(4, 20)))
                for _ in range(m)]
        return "".join(f"<route_{i}>{r}</route_{i}>" for i, r in enumerate(pick, 1))

    return respond


def evolve_run(root: Path, iterations: int = 5, m: int = 2, limit: int = 2) -> Path:
    """A real `vpo evolve` run (OpenEvolve database, islands, parents) against a scripted server."""
    from vpo_harness.search.evolve import EvolveConfig, run_evolve
    from tests.fakes.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(_maze_responder(m)) as srv:
        return run_evolve(EvolveConfig(task="maze", model="openai:scripted", base_url=srv.base_url, problems="all",
                                       limit=limit, iterations=iterations, m=m, prompt_mode="task",
                                       prompt_style="compact", out=str(root / "evolve"), progress=False,
                                       baseline=False))


def all_runs(root: Path) -> dict[str, Path]:
    vpo, grpo = eval_runs(root)
    bad_cfg, bad_line = damaged_runs(root)
    return {"vpo": vpo, "grpo": grpo, "code": code_run(root), "evolve": evolve_run(root),
            "broken_config": bad_cfg, "bad_line": bad_line}


def live_run(root: Path, problems: int = 3, chains: int = 4, first: int = 2) -> tuple[Path, RunStore]:
    """A maze-shaped run still being written: ``first`` chains of the first problem stored, the store
    left open so a test appends more (the runner's own RunStore, as `vpo run` writes)."""
    folder = root / "live-run"
    store = RunStore(folder)
    ids = [f"live-{i}" for i in range(problems)]
    store.init({"format": 2, "identity": {"task": {"name": "maze", "split": "test", "options": {}},
                                          "model": {"spec": "openai:live"}, "sampling": {"n": chains, "m": 1},
                                          "components": ["completion", "gold"], "problems": {"n": problems, "ids": ids}},
                "ks": [1, 2, 4]})
    for c in range(first):
        store.append(live_row(ids[0], c))
    store.flush()
    return folder, store


def live_row(pid: str, c: int) -> dict:
    s = 0.25 * (c % 4)
    return {"problem_id": pid, "chain_index": c, "seed": c, "text": f"<route_1>UP{' RIGHT' * c}</route_1>",
            "answers": [f"UP{' RIGHT' * c}"], "rewards": [[1.0, s]], "scalars": [0.5 + s / 2], "passed": [s == 0.75],
            "error": None}


def big_lineage_run(root: Path, iterations: int = 200, m: int = 4, seed: int = 0) -> Path:
    """An evolve-shaped run of one problem: ``iterations`` iterations of m children each, parents drawn
    among the programs so far (the better ones more often), scores that climb, two islands."""
    rng = random.Random(seed)
    folder = root / "evolve-200"
    store = RunStore(folder)
    store.init({"format": 2, "kind": "evolve", "identity": {
        "task": {"name": "maze", "split": "test", "options": {}}, "model": {"spec": "openai:scripted"},
        "sampling": {"n": iterations + 1, "m": m}, "components": ["completion", "gold"], "kind": "evolve",
        "problems": {"n": 1, "ids": ["big-0"]}}})
    progs: list[tuple[str, float]] = []
    row = 0
    for it in range(iterations + 1):
        parent = None
        if progs:
            pool = sorted(progs, key=lambda p: -p[1])[:8] if rng.random() < 0.7 else progs
            parent = rng.choice(pool)
        for j in range(m):
            score = min(1.0, max(0.0, (parent[1] if parent else 0.1) + rng.uniform(-0.08, 0.1)))
            pid = f"prog-{it:03d}-{j}"
            store.append({"problem_id": "big-0", "chain_index": row, "iteration": it, "answer_index": j, "of": m,
                          "island": it % 2, "parent_id": parent[0] if parent else None, "program_id": pid,
                          "text": "" if j else f"<route_1>{'RIGHT ' * (it % 7)}</route_1>",
                          "answers": [("RIGHT " * (it % 7) + "DOWN " * j).strip() or "UP"],
                          "rewards": [[1.0, score]], "scalars": [score], "passed": [score >= 0.99], "error": None})
            progs.append((pid, score))
            row += 1
    store.close()
    return folder
