"""`vpo view` on a 100k-candidate run: how long the pages take next to reading samples.jsonl once.

Writes a synthetic run through the real RunStore (problems x chains x m candidates, texts of a few
hundred characters, reward vectors that vary), serves it with the real server on loopback and times,
over HTTP: the first run page (builds the byte-offset index in one pass over the file; best of
--rounds fresh servers), the same page
again (cached), a problem's first and last page of candidates, a problem sorted by score, the index
of runs, the run page after more rows were appended (the index only reads the new bytes), searches
inside the completions (a word in few rows, a word in every row, a field term, a score range: each
first as the first search on a fresh server, which builds the arrays and field spans later searches
keep, then again after 100 appended chains, which add only those), and
on an evolve-shaped run (--evolve-problems x --iterations x m children) one problem's lineage and one
node with its diff. Every figure is printed as a ratio to the baseline measured in the same process:
``json.loads`` of every line of the file, i.e. reading it once.

    python bench/view_scale.py [--problems 100] [--chains 250] [--m 4] [--text-chars 400]
                               [--evolve-problems 32] [--iterations 200]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vpo_harness.harness.core.store import RunStore  # noqa: E402
from vpo_harness.reports.view import make_server  # noqa: E402

MOVES = ("UP", "DOWN", "LEFT", "RIGHT")


def write_run(folder: Path, problems: int, chains: int, m: int, text_chars: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    store = RunStore(folder, flush_every=512)
    ids = [f"p{i:05d}" for i in range(problems)]
    store.init({"format": 2, "identity": {"task": {"name": "maze", "split": "test", "options": {}},
                                          "model": {"spec": "openai:bench"}, "sampling": {"n": chains, "m": m},
                                          "components": ["completion", "gold", "diamond", "avoid_lava"],
                                          "problems": {"n": problems, "ids": ids}},
                "ks": [1, 4, 16, 64]})
    for pid in ids:
        for c in range(chains):
            store.append(_row(rng, pid, c, m, text_chars))
    store.close()
    return problems * chains * m


def _row(rng: random.Random, pid: str, c: int, m: int, text_chars: int) -> dict:
    answers = [" ".join(rng.choice(MOVES) for _ in range(text_chars // (6 * m) + 1)) for _ in range(m)]
    rewards = [[float(rng.random() < 0.8), rng.random(), rng.random(), float(rng.random() < 0.9)] for _ in range(m)]
    return {"problem_id": pid, "chain_index": c, "seed": c, "text": "\n".join(f"<route_{j + 1}>{a}</route_{j + 1}>"
                                                                         for j, a in enumerate(answers)),
            "answers": answers, "rewards": rewards, "scalars": [sum(r) / 4 for r in rewards],
            "passed": [all(x == 1.0 for x in r) for r in rewards], "error": None, "completion_tokens": text_chars // 4,
            "finish_reason": "stop", "n_unique": m}


def write_evolve(folder: Path, problems: int, iterations: int, m: int, seed: int = 0) -> int:
    """An evolve-shaped run: per problem, iterations x m children of parents drawn from the programs so far."""
    rng = random.Random(seed)
    store = RunStore(folder, flush_every=512)
    ids = [f"e{i:03d}" for i in range(problems)]
    store.init({"format": 2, "kind": "evolve", "identity": {
        "task": {"name": "maze", "split": "test", "options": {}}, "model": {"spec": "openai:bench"}, "kind": "evolve",
        "sampling": {"n": iterations + 1, "m": m}, "components": ["completion", "gold"],
        "problems": {"n": problems, "ids": ids}}})
    for pid in ids:
        progs: list[tuple[str, float]] = []
        for it in range(iterations + 1):
            parent = rng.choice(progs) if progs else None
            for j in range(m):
                s = min(1.0, max(0.0, (parent[1] if parent else 0.1) + rng.uniform(-0.08, 0.1)))
                prog = f"{pid}-{it}-{j}"
                store.append({"problem_id": pid, "chain_index": it * m + j, "iteration": it, "answer_index": j, "of": m,
                              "island": it % 4, "parent_id": parent[0] if parent else None, "program_id": prog,
                              "text": "", "answers": [" ".join(rng.choice(MOVES) for _ in range(12))],
                              "rewards": [[1.0, s]], "scalars": [s], "passed": [s >= 0.99], "error": None})
                progs.append((prog, s))
    store.close()
    return problems * (iterations + 1) * m


def read_once(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            json.loads(line)
    return time.perf_counter() - t0


def timed_get(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:
        body = r.read()
        assert r.status == 200, (url, r.status)
    return time.perf_counter() - t0, len(body)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=100)
    ap.add_argument("--chains", type=int, default=250)
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--text-chars", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3, help="repeats of each cached request; the best is kept")
    ap.add_argument("--evolve-problems", type=int, default=32)
    ap.add_argument("--iterations", type=int, default=200)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        folder = root / "big"
        t0 = time.perf_counter()
        n = write_run(folder, args.problems, args.chains, args.m, args.text_chars)
        size = (folder / "samples.jsonl").stat().st_size
        print(f"run: {args.problems} problems x {args.chains} chains x m={args.m} = {n} candidates, "
              f"{size / 1e6:.1f} MB samples.jsonl (written in {time.perf_counter() - t0:.1f} s)")
        base = min(read_once(folder / "samples.jsonl") for _ in range(args.rounds))
        print(f"baseline: json.loads of every line (reading the file once): {base * 1000:.0f} ms")

        rid = quote(str(folder), safe="")
        searches = [("a word in few rows (full text)", "LEFTUP"), ("a word in every row (full text)", "right"),
                    ("answer:DOWN score>0.9 (field and range)", "answer:DOWN score>0.9"),
                    ("gold>0.99 is:failed (index only)", "gold>0.99 is:failed")]
        first: list[tuple[float, int]] = []
        first_search: dict[str, list[tuple[float, int]]] = {q: [] for _, q in searches}
        for _ in range(args.rounds):  # a fresh server each round: the index is built anew
            for i, (_, q) in enumerate(searches):
                fresh = make_server([root], port=0)
                fresh.start_background()
                got = timed_get(fresh.url + f"api/run?id={rid}")
                if i == 0:
                    first.append(got)
                # the first search of the run builds the arrays and field spans later searches keep
                first_search[q].append(timed_get(fresh.url + f"api/search?run={rid}&q={quote(q, safe='')}"))
                fresh.shutdown()
                fresh.server_close()
        srv = make_server([root], port=0)
        srv.start_background()
        pid = "p00000"
        last = (args.chains * args.m - 1) // 50
        try:
            rows = []

            def measure(label: str, url: str, rounds: int) -> None:
                best, nbytes = min(timed_get(srv.url + url) for _ in range(rounds))
                rows.append((label, best, nbytes))

            rows.append(("run page, first request (builds the index)", *min(first)))
            timed_get(srv.url + f"api/run?id={rid}")  # this server's index
            measure("run page again (cached)", f"api/run?id={rid}", args.rounds)
            measure("problem: first page of 50 candidates", f"api/problem?run={rid}&pid={pid}", args.rounds)
            measure("problem: last page", f"api/problem?run={rid}&pid={pid}&page={last}", args.rounds)
            measure("problem: best score first", f"api/problem?run={rid}&pid={pid}&sort=score", args.rounds)
            measure("index of runs", "api/runs", args.rounds)
            store = RunStore(folder)
            rng = random.Random(1)
            for c in range(args.chains, args.chains + 100):  # a run still writing: 100 more chains
                store.append(_row(rng, pid, c, args.m, args.text_chars))
            store.close()
            measure("run page after 100 more chains (reads the new bytes)", f"api/run?id={rid}", 1)
            for label, q in searches:
                rows.append((f"search, the first of the run: {label}", *min(first_search[q])))
            for label, q in searches:
                measure(f"search: {label}", f"api/search?run={rid}&q={quote(q, safe='')}", args.rounds)
            ev = root / "evolve"
            t0 = time.perf_counter()
            n_ev = write_evolve(ev, args.evolve_problems, args.iterations, args.m)
            print(f"evolve run: {args.evolve_problems} problems x {args.iterations} iterations x m={args.m} = {n_ev} "
                  f"programs, {(ev / 'samples.jsonl').stat().st_size / 1e6:.1f} MB (written in {time.perf_counter() - t0:.1f} s)")
            eid = quote(str(ev), safe="")
            timed_get(srv.url + f"api/run?id={eid}")  # its index
            measure(f"lineage of one problem ({(args.iterations + 1) * args.m} programs)",
                    f"api/lineage?run={eid}&pid=e000", args.rounds)
            node = quote(f"e000-{args.iterations}-0", safe="")
            measure("one lineage node with its diff", f"api/node?run={eid}&pid=e000&id={node}", args.rounds)
        finally:
            srv.shutdown()
            srv.server_close()
        w = max(len(r[0]) for r in rows)
        print(f"{'request':<{w}}  {'ms':>8}  {'KB':>7}  ratio to reading the file once")
        for label, t, nbytes in rows:
            print(f"{label:<{w}}  {t * 1000:8.1f}  {nbytes / 1e3:7.1f}  {t / base:.3f}")


if __name__ == "__main__":
    main()
